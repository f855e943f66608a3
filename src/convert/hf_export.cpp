#include "convert/hf_export.h"

#include <filesystem>
#include <span>
#include <system_error>

#include "convert/hf_config.h"
#include "convert/safetensors_writer.h"
#include "core/error.h"
#include "tokenizer/builtin_vocab.h"

namespace fulgur {
namespace {

namespace fs = std::filesystem;

SafetensorsDType safetensors_type(DType stored) {
  switch (stored) {
    case DType::kF32: return SafetensorsDType::kF32;
    case DType::kF16: return SafetensorsDType::kF16;
    case DType::kBF16: return SafetensorsDType::kBF16;
    default:
      fail("write_hf_checkpoint: stored type ", dtype_name(stored),
           " is not supported (expected F32, F16 or BF16)");
  }
}

void write_text(const fs::path& path, const std::string& text) {
  write_file_atomic(path.string(),
                    std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

}  // namespace

void write_hf_checkpoint(const std::string& dir, const nlohmann::json& config,
                         const std::vector<HfTensor>& tensors, const Vocab& vocab,
                         const std::string& chat_template, DType stored) {
  const SafetensorsDType st = safetensors_type(stored);
  FULGUR_CHECK(config.is_object(), "write_hf_checkpoint: config is not a JSON object");
  SafetensorsWriter writer;
  for (const HfTensor& t : tensors) {
    int64_t n = 1;
    for (int64_t d : t.shape) {
      FULGUR_CHECK(d > 0, "write_hf_checkpoint: tensor '", t.name, "' has a dimension ", d);
      n *= d;
    }
    FULGUR_CHECK(static_cast<int64_t>(t.data.size()) == n, "write_hf_checkpoint: tensor '", t.name,
                 "' has ", t.data.size(), " values but its shape holds ", n);
    writer.add_f32(t.name, t.shape, t.data, st);
  }
  // Render the tokenizer files before touching the disk, so a bad vocab writes nothing.
  const std::string tokenizer_json = vocab_to_hf_json(vocab);
  const std::string tokenizer_config = vocab_to_hf_tokenizer_config_json(vocab, chat_template);

  std::error_code ec;
  fs::create_directories(dir, ec);
  FULGUR_CHECK(!ec && fs::is_directory(dir), "write_hf_checkpoint: cannot create directory '", dir,
               "': ", ec.message());
  const fs::path root(dir);
  write_json_file((root / "config.json").string(), config);
  writer.write((root / "model.safetensors").string());
  write_text(root / "tokenizer.json", tokenizer_json);
  write_text(root / "tokenizer_config.json", tokenizer_config);

  nlohmann::json gen = nlohmann::json::object();
  for (auto [key, id] : {std::pair{"bos_token_id", vocab.bos_id},
                         std::pair{"eos_token_id", vocab.eos_id}}) {
    if (config.contains(key) && !config[key].is_null()) {
      gen[key] = config[key];
    } else if (id >= 0) {
      gen[key] = id;
    }
  }
  gen["do_sample"] = false;
  write_json_file((root / "generation_config.json").string(), gen);
}

}  // namespace fulgur
