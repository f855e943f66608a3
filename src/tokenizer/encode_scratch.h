// Buffers one encode() call reuses across its fragments and words, one set per thread, so the
// token loop allocates only when a text is longer than any before it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/symbol_merge.h"

namespace fulgur {

struct EncodeScratch {
  SymbolMerger merger;
  std::vector<std::string_view> pieces, pieces_tmp;  // gpt2 pre-tokens
  std::string normalized;  // gpt2: the NFC text
  std::string mapped;      // gpt2: a pre-token in bytes_to_unicode form
  std::string escaped;     // llama, gemma4: the fragment with U+2581 for spaces
  std::string recoded;     // gemma4: the fragment's UTF-8 as llama.cpp re-encodes it
};

inline EncodeScratch& encode_scratch() {
  thread_local EncodeScratch s;
  return s;
}

}  // namespace fulgur
