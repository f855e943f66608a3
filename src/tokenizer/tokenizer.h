// The tokenizer of a Vocab, one of llama.cpp's three kinds (tokenizer/vocab_model.h).
//
// encode: split out special/added tokens, then each text fragment by the vocabulary's model:
//   gpt2:   normalize (if the vocab asks) -> regex pre-tokenize -> map bytes to their GPT-2
//           stand-in characters -> merge pairs lowest rank first;
//   llama:  a space before the fragment (if add_space_prefix: every fragment starts the text or
//           follows a special token, where llama.cpp adds it) -> spaces as U+2581 -> UTF-8
//           characters merged while a pair forms a token, highest token score first -> <0xXX>
//           tokens for what is left uncovered;
//   gemma4: spaces as U+2581 -> runs of newlines apart from the rest -> UTF-8 characters merged
//           lowest rank first -> <0xXX> tokens for what is left uncovered.
// decode: token pieces concatenated as raw bytes (U+2581 back to spaces, <0xXX> to its byte).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/symbol_merge.h"
#include "tokenizer/token_index.h"
#include "tokenizer/vocab.h"
#include "tokenizer/vocab_model.h"

namespace fulgur {

class Tokenizer {
 public:
  // Validates the vocab (model name, sizes, ids, merges, scores for "llama", the 256 byte tokens
  // or <0xXX> byte-fallback tokens) and throws fulgur::Error naming the offending field.
  explicit Tokenizer(Vocab vocab);

  // parse_special: CONTROL (and UNKNOWN) token texts in `text` become their ids; otherwise they
  // are ordinary text. USER_DEFINED tokens are always recognised (as llama.cpp and Hugging Face
  // do). Matching is leftmost, longest first at a position. add_special: prepend BOS / append EOS
  // when the vocab's add_bos / add_eos say so. Any bytes are accepted, invalid UTF-8 included.
  std::vector<int32_t> encode(std::string_view text, bool parse_special,
                              bool add_special = false) const;

  // The raw bytes of the ids' pieces, concatenated (may be invalid UTF-8 if a multi-byte
  // character is cut off). CONTROL tokens are rendered only with render_special. As llama.cpp's
  // llama_detokenize, a vocabulary that adds a space prefix loses one leading space of the first
  // id's piece (the space encode() put there), and a gemma4 text has the spaces before
  // punctuation and contractions cleaned up (tokenizer/clean_spaces.h); token_piece() keeps both.
  std::string decode(const std::vector<int32_t>& ids, bool render_special = true) const;

  // Bytes this token contributes to decoded text (empty for hidden control / unused tokens).
  const std::string& token_piece(int32_t id, bool render_special) const;
  // The stored token text (GGUF form: byte-level stand-in characters for normal tokens).
  const std::string& token_text(int32_t id) const;
  // As llama.cpp reads it: the end-of-generation texts (<eos>, </s>, <end_of_turn>, ...) are
  // CONTROL whatever the file says.
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
  void build_byte_tokens();
  // gpt2 and gemma4: the pair's merge rule, lowest rank merging first.
  std::optional<PairMerge> rank_merge(const MergeSymbol& left, const MergeSymbol& right) const;
  void build_pieces();
  void apply_harmony_rules();  // o200k_harmony's <|end|> and header tokens (tokenizer.cpp)
  void build_specials();
  // One non-empty fragment of text between special tokens.
  void encode_fragment(std::string_view text, std::vector<int32_t>& out) const;
  void encode_byte_level(std::string_view text, std::vector<int32_t>& out) const;        // gpt2
  void encode_byte_level_word(std::string_view word, std::vector<int32_t>& out) const;   // gpt2
  void encode_sentencepiece(std::string_view text, std::vector<int32_t>& out) const;      // llama
  void encode_gemma4(std::string_view text, std::vector<int32_t>& out) const;            // gemma4
  // llama and gemma4: `word`'s UTF-8 characters as the merger's symbols (llama.cpp's split:
  // a lead byte's length, cut at the end, whatever the bytes after it).
  void start_char_symbols(std::string_view word) const;
  // llama and gemma4: each symbol's token, or the <0xXX> tokens of its bytes.
  void emit_with_byte_fallback(std::string_view word, std::vector<int32_t>& out) const;

  Vocab vocab_;
  VocabModel model_ = VocabModel::kGpt2;
  bool add_space_prefix_ = false;
  std::unique_ptr<PreTokenizer> pre_;  // gpt2 only
  TokenIndex text_to_id_;  // all texts (of vocab_.tokens)
  std::unordered_map<uint64_t, Merge> merges_;  // key: left id << 32 | right id (gpt2, gemma4)
  // [256] gpt2: the id of each byte's 1-char token; llama, gemma4: its byte-fallback token
  std::array<int32_t, 256> byte_token_{};
  std::vector<std::string> pieces_;             // [n_vocab] decoded bytes per token
  std::vector<SpecialToken> specials_;          // longest text first
  std::array<bool, 256> special_first_byte_{};  // [256] can a special start here
  std::vector<int32_t> eog_ids_;
};

}  // namespace fulgur
