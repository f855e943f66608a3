#include "tokenizer/token_index.h"

#include <functional>

namespace fulgur {
namespace {

uint64_t hash_text(std::string_view text) { return std::hash<std::string_view>{}(text); }

}  // namespace

TokenIndex::TokenIndex(const std::string* texts, size_t n) : texts_(texts) {
  size_t size = 16;
  while (size < 2 * n) size *= 2;
  slots_.resize(size);
  mask_ = size - 1;
  for (size_t id = 0; id < n; ++id) {
    const uint64_t h = hash_text(texts[id]);
    Slot& s = slots_[probe(texts[id], h)];
    if (s.id < 0) s = {static_cast<uint32_t>(h >> 32), static_cast<int32_t>(id)};  // else a repeat
  }
}

size_t TokenIndex::probe(std::string_view text, uint64_t h) const {
  const auto tag = static_cast<uint32_t>(h >> 32);
  size_t i = h & mask_;
  while (slots_[i].id >= 0 && (slots_[i].tag != tag || texts_[slots_[i].id] != text))
    i = (i + 1) & mask_;
  return i;
}

int32_t TokenIndex::find(std::string_view text) const {
  if (slots_.empty()) return -1;
  return slots_[probe(text, hash_text(text))].id;
}

}  // namespace fulgur
