#include "convert/draft_target.h"

#include <filesystem>

#include "convert/hf_config.h"
#include "core/error.h"
#include "tokenizer/gguf_vocab.h"

namespace fulgur {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMaskKey = "tokenizer.ggml.mask_token_id";

}  // namespace

DraftTarget::DraftTarget(const std::string& path) : where_(path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    const HfConfig cfg = HfConfig::load(path);
    FULGUR_CHECK(!is_draft_config(cfg), "--target ", path, ": ", cfg.source(),
                 " describes a draft, not a target model");
    n_vocab_ = cfg.get_int("vocab_size");
    n_embd_ = cfg.get_int("hidden_size");
    n_layer_ = cfg.get_int("num_hidden_layers");
    FULGUR_CHECK(n_vocab_ > 0 && n_embd_ > 0 && n_layer_ > 0, cfg.source(), ": vocab_size ",
                 n_vocab_, ", hidden_size ", n_embd_, " and num_hidden_layers ", n_layer_,
                 " must be positive");
    hf_ = load_hf_vocab(path, cfg, n_vocab_);
    where_ = cfg.source();
    return;
  }
  FULGUR_CHECK(fs::is_regular_file(path, ec), "--target '", path,
               "' is neither a GGUF file nor a Hugging Face model folder");
  gguf_.emplace(path);
  const GgufReader& r = *gguf_;
  const std::string arch = r.get_string("general.architecture");
  FULGUR_CHECK(arch != "dflash", "--target ", r.where(), " is a dflash draft, not a target model");
  (void)read_vocab(r);  // the same checks as loading the target: a usable tokenizer
  n_embd_ = r.get_i64(arch + ".embedding_length");
  n_layer_ = r.get_i64(arch + ".block_count");
  const GgufTensorInfo* embd = r.find_tensor("token_embd.weight");
  n_vocab_ = embd != nullptr && embd->n_dims == 2
                 ? embd->ne[1]
                 : static_cast<int64_t>(r.get_string_array("tokenizer.ggml.tokens").size());
  where_ = r.where();
}

void DraftTarget::check(const DraftSpec& s) const {
  const std::string who = cat("draft ", s.describe(), " and target ", where_);
  FULGUR_CHECK(s.n_vocab == n_vocab_, who, ": the draft's vocabulary has ", s.n_vocab,
               " tokens, the target's ", n_vocab_);
  FULGUR_CHECK(s.target_hidden == n_embd_, who, ": the draft taps rows of width ",
               s.target_hidden, ", the target's hidden size is ", n_embd_);
  for (int32_t t : s.target_layers) {
    FULGUR_CHECK(t <= n_layer_, who, ": the draft taps the input of layer ", t,
                 ", beyond the target's ", n_layer_, " layers");
  }
}

void DraftTarget::write_vocab_into(GgufWriter& w, int64_t mask_token) const {
  if (hf_) {
    LoadedVocab v = *hf_;
    if (mask_token >= 0) v.vocab.mask_id = static_cast<int32_t>(mask_token);
    write_loaded_vocab(w, v);
    return;
  }
  for (const GgufKv& kv : gguf_->metadata()) {
    if (kv.key.starts_with("tokenizer.") && (kv.key != kMaskKey || mask_token < 0)) w.set(kv.key, kv.value);
  }
  if (mask_token >= 0) w.set_u32(kMaskKey, static_cast<uint32_t>(mask_token));
}

}  // namespace fulgur
