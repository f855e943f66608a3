#include "server/prompt_cache.h"

#include <algorithm>

namespace fulgur::server {
namespace {

bool is_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// Whether the memory of `longer` serves every prompt `shorter` does: it extends shorter's tokens
// and can be restored to their end (a recurrent state or a filled sliding window may not be, and
// then the shorter entry is the only way back to that position).
bool covers(std::span<const int32_t> longer, const SeqState& state, std::span<const int32_t> shorter) {
  return is_prefix(shorter, longer) && state.restorable(static_cast<int32_t>(shorter.size()));
}

}  // namespace

void PromptCache::put(std::vector<int32_t> tokens, SeqState state) {
  const int64_t size = state.bytes() + static_cast<int64_t>(tokens.size() * sizeof(int32_t));
  if (tokens.empty() || size > budget_) return;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (covers(it->tokens, it->state, tokens)) {  // already served: keep the entry, as just used
      entries_.splice(entries_.begin(), entries_, it);
      return;
    }
  }
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (covers(tokens, state, it->tokens)) {
      bytes_ -= it->state.bytes() + static_cast<int64_t>(it->tokens.size() * sizeof(int32_t));
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  while (!entries_.empty() && bytes_ + size > budget_) {
    const Entry& old = entries_.back();
    bytes_ -= old.state.bytes() + static_cast<int64_t>(old.tokens.size() * sizeof(int32_t));
    entries_.pop_back();
  }
  entries_.push_front(Entry{std::move(tokens), std::move(state)});
  bytes_ += size;
}

PromptCache::Hit PromptCache::find(std::span<const int32_t> prompt, int32_t limit) {
  Hit best;
  auto best_it = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const size_t n = std::min(it->tokens.size(), prompt.size());
    const auto diff = std::mismatch(it->tokens.begin(), it->tokens.begin() + static_cast<std::ptrdiff_t>(n), prompt.begin());
    int32_t keep = std::min<int32_t>(static_cast<int32_t>(diff.first - it->tokens.begin()), limit);
    while (keep > 0 && !it->state.restorable(keep)) --keep;
    if (keep > best.keep) {
      best = Hit{&*it, keep};
      best_it = it;
    }
  }
  if (best_it != entries_.end()) entries_.splice(entries_.begin(), entries_, best_it);
  return best;
}

}  // namespace fulgur::server
