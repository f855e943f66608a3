// A sequence's memory copied out of a Context (Context::save_seq, load_seq): what the server's
// host-memory prompt cache (server/prompt_cache.h) keeps of a slot it hands to another prompt.
#pragma once

#include <algorithm>
#include <cstdint>

#include "model/kv_cache.h"
#include "model/recurrent_state.h"

namespace fulgur {

struct SeqState {
  KvCache::SeqCopy kv[2];     // the full-attention cache, the sliding-window cache
  RecurrentState::SeqCopy rs;
  bool recurrent = false;     // the model has recurrent layers (rs is meaningful)
  int32_t window = 0;         // the sliding window of kv[1] (0: none)
  int32_t n_pos = 0;          // the memory holds positions [0, n_pos)

  int64_t bytes() const { return kv[0].bytes() + kv[1].bytes() + rs.bytes(); }
  // Whether loading this state and then removing positions p and later leaves exactly the
  // memory of positions [0, p) (Context::can_rm on the loaded sequence).
  bool restorable(int32_t p) const {
    if (p < 0 || p > n_pos) return false;
    if (recurrent && !rs.restorable(p)) return false;
    return window == 0 || p <= 0 || p == n_pos || kv[1].forgotten <= std::max(0, p - window + 1);
  }
};

}  // namespace fulgur
