// The memory of recurrent layers (Mamba2, Gated DeltaNet; DESIGN §3): per recurrent layer and
// sequence, a conv state and a recurrent state (f32 planes whose sizes the layer kind gives),
// plus snapshot planes that let speculative decoding roll back without re-decoding.
//
// A recurrent state folds in its sequence's tokens in order, so a decode must continue each
// sequence at its next position, and rolling back means restoring an earlier state. Each decode
// writes, for the last n_snapshots rows of each sequence, the state after that row into a
// snapshot plane (a ring indexed by position); seq_rm back to any position those planes cover
// restores that state exactly (llama.cpp's partial rollback, `n_rs_seq`). Further back it
// cannot: seq_rm returns false and changes nothing, and the caller re-decodes from a checkpoint.
//
// Sequences get a slot on their first decode (at most n_seq_max at once); removing a whole
// sequence frees it. Planes live in one lazily committed mapping: slots and snapshot planes that
// are never written cost no memory.
#pragma once

#include <cstdint>
#include <vector>

#include "core/page_buffer.h"
#include "model/kv_cache.h"
#include "model/seq_state.h"

namespace fulgur {

class RecurrentState {
 public:
  // Floats per sequence of one layer's conv and recurrent state; {0, 0}: not a recurrent layer.
  struct LayerSize {
    int64_t conv = 0, state = 0;
  };

  RecurrentState() = default;
  RecurrentState(std::vector<LayerSize> layers, int n_seq_max, int n_snapshots);

  bool empty() const { return n_recurrent_ == 0; }
  int n_snapshots() const { return n_snap_; }
  // The position seq's next token must have (its state folds in positions [0, next)).
  int32_t next_pos(int seq) const;

  // Before a chunk runs: sequence seq's rows are n consecutive positions starting at pos0;
  // throws (changing nothing) unless pos0 == next_pos(seq) or when no slot is free. Call for
  // every sequence of the chunk, then run the layers, then end_rows() for each.
  void begin_rows(int seq, int32_t pos0, int64_t n);
  void end_rows(int seq, int32_t pos0, int64_t n);

  // What one recurrent layer reads and writes for the rows begin_rows() announced for seq:
  // the current planes (updated in place) and, per row, the snapshot planes to copy the state
  // into after that row (nullptr for rows whose state is not kept).
  struct Rows {
    float* conv = nullptr;                 // [conv floats]
    float* state = nullptr;                // [state floats]
    const std::vector<float*>* conv_snap;  // [n]
    const std::vector<float*>* state_snap; // [n]
  };
  Rows rows(int64_t layer, int seq);

  // Memory operations (model/context.h semantics). can_rm tells, without changing anything,
  // whether seq_rm would succeed.
  bool can_rm(int seq, int32_t p0, int32_t p1) const;
  bool seq_rm(int seq, int32_t p0, int32_t p1);
  // Keeps a copy of seq's state as it is now (after positions [0, next_pos)), so that a later
  // seq_rm back to exactly that position succeeds however far back it lies: one checkpoint per
  // sequence, replacing the previous one, dropped when the sequence is rolled back before it or
  // removed. A server takes one at the end of each prompt, so the next request that continues
  // the prompt but not the reply reuses it (llama-server's context checkpoints).
  void checkpoint(int seq);
  void seq_cp(int src, int dst);
  void seq_keep(int seq);
  void clear();

  // A sequence's state copied out (model/seq_state.h).
  using SeqCopy = RecurrentSeqCopy;
  SeqCopy copy_seq(int seq);
  // Whether a copy has this state's layout (one from a context of the same model does).
  bool fits(const SeqCopy& copy) const;
  // Replaces seq's state by the copy. Throws, changing nothing, when no slot is free for it.
  void paste_seq(int seq, const SeqCopy& copy);

 private:
  struct Seq {
    int slot = -1;          // -1: no state yet (all zero)
    int32_t next = 0;       // positions folded in
    int32_t snap_lo = 0;    // snapshot planes hold the states after positions [snap_lo, snap_hi)
    int32_t snap_hi = 0;
    int32_t checkpoint = 0; // > 0: the checkpoint plane holds the state after [0, checkpoint)
    int32_t rows_pos0 = 0;  // the rows announced by begin_rows
    int64_t rows_n = 0;
  };
  // Plane p (0 = current, 1 + i = snapshot ring entry i, 1 + n_snap = the checkpoint) of
  // (layer, slot).
  float* conv_plane(int64_t layer, int slot, int p);
  float* state_plane(int64_t layer, int slot, int p);
  bool restorable(const Seq& s, int32_t p0) const;
  void restore(Seq& s, int32_t p0);
  void copy_planes(int slot, int from, int to);
  // Appends plane p of every layer of slot to out (to = false), or fills it from *in (to = true).
  void move_planes(int slot, int p, std::vector<float>& out, const float** in);
  void zero(int slot);
  void release(Seq& s);
  bool valid_seq(int seq) const { return seq >= 0 && seq < kMaxSequences; }

  std::vector<LayerSize> layers_;
  std::vector<int64_t> layer_off_;  // [n_layer] floats from a slot's start to the layer's planes
  int64_t slot_floats_ = 0;         // floats of one slot: every layer's (2 + n_snap) planes
  int n_recurrent_ = 0;
  int n_seq_max_ = 0;
  int n_snap_ = 0;
  PageBuffer mem_;                  // [n_seq_max][slot_floats] f32
  std::vector<bool> slot_used_;     // [n_seq_max]
  std::vector<Seq> seqs_;           // [kMaxSequences]
  std::vector<float*> conv_snap_, state_snap_;  // scratch for rows()
};

}  // namespace fulgur
