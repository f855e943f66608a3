#include "convert/convert_model.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "convert/convert_plan.h"
#include "convert/dense_arch.h"
#include "convert/draft_config.h"
#include "convert/draft_convert.h"
#include "convert/hf_config.h"
#include "convert/quant_policy.h"
#include "convert/safetensors.h"
#include "core/error.h"
#include "gguf/gguf_writer.h"
#include "tensor/quants.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/hf_tokenizer.h"

namespace fulgur {
namespace {

namespace fs = std::filesystem;

using PlanFn = ArchPlan (*)(const HfConfig& cfg, bool has_lm_head, GgufWriter& w);

struct ArchEntry {
  const char* hf_arch;     // config.json architectures[0]
  const char* model_type;  // config.json model_type (used when architectures is absent)
  const char* gguf_arch;   // general.architecture
  PlanFn plan;
};

ArchPlan plan_qwen3(const HfConfig& c, bool lm, GgufWriter& w) {
  return plan_dense_decoder(DenseArch::kQwen3, c, lm, w);
}
ArchPlan plan_qwen2(const HfConfig& c, bool lm, GgufWriter& w) {
  return plan_dense_decoder(DenseArch::kQwen2, c, lm, w);
}
ArchPlan plan_llama(const HfConfig& c, bool lm, GgufWriter& w) {
  return plan_dense_decoder(DenseArch::kLlama, c, lm, w);
}

// The dispatch point. Draft-model formats (DFlashDraftModel, DFlash2DraftModel,
// Qwen3DSparkModel, EAGLE-3) get an entry here with their own planner; they carry no tokenizer
// and will borrow the target model's vocabulary (an extra ConvertOptions field).
constexpr ArchEntry kArchs[] = {
    {"Qwen3ForCausalLM", "qwen3", "qwen3", plan_qwen3},
    {"Qwen2ForCausalLM", "qwen2", "qwen2", plan_qwen2},
    {"LlamaForCausalLM", "llama", "llama", plan_llama},
};

const ArchEntry& detect_arch(const HfConfig& cfg) {
  if (cfg.has("architectures")) {
    const std::vector<std::string> names = cfg.get_string_array("architectures");
    FULGUR_CHECK(!names.empty(), cfg.source(), ": field 'architectures' is empty");
    for (const ArchEntry& e : kArchs) {
      if (names[0] == e.hf_arch) return e;
    }
    fail(cfg.source(), ": unsupported architecture '", names[0],
         "' (supported: ", supported_hf_architectures(), ")");
  }
  FULGUR_CHECK(cfg.has("model_type"), cfg.source(),
               ": has neither 'architectures' nor 'model_type'; cannot tell the architecture");
  const std::string type = cfg.get_string("model_type");
  for (const ArchEntry& e : kArchs) {
    if (type == e.model_type) return e;
  }
  fail(cfg.source(), ": unsupported model_type '", type,
       "' (supported architectures: ", supported_hf_architectures(), ")");
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += cat(i ? ", " : "", s[i]);
  return out + "]";
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  FULGUR_CHECK(in.good(), "cannot open '", path.string(), "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct LoadedVocab {
  Vocab vocab;
  std::string chat_template;
  std::map<std::string, std::string> named_templates;
};

// tokenizer.json + tokenizer_config.json (+ chat_template.jinja, which newer transformers write
// instead of the config field), special ids missing there taken from config.json like
// llama.cpp's SpecialVocab, and the vocab padded to the embedding rows.
LoadedVocab load_vocab(const fs::path& dir, const HfConfig& cfg, int64_t n_vocab) {
  const fs::path tok = dir / "tokenizer.json";
  FULGUR_CHECK(fs::exists(tok), dir.string(),
               ": no tokenizer.json (fulgur converts byte-level BPE tokenizers from it)");
  LoadedVocab out;
  out.vocab = load_hf_tokenizer(tok.string());
  const fs::path tok_cfg = dir / "tokenizer_config.json";
  if (fs::exists(tok_cfg)) {
    const HfTokenizerConfig tc = load_hf_tokenizer_config(tok_cfg.string());
    apply_hf_config(out.vocab, tc);
    out.chat_template = tc.chat_template;
    out.named_templates = tc.named_chat_templates;
  }
  const fs::path jinja = dir / "chat_template.jinja";
  if (out.chat_template.empty() && fs::exists(jinja)) out.chat_template = read_text(jinja);

  FULGUR_CHECK(static_cast<int64_t>(out.vocab.tokens.size()) <= n_vocab, tok.string(), ": has ",
               out.vocab.tokens.size(), " tokens but the embedding has only ", n_vocab,
               " rows (", cfg.source(), " vocab_size)");
  pad_vocab(out.vocab, static_cast<size_t>(n_vocab));
  for (auto [key, field] : {std::pair{"bos_token_id", &Vocab::bos_id},
                            std::pair{"eos_token_id", &Vocab::eos_id},
                            std::pair{"pad_token_id", &Vocab::pad_id}}) {
    if (out.vocab.*field >= 0 || !cfg.has(key)) continue;
    const std::vector<int64_t> ids = cfg.get_int_or_int_array(key);
    if (!ids.empty() && ids[0] >= 0 && ids[0] < n_vocab) {
      out.vocab.*field = static_cast<int32_t>(ids[0]);
    }
  }
  return out;
}

// Validates one planned tensor against the checkpoint; returns the source tensor.
const SafetensorsTensor& check_tensor(const Checkpoint& ckpt, const TensorPlan& tp,
                                      const ArchPlan& plan, const std::string& in_dir) {
  const SafetensorsTensor* t = ckpt.find(tp.hf_name);
  FULGUR_CHECK(t != nullptr, in_dir, ": missing tensor '", tp.hf_name, "' (needed for ",
               tp.gguf_name, " by ", plan.what, ")");
  FULGUR_CHECK(t->shape == tp.hf_shape, t->file, ": tensor '", tp.hf_name, "' has shape ",
               shape_str(t->shape), " but ", plan.what, " implies ", shape_str(tp.hf_shape));
  const SafetensorsDType dt = t->dtype;
  FULGUR_CHECK(dt == SafetensorsDType::kF32 || dt == SafetensorsDType::kF16 ||
                   dt == SafetensorsDType::kBF16 || dt == SafetensorsDType::kF64,
               t->file, ": tensor '", tp.hf_name, "' has dtype ", safetensors_dtype_name(dt),
               "; expected F32, F16, BF16 or F64");
  if (tp.permute_heads > 0) {
    const int64_t rows = tp.hf_shape[0];
    FULGUR_CHECK(rows % tp.permute_heads == 0 && (rows / tp.permute_heads) % 2 == 0, t->file,
                 ": tensor '", tp.hf_name, "' has ", rows, " rows, not ", tp.permute_heads,
                 " heads of an even head size (needed for the RoPE row permutation)");
  }
  return *t;
}

// Source row of output row r when HF's rotate-half layout [head][half][i] becomes ggml's
// interleaved layout [head][i][half] (the permutation llama.cpp applies to llama q/k).
int64_t permuted_row(int64_t r, int64_t rows, int64_t heads) {
  const int64_t head_dim = rows / heads, half = head_dim / 2;
  const int64_t h = r / head_dim, w = r % head_dim;
  return h * head_dim + (w % 2) * half + w / 2;
}

struct Progress {
  bool on = false;
  size_t n_tensors = 0;
  size_t done = 0;
  uint64_t bytes = 0;
  uint64_t total = 0;

  void tensor_done(uint64_t nbytes) {
    ++done;
    bytes += nbytes;
    if (!on) return;
    constexpr int kWidth = 30;
    const int filled = total ? static_cast<int>(kWidth * bytes / total) : kWidth;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::fprintf(stderr, "\rconvert: [%s] %zu/%zu tensors, %.1f/%.1f MB", bar.c_str(), done,
                 n_tensors, bytes / 1e6, total / 1e6);
    if (done == n_tensors) std::fputc('\n', stderr);
    std::fflush(stderr);
  }
};

// Converts one tensor row by row: source dtype -> f32 -> (permute) -> target type, emitted in
// chunks of about 1 MiB, so memory stays bounded by a row plus a chunk whatever the tensor size.
GgufTensorSource make_source(const SafetensorsTensor& t, const TensorPlan& tp, DType type,
                             uint64_t nbytes, Progress& progress) {
  return [&t, &tp, type, nbytes, &progress](const GgufEmit& emit) {
    const int64_t ne0 = tp.hf_shape.back();
    const int64_t rows = t.n_elements() / ne0;
    const size_t elem = static_cast<size_t>(safetensors_dtype_bits(t.dtype) / 8);
    const size_t out_row = row_bytes(type, ne0);
    constexpr size_t kChunk = size_t{1} << 20;
    std::vector<float> row(static_cast<size_t>(ne0));                 // [ne0] f32
    std::vector<uint8_t> chunk(std::max(kChunk, out_row));            // [~1 MiB] output bytes
    size_t used = 0;
    const std::string what = cat(t.file, ": tensor '", tp.hf_name, "'");
    if (tp.hf_shape.size() == 1 && tp.permute_heads > 0) {  // a bias: permute its elements
      std::vector<float> src(static_cast<size_t>(ne0));      // [ne0] f32 source order
      safetensors_to_f32(t.dtype, t.data, src.size(), src.data(), what);
      for (int64_t i = 0; i < ne0; ++i) row[i] = src[permuted_row(i, ne0, tp.permute_heads)];
      quantize_row(type, row.data(), chunk.data(), ne0);
      emit(chunk.data(), out_row);
    } else {
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t src_row = tp.permute_heads > 0 ? permuted_row(r, rows, tp.permute_heads) : r;
        safetensors_to_f32(t.dtype, t.data + static_cast<size_t>(src_row) * ne0 * elem,
                           static_cast<size_t>(ne0), row.data(), what);
        if (used + out_row > chunk.size()) {
          emit(chunk.data(), used);
          used = 0;
        }
        quantize_row(type, row.data(), chunk.data() + used, ne0);
        used += out_row;
      }
      if (used > 0) emit(chunk.data(), used);
    }
    progress.tensor_done(nbytes);
  };
}

std::string model_name(const std::string& in_dir) {
  fs::path p = fs::path(in_dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

}  // namespace

std::string supported_hf_architectures() {
  std::string out;
  for (const ArchEntry& e : kArchs) out += cat(out.empty() ? "" : ", ", e.hf_arch);
  return out + ", " + supported_draft_architectures();
}

void convert_hf_to_gguf(const ConvertOptions& options) {
  FULGUR_CHECK(is_convert_type(options.type), "convert: output type ", dtype_name(options.type),
               " is not supported (use f32, f16, bf16, q8_0, q4_0, q4_k or q6_k)");
  FULGUR_CHECK(!options.out_path.empty(), "convert: no output path given");
  const fs::path dir(options.in_dir);
  FULGUR_CHECK(fs::is_directory(dir), "convert: '", options.in_dir, "' is not a directory");
  const HfConfig cfg = HfConfig::load(options.in_dir);
  if (is_draft_config(cfg)) return convert_draft_to_gguf(options, cfg);  // convert/draft_*
  const ArchEntry& arch = detect_arch(cfg);
  const Checkpoint ckpt(options.in_dir);

  GgufWriter w;
  w.set_string("general.architecture", arch.gguf_arch);
  w.set_string("general.name", model_name(options.in_dir));
  w.set_u32("general.file_type", gguf_file_type(options.type));
  w.set_u32("general.quantization_version", 2);
  const ArchPlan plan = arch.plan(cfg, ckpt.has("lm_head.weight"), w);

  // Every planned tensor must be there with the right shape, and nothing else may be.
  std::vector<const SafetensorsTensor*> sources;  // [n_tensors] parallel to plan.tensors
  std::set<std::string> used;
  for (const TensorPlan& tp : plan.tensors) {
    sources.push_back(&check_tensor(ckpt, tp, plan, options.in_dir));
    used.insert(tp.hf_name);
  }
  for (const std::string& name : ckpt.names()) {
    if (used.count(name) || plan.ignored.count(name)) continue;
    // Rotary tables some old checkpoints store; they are recomputed from rope_theta.
    if (name.ends_with(".rotary_emb.inv_freq")) continue;
    fail(options.in_dir, ": unexpected tensor '", name, "' for ", arch.hf_arch, " (", plan.what,
         ")");
  }

  const LoadedVocab lv = load_vocab(dir, cfg, plan.n_vocab);
  write_vocab(w, lv.vocab, lv.chat_template);
  for (const auto& [name, text] : lv.named_templates) {
    w.set_string("tokenizer.chat_template." + name, text);
  }

  Progress progress;
  progress.on = options.progress;
  progress.n_tensors = plan.tensors.size();
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorPlan& tp = plan.tensors[i];
    const std::vector<int64_t> shape = ggml_shape_of(tp.hf_shape);
    const DType type = choose_tensor_type(options.type, tp.role, shape);
    const uint64_t nbytes = GgufWriter::tensor_nbytes(type, shape);
    progress.total += nbytes;
    w.add_tensor_streamed(tp.gguf_name, type, shape,
                          make_source(*sources[i], tp, type, nbytes, progress));
  }
  try {
    w.write(options.out_path);
  } catch (...) {
    if (progress.on && progress.done < progress.n_tensors) std::fputc('\n', stderr);
    throw;
  }
}

}  // namespace fulgur
