// Byte-level BPE tokenizer (GPT-2 / Qwen / Llama 3 family), built from a Vocab.
//
// encode: split out special/added tokens -> normalize (if the vocab asks) -> regex pre-tokenize
// -> map bytes to their GPT-2 stand-in characters -> merge pairs lowest rank first.
// decode: token pieces concatenated as raw bytes.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/token_index.h"
#include "tokenizer/vocab.h"

namespace fulgur {

class Tokenizer {
 public:
  // Validates the vocab (sizes, ids, merges, the 256 byte tokens) and throws fulgur::Error
  // naming the offending field.
  explicit Tokenizer(Vocab vocab);

  // parse_special: CONTROL (and UNKNOWN) token texts in `text` become their ids; otherwise they
  // are ordinary text. USER_DEFINED tokens are always recognised (as llama.cpp and Hugging Face
  // do). Matching is leftmost, longest first at a position. add_special: prepend BOS / append EOS
  // when the vocab's add_bos / add_eos say so. Any bytes are accepted, invalid UTF-8 included.
  std::vector<int32_t> encode(std::string_view text, bool parse_special,
                              bool add_special = false) const;

  // The raw bytes of the ids' pieces, concatenated (may be invalid UTF-8 if a multi-byte
  // character is cut off). CONTROL tokens are rendered only with render_special.
  std::string decode(const std::vector<int32_t>& ids, bool render_special = true) const;

  // Bytes this token contributes to decoded text (empty for hidden control / unused tokens).
  const std::string& token_piece(int32_t id, bool render_special) const;
  // The stored token text (GGUF form: byte-level stand-in characters for normal tokens).
  const std::string& token_text(int32_t id) const;
  TokenType token_type(int32_t id) const;
  // -1 when no token has exactly this stored text.
  int32_t token_to_id(std::string_view text) const;
  int32_t n_tokens() const { return static_cast<int32_t>(vocab_.tokens.size()); }
  // End-of-generation: eos, eot, and the usual end markers (archs-gguf.md §5.1).
  bool is_eog(int32_t id) const;

  const Vocab& vocab() const { return vocab_; }

 private:
  struct Merge {
    int32_t rank;
    int32_t result;  // id of left+right
  };
  struct SpecialToken {
    std::string text;
    int32_t id;
    bool needs_parse_special;  // CONTROL / UNKNOWN
  };

  void check_id(int32_t id, const char* what) const;
  void build_merges();
  void build_specials();
  void encode_text(std::string_view text, std::vector<int32_t>& out) const;
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  Vocab vocab_;
  std::unique_ptr<PreTokenizer> pre_;
  TokenIndex text_to_id_;  // all texts (of vocab_.tokens)
  std::unordered_map<uint64_t, Merge> merges_;  // key: left id << 32 | right id
  std::array<int32_t, 256> byte_token_{};       // [256] id of each byte's 1-char token
  std::vector<std::string> pieces_;             // [n_vocab] decoded bytes per token
  std::vector<SpecialToken> specials_;          // longest text first
  std::array<bool, 256> special_first_byte_{};  // [256] can a special start here
  std::vector<int32_t> eog_ids_;
};

}  // namespace fulgur
