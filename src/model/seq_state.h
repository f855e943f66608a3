// A sequence's memory copied out of a Context (Context::save_seq, load_seq): what the server's
// host-memory prompt cache (server/prompt_cache.h) keeps of a slot it hands to another prompt.
// Plain data, so that the server holds it without seeing the caches' kernels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/page_buffer.h"

namespace fulgur {

// A sequence's KV cells, in position order: per layer that keeps K and V in the cache, K as
// [n_kv_heads][cells][head_dim] f16, then V alike (KvCache::copy_seq).
struct KvSeqCopy {
  std::vector<int32_t> pos;
  // The f16 elements, in huge pages: on a virtual machine a fresh 4 KiB page can cost ~12 us to
  // fault in (0.8 s for the 250 MB of a 2,000-token prompt of a 0.6B model), a 2 MiB page
  // about the time it takes to write it (22 ms for those 250 MB).
  PageBuffer kv;
  int32_t forgotten = 0;  // sliding window: positions below it were already gone
  int64_t bytes() const { return static_cast<int64_t>(pos.size() * sizeof(int32_t) + kv.size()); }
};

// A sequence's recurrent state: every layer's current conv and recurrent planes, then, when it
// has one, its checkpoint's. Snapshots are not kept: a pasted sequence rolls back to its
// checkpoint or to 0 only (RecurrentState::copy_seq).
struct RecurrentSeqCopy {
  int32_t next = 0, checkpoint = 0;
  std::vector<float> planes;
  int64_t bytes() const { return static_cast<int64_t>(planes.size() * sizeof(float)); }
  // Whether the state after positions [0, p) can be had from the copy.
  bool restorable(int32_t p) const { return p <= 0 || p == next || (checkpoint > 0 && p == checkpoint); }
};

struct SeqState {
  KvSeqCopy kv[2];            // the full-attention cache, the sliding-window cache
  RecurrentSeqCopy rs;
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
