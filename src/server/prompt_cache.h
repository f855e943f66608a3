// The host-memory prompt cache (llama-server's --cache-ram): when a slot is handed to a prompt
// that does not continue what it holds, the slot's memory (model/seq_state.h) is kept here under
// its tokens, and a later prompt that shares a longer prefix with an entry than with any slot
// gets that memory copied back instead of prefilling it again. Entries are evicted least
// recently used first to stay within a byte budget; an entry that another one covers (extends,
// and can be restored to its end) is dropped or not stored: the longer one serves every prompt
// the shorter did.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <vector>

#include "model/seq_state.h"

namespace fulgur::server {

class PromptCache {
 public:
  explicit PromptCache(int64_t budget_bytes) : budget_(budget_bytes) {}

  struct Entry {
    std::vector<int32_t> tokens;  // the memory holds these at positions 0..n-1
    SeqState state;
  };
  struct Hit {
    const Entry* entry = nullptr;
    int32_t keep = 0;  // positions of the entry the prompt can keep
  };

  // Keeps a slot's memory, replacing the entries it covers; when an entry covers it, that entry
  // is marked as just used instead. Nothing is kept when it alone exceeds the budget; older
  // entries are evicted until it fits.
  void put(std::vector<int32_t> tokens, SeqState state);
  // The entry whose memory serves the longest prefix of `prompt` that is at most `limit` tokens
  // (positions the state can be restored to: model/seq_state.h), marked as just used; entry is
  // null when none serves a non-empty prefix.
  Hit find(std::span<const int32_t> prompt, int32_t limit);

  int64_t bytes() const { return bytes_; }
  int64_t budget() const { return budget_; }
  size_t size() const { return entries_.size(); }

 private:
  int64_t budget_;
  int64_t bytes_ = 0;
  std::list<Entry> entries_;  // most recently used first
};

}  // namespace fulgur::server
