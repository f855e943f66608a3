// The tokenizer.ggml.model values fulgur reads, and the llama.cpp defaults that hang on them.
#pragma once

#include <string_view>

#include "tokenizer/vocab.h"

namespace fulgur {

enum class VocabModel {
  kGpt2,    // "gpt2": byte-level BPE (llama.cpp LLAMA_VOCAB_TYPE_BPE)
  kLlama,   // "llama": SentencePiece (LLAMA_VOCAB_TYPE_SPM)
  kGemma4,  // "gemma4": BPE over U+2581-escaped UTF-8 with <0xXX> byte fallback (llama.cpp reads
            // it as LLAMA_VOCAB_TYPE_BPE with the gemma4 pre-tokenizer)
};

// Throws fulgur::Error naming `where` and the supported names for anything else.
VocabModel parse_vocab_model(std::string_view name, std::string_view where);

// Whether `v` encodes a space prefix, with llama.cpp's default when the key is absent: only
// SentencePiece ("llama") vocabularies use it, and they default to true.
bool effective_add_space_prefix(const Vocab& v);

}  // namespace fulgur
