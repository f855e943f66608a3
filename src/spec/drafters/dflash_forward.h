// The backbone forward of a block drafter over its own KV cache (reference/dspark-dflash-spec.md
// §1.3-1.5, §2.1):
//  * inject(): context features of committed target rows -> fc -> enc.output_norm -> in every
//    draft layer K = RoPE(k_norm(Wk c)) at the row's own position and V = Wv c, written straight
//    into that layer's cache. One pass over all layers; no attention, no FFN (the draft never
//    runs its layers over context rows).
//  * run_blocks(): one block per sequence, all in one batch: slot 0 = anchor embedding, slots
//    1..B-1 = mask embedding, positions s..s+B-1; each layer attends (non-causally, unless the
//    draft says causal) over that sequence's injected context and its own block. The block's K/V
//    are dropped from the cache afterwards, so the cache only ever holds committed positions.
//    DFlash2 drafts get the block-local dynamic convolution around each sublayer.
// Output: the final-normed hidden state of every block row, which the heads read.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "model/kv_cache.h"
#include "spec/drafters/dflash_model.h"

namespace fulgur {

struct DflashBlock {
  int seq = 0;
  int32_t anchor = 0;      // token of slot 0
  int32_t anchor_pos = 0;  // position of slot 0
};

class DflashForward {
 public:
  DflashForward(const DflashModel& model, int64_t n_ctx, int max_blocks, ThreadPool& pool);

  const DflashModel& model() const { return model_; }
  KvCache& kv() { return kv_; }
  int max_blocks() const { return max_blocks_; }

  // features: [n][m * E_t] f32 (the tapped target rows, concatenated in target_layers order);
  // pos, seq: [n]. Replaces whatever the cache held for those (seq, pos).
  void inject(const float* features, const int32_t* pos, const int32_t* seq, int64_t n);

  // Runs one full block (block_size slots) per entry; blocks.size() <= max_blocks, distinct
  // sequences. Afterwards hidden(b, slot) is valid until the next call.
  void run_blocks(std::span<const DflashBlock> blocks);
  const float* hidden(int64_t block, int64_t slot) const;  // [E] final-normed
  // Logits of one hidden row over the draft's output rows: out [V_d].
  void logits(const float* hidden, float* out);

 private:
  void layer(int64_t l, int64_t n_blocks);
  void conv(const float* base, const float* delta, int side, const float* y, float* out,
            int64_t n_blocks) const;

  const DflashModel& model_;
  const DflashHparams& hp_;
  ThreadPool& pool_;
  KvCache kv_;
  int max_blocks_;
  int64_t n_chunk_;  // rows per injection pass
  int64_t B_;        // block size

  // Scratch, sized once (rows = max(n_chunk, max_blocks * B)).
  std::vector<float> feat_;    // [n_chunk][E] fused context features
  std::vector<float> x_;       // [rows][E] residual stream
  std::vector<float> h_;       // [rows][E] normed sublayer input
  std::vector<float> h2_;      // [rows][E] conv output / projection output
  std::vector<float> q_;       // [rows][H*Dh]
  std::vector<float> k_;       // [rows][Hkv*Dh]
  std::vector<float> v_;       // [rows][Hkv*Dh]
  std::vector<float> attn_;    // [rows][H*Dh]
  std::vector<float> gate_;    // [rows][F]
  std::vector<float> up_;      // [rows][F]
  std::vector<float> delta_;   // [rows][2*K*G] DFlash2 dynamic coefficients
  std::vector<float> rope_cs_; // [rows][2][n_rot]
  std::vector<int32_t> cells_, pos_, seq_, tok_;  // [rows]
  std::vector<int32_t> vis_cells_, vis_pos_;      // visible cells of one sequence
  std::vector<uint64_t> vis_seq_;
  std::vector<int32_t> row_seq_;                  // [B] one block's sequence id per row
  int64_t n_blocks_ = 0;
};

}  // namespace fulgur
