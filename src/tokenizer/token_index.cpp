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
    const auto tag = static_cast<uint32_t>(h >> 32);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.id < 0) {
        s = {tag, static_cast<int32_t>(id)};
        break;
      }
      if (s.tag == tag && texts[s.id] == texts[id]) break;  // a repeat: the first one stays
    }
  }
}

int32_t TokenIndex::find(std::string_view text) const {
  if (slots_.empty()) return -1;
  const uint64_t h = hash_text(text);
  const auto tag = static_cast<uint32_t>(h >> 32);
  for (size_t i = h & mask_;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.id < 0) return -1;
    if (s.tag == tag && texts_[s.id] == text) return s.id;
  }
}

}  // namespace fulgur
