// The lookup tables a Tokenizer builds at load: byte tokens and merge rules.
#include <string>

#include "core/error.h"
#include "tokenizer/sentencepiece_text.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace fulgur {
namespace {

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

std::string hex_byte(int b) { return byte_token_text(static_cast<uint8_t>(b)).substr(1, 4); }

}  // namespace

void Tokenizer::build_byte_tokens() {
  for (int b = 0; b < 256; ++b) {
    if (model_ == VocabModel::kGpt2) {
      std::string ch;
      append_utf8(ch, byte_to_codepoint(static_cast<uint8_t>(b)));
      const int32_t id = text_to_id_.find(ch);
      FULGUR_CHECK(id >= 0, "tokenizer.ggml.tokens has no token for byte ", hex_byte(b), " ('", ch,
                   "'); a byte-level BPE vocabulary needs all 256");
      byte_token_[b] = id;
      continue;
    }
    // A character no token covers is written as the <0xXX> tokens of its bytes. llama.cpp falls
    // back to the byte's own one-byte token for SentencePiece (and, for gemma4, silently drops a
    // byte it has no token for); fulgur refuses such a vocabulary at load instead of dropping text.
    const std::string text = byte_token_text(static_cast<uint8_t>(b));
    int32_t id = text_to_id_.find(text);
    if (id < 0 && model_ == VocabModel::kLlama) id = text_to_id_.find(std::string(1, static_cast<char>(b)));
    FULGUR_CHECK(id >= 0, "tokenizer.ggml.tokens has no byte-fallback token '", text, "' for byte ",
                 hex_byte(b), "; a '", vocab_.model, "' vocabulary needs all 256 (<0x00> .. <0xFF>)");
    byte_token_[b] = id;
  }
}

void Tokenizer::build_merges() {
  FULGUR_CHECK(!vocab_.merges.empty() || model_ == VocabModel::kGpt2, "tokenizer.ggml.merges is ",
               "missing or empty; a '", vocab_.model, "' vocabulary merges by rule");
  merges_.reserve(vocab_.merges.size());
  std::string joined;
  for (size_t r = 0; r < vocab_.merges.size(); ++r) {
    const std::string& m = vocab_.merges[r];
    // Split at the first space from index 1 on, so a left side that is itself a space-like
    // character still parses (archs-gguf.md §5.1).
    const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    FULGUR_CHECK(sp != std::string::npos && sp + 1 < m.size(), "tokenizer.ggml.merges[", r, "] = '",
                 m, "'; expected 'left right'");
    const std::string_view left(m.data(), sp), right(m.data() + sp + 1, m.size() - sp - 1);
    joined.assign(left);
    joined.append(right);
    const int32_t l = token_to_id(left), rt = token_to_id(right), res = token_to_id(joined);
    FULGUR_CHECK(l >= 0 && rt >= 0 && res >= 0, "tokenizer.ggml.merges[", r, "] = '", m, "': '",
                 l < 0    ? std::string(left)
                 : rt < 0 ? std::string(right)
                          : joined,
                 "' is not a token");
    merges_.emplace(pair_key(l, rt), Merge{static_cast<int32_t>(r), res});  // first rank wins
  }
}

std::optional<PairMerge> Tokenizer::rank_merge(const MergeSymbol& left,
                                               const MergeSymbol& right) const {
  if (left.id < 0 || right.id < 0) return std::nullopt;  // every merge rule joins two tokens
  const auto it = merges_.find(pair_key(left.id, right.id));
  if (it == merges_.end()) return std::nullopt;
  return PairMerge{-static_cast<double>(it->second.rank), it->second.result};
}

}  // namespace fulgur
