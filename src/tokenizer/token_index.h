// Token ids by text for a whole vocabulary: open addressing with linear probing over a
// power-of-two table kept at most half full, each slot an id and 32 bits of its text's hash, so
// a probe rarely reads a text that does not match. One allocation where a node-based map made
// one per token: with 150k tokens, looking texts up (three per BPE merge) and building the map
// were most of the time to load a tokenizer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fulgur {

class TokenIndex {
 public:
  TokenIndex() = default;
  // Indexes texts[0 .. n); of equal texts the first wins. The texts are the caller's and must
  // stay where they are (a vector that is moved, never resized, keeps them in place).
  TokenIndex(const std::string* texts, size_t n);

  // The id of `text`, or -1.
  int32_t find(std::string_view text) const;

 private:
  struct Slot {
    uint32_t tag = 0;  // the high half of the text's hash
    int32_t id = -1;   // -1: empty
  };
  // The slot holding `text` (hash h), or the empty slot where it would go.
  size_t probe(std::string_view text, uint64_t h) const;

  const std::string* texts_ = nullptr;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

}  // namespace fulgur
