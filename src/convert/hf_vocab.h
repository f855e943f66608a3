// The vocabulary a converted GGUF carries, from a Hugging Face folder (tokenizer.json,
// tokenizer_config.json, chat_template.jinja, config.json's special ids), shared by the target
// converter and by draft conversion with an HF target folder.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "convert/hf_config.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/vocab.h"

namespace fulgur {

struct LoadedVocab {
  Vocab vocab;
  std::string chat_template;
  std::map<std::string, std::string> named_templates;  // tokenizer.chat_template.<name>
};

// tokenizer.json + tokenizer_config.json (+ chat_template.jinja, which newer transformers write
// instead of the config field), special ids missing there taken from config.json like
// llama.cpp's SpecialVocab, and the vocab padded to n_vocab embedding rows. A SentencePiece-style
// tokenizer.json (Llama 2, Mistral 7B, Gemma) is written as `spm_as` says (llama.cpp writes
// "llama" for those, "gemma4" for Gemma 4). Throws fulgur::Error naming the file when the
// tokenizer is missing, unsupported, or larger than n_vocab.
LoadedVocab load_hf_vocab(const std::filesystem::path& dir, const HfConfig& cfg, int64_t n_vocab,
                          SpmGgufModel spm_as = SpmGgufModel::kLlama);

// Writes the tokenizer.* keys (tokenizer/gguf_vocab.h) and the named chat templates.
void write_loaded_vocab(GgufWriter& w, const LoadedVocab& v);

}  // namespace fulgur
