// The target model a draft is converted for (`fulgur convert DRAFT --target T`, like llama.cpp's
// --target-model-dir): a GGUF file or a Hugging Face folder. Its vocabulary is written into the
// draft so the file stands alone (llama.cpp refuses a GGUF without tokenizer.ggml.*, and fulgur
// checks a draft model's vocabulary against its target's), and its shape is checked against the
// draft's config before anything is written.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "convert/draft_config.h"
#include "convert/hf_vocab.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"

namespace fulgur {

class DraftTarget {
 public:
  // Reads `path` (a .gguf file or a folder with config.json and tokenizer files). Throws
  // fulgur::Error naming the path when it is neither, is itself a draft, or has no vocabulary.
  explicit DraftTarget(const std::string& path);

  int64_t n_vocab() const { return n_vocab_; }  // embedding rows
  int64_t n_embd() const { return n_embd_; }
  int64_t n_layer() const { return n_layer_; }

  // Throws fulgur::Error naming both sides when the draft does not fit this target (vocabulary,
  // hidden width, tapped layers).
  void check(const DraftSpec& spec) const;

  // Writes the target's tokenizer keys into the draft: a GGUF target's tokenizer.* values as they
  // are, an HF target's vocabulary as the target converter writes it. The draft's own mask token
  // (tokenizer.ggml.mask_token_id) is kept: it is what the draft was trained with; mask_token < 0
  // (a draft without one, EAGLE-3): the target's own, if any.
  void write_vocab_into(GgufWriter& w, int64_t mask_token) const;

 private:
  std::string where_;
  int64_t n_vocab_ = 0, n_embd_ = 0, n_layer_ = 0;
  std::optional<GgufReader> gguf_;  // GGUF target
  std::optional<LoadedVocab> hf_;   // HF target
};

}  // namespace fulgur
