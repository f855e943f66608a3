#include "tokenizer/vocab_model.h"

#include "core/error.h"

namespace fulgur {

VocabModel parse_vocab_model(std::string_view name, std::string_view where) {
  if (name == "gpt2") return VocabModel::kGpt2;
  if (name == "llama") return VocabModel::kLlama;
  if (name == "gemma4") return VocabModel::kGemma4;
  fail(where, ": tokenizer model '", name,
       "' is not supported; fulgur reads 'gpt2' (byte-level BPE), 'llama' (SentencePiece) and "
       "'gemma4' (SentencePiece-style BPE)");
}

bool effective_add_space_prefix(const Vocab& v) {
  if (v.model != "llama") return false;  // llama.cpp's BPE path never prepends a space
  return v.add_space_prefix.value_or(true);
}

}  // namespace fulgur
