// The attention KV cache: K and V of every attending layer as f16 in blocks of kBlockCells
// cells (the layout kernels/attention.h reads: per block and layer [n_kv_heads][block][head_dim]),
// and per cell the token's position and the set of sequences that share it. Rolling back a
// sequence is forgetting its cells (DESIGN §3).
//
// Block b of every layer lies together, and cells are claimed lowest first, so the memory is
// committed as the context fills: the first token faults in one block (~29 MB for Qwen3-0.6B)
// instead of a page per head and layer (with 2 MiB pages ~0.5 GB at 4k cells, when each head
// held all n_ctx of its cells in one run).
#pragma once

#include <cstdint>
#include <vector>

#include "core/page_buffer.h"
#include "kernels/attention.h"
#include "model/batch.h"
#include "model/seq_state.h"

namespace fulgur {

// A cache for the layers of one sliding window (window > 0) keeps only what rows at or after
// each sequence's last decoded rows can still see (Gemma 4's sliding layers; KvCache::slide):
// n_ctx is then the window's worth of cells per sequence plus a batch, not the context.
class KvCache {
 public:
  // n_kv_heads, head_dims: [n_layer] per-layer KV head counts and head dims (0 heads: the
  // layer keeps nothing here). window: the sliding window of these layers (0 = none).
  KvCache(const std::vector<int64_t>& n_kv_heads, const std::vector<int64_t>& head_dims,
          int64_t n_ctx, int32_t window = 0);

  // Cells per block: a run of each (layer, head)'s cells long enough to stream (64 KiB at
  // head_dim 128) and a multiple of the attention tile.
  static constexpr int64_t kBlockCells = 256;

  int64_t n_ctx() const { return n_ctx_; }
  int32_t window() const { return window_; }
  bool empty() const { return block_stride_ == 0; }  // no layer keeps K and V here
  int64_t bytes() const { return static_cast<int64_t>(mem_.size()); }
  int64_t block_cells() const { return block_cells_; }
  int64_t block_stride() const { return block_stride_; }  // elements from a block to the next
  // Block 0 of a layer's K or V; (head, cell) lies row(head, cell) elements further.
  uint16_t* k(int64_t layer) { return base() + k_off_[layer]; }
  uint16_t* v(int64_t layer) { return base() + v_off_[layer]; }
  const uint16_t* k(int64_t layer) const { return base() + k_off_[layer]; }
  const uint16_t* v(int64_t layer) const { return base() + v_off_[layer]; }
  // Whether layer `layer` keeps K and V here with this head count and head dim.
  bool holds(int64_t layer, int64_t n_kv_heads, int64_t head_dim) const;
  int64_t row(int64_t layer, int64_t head, int64_t cell) const {
    return kernels::kv_row_offset(block_cells_, block_stride_, head_dim_[layer], head, cell);
  }
  const int32_t* cell_pos() const { return cell_pos_.data(); }  // [n_ctx], -1 = free
  const uint64_t* cell_seq() const { return cell_seq_.data(); }  // [n_ctx] sequence bitsets

  int64_t used_cells() const { return used_; }
  // Claims n free cells for (pos[i], seq[i]) and writes their indices to cells[i]. Throws
  // fulgur::Error naming the shortfall when fewer than n cells are free (nothing is claimed).
  void claim(int64_t n, const int32_t* pos, const int32_t* seq, int32_t* cells);

  // Removes sequence `seq` (all sequences when seq < 0) from cells with p0 <= pos < p1
  // (p1 < 0 means no upper bound); cells left with no sequence become free.
  void seq_rm(int seq, int32_t p0, int32_t p1);
  // Adds sequence dst to every cell of src with p0 <= pos < p1 (shares the KV, no copy).
  void seq_cp(int src, int dst, int32_t p0, int32_t p1);
  // Drops every sequence except `seq`.
  void seq_keep(int seq);

  // Sliding window only: before rows of `seq` from position `first_pos` on are decoded, forgets
  // the cells no row at or after first_pos can see. What it forgets stops at a multiple of the
  // attention tile (kernels/attention.h determinism: a cell then sits at the same place in its
  // tile whatever was forgotten before it, so rolled-back and fresh contexts sum alike).
  void slide(int seq, int32_t first_pos);
  // Whether seq_rm(seq, p0, -1) leaves every cell a row at p0 sees (always, without a window).
  bool can_rm(int seq, int32_t p0) const;
  // Largest position held for seq, or -1 when it has none.
  int32_t seq_pos_max(int seq) const;
  void clear();

  // A sequence's cells copied out (model/seq_state.h).
  using SeqCopy = KvSeqCopy;
  SeqCopy copy_seq(int seq) const;
  // Whether a copy has this cache's layout (one from a context of the same model does).
  bool fits(const SeqCopy& copy) const;
  // Cells paste_seq(seq, ...) may claim: the free ones and those only seq holds.
  int64_t cells_available_to(int seq) const;
  // Replaces what seq holds by the copy. Throws fulgur::Error, changing nothing, when fewer than
  // copy.pos.size() cells are available to seq.
  void paste_seq(int seq, const SeqCopy& copy);

  // The cells visible to any sequence in `seq_mask`, in canonical order (by position, then cell
  // index): attention sums over cells in list order, so a canonical order makes the result
  // independent of where cells happened to be allocated (decoding one token at a time or in a
  // batch, before or after a rollback, gives identical sums).
  void visible_cells(uint64_t seq_mask, std::vector<int32_t>& cells, std::vector<int32_t>& pos,
                     std::vector<uint64_t>& seqs) const;

 private:
  int64_t n_ctx_;
  int32_t window_;
  std::vector<int64_t> head_dim_;  // [n_layer]
  std::vector<int64_t> n_kv_heads_;  // [n_layer]
  int64_t block_cells_ = 0;
  int64_t block_stride_ = 0;
  uint16_t* base() { return reinterpret_cast<uint16_t*>(mem_.data()); }
  const uint16_t* base() const { return reinterpret_cast<const uint16_t*>(mem_.data()); }
  // Calls f(layer, offset of K in a block, offset of V) for each layer that keeps K and V here.
  template <class F>
  void for_each_kv_layer(F&& f) const;
  int64_t cell_elems() const;  // f16 values of K and V one cell holds over all layers

  // [n_blocks][every layer's K, V: [n_kv_heads][block][head_dim]] f16 in one huge-page buffer
  // (decode attention streams the used blocks on every token); offsets in elements within a
  // block.
  PageBuffer mem_;
  std::vector<int64_t> k_off_, v_off_;
  std::vector<int32_t> cell_pos_;             // [n_ctx]
  std::vector<uint64_t> cell_seq_;            // [n_ctx]
  int64_t used_ = 0;
  int64_t search_from_ = 0;  // next cell to try when claiming
  int32_t forgotten_[kMaxSequences] = {};  // sliding window: positions below it are gone
};

}  // namespace fulgur
