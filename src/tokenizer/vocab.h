// The tokenizer's data, exactly what a GGUF file stores under tokenizer.* (archs-gguf.md §2.5,
// §5.1), plus the two facts GGUF cannot carry but Hugging Face's tokenizer.json does
// (ignore_merges, normalizer). A Tokenizer is built from this; the converter writes it out.
//
// tokenizer.ggml.model says how text becomes tokens (tokenizer/vocab_model.h):
//   "gpt2"   byte-level BPE (Qwen, Llama 3): token texts in bytes_to_unicode form, merges by rank;
//   "llama"  SentencePiece (Llama 2, Mistral 7B, Gemma 3): spaces written U+2581, pairs merged by
//            the score of the token they form, <0xXX> tokens for bytes no token covers;
//   "gemma4" SentencePiece-style BPE: U+2581 for spaces and <0xXX> byte tokens as "llama", but
//            merges by rank like "gpt2" over raw UTF-8.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fulgur {

// Values are the ggml token-type ids written to tokenizer.ggml.token_type.
enum class TokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,      // special token: matched in text only with parse_special, hidden on decode
  kUserDefined = 4,  // added token: always matched in text, always rendered
  kUnused = 5,
  kByte = 6,  // SentencePiece byte token "<0xXX>"
};

// Text normalization applied to each text fragment before pre-tokenization. llama.cpp applies
// none; Hugging Face's Qwen2/Qwen3 tokenizer.json declares NFC.
enum class Normalizer { kNone, kNfc };

struct Vocab {
  std::string model = "gpt2";          // tokenizer.ggml.model: gpt2 | llama | gemma4
  std::string pre = "qwen2";           // tokenizer.ggml.pre; selects gpt2's pre-tokenizer regexes
  std::vector<std::string> tokens;     // [n_vocab] token text (gpt2: bytes_to_unicode form)
  std::vector<TokenType> token_types;  // [n_vocab]; empty means all kNormal
  std::vector<float> scores;           // [n_vocab] tokenizer.ggml.scores; "llama" merges by them
  std::vector<std::string> merges;     // [n_merges] "left right", rank = index (gpt2, gemma4)
  int32_t bos_id = -1;                 // -1: absent
  int32_t eos_id = -1;
  int32_t eot_id = -1;
  int32_t pad_id = -1;
  int32_t unk_id = -1;
  int32_t mask_id = -1;
  bool add_bos = false;
  bool add_eos = false;
  // tokenizer.ggml.add_space_prefix; absent: llama.cpp's default for the model (true for "llama",
  // which then encodes the text after a special token, or at the start, as if it began with a
  // space; unused by gpt2 and gemma4).
  std::optional<bool> add_space_prefix;
  // When set, a pre-token that is itself a vocabulary entry is emitted without running merges
  // (Llama 3 style). GGUF does not store it; see default_ignore_merges() in pre_tokenizer.h.
  bool ignore_merges = false;
  Normalizer normalizer = Normalizer::kNone;
};

}  // namespace fulgur
