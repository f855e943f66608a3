// Attention of several query rows over an f16 KV cache (archs-gguf.md §4.0): scores
// q·k·scale, a visibility mask, softmax in f32 (optionally with a per-head sink logit), and
// the weighted sum of V.
//
// KV cache layout (what the model's memory must hold, per layer): cells in blocks of B cells
// (B = kv_block_cells, or n_ctx: one block), each block [n_kv_heads][B][head_dim] f16 (IEEE
// binary16 bits), blocks kv_block_stride elements apart. A token lives in one cell c in
// [0, n_ctx); its key for KV head g is at k + kv_row(a, g, c). Blocks let a cache keep every
// layer's block b side by side, so that its memory is committed as the context fills up rather
// than at the first token (model/kv_cache.h).
// The caller lists the cells that may be visible to this batch, with each cell's position and
// the set of sequences it belongs to; a cell may be shared by several sequences (seq_cp of a
// common prefix), hence a bitset rather than a single id.
//
// Cell j is visible to query row r iff
//   (cell_seq == nullptr || (cell_seq[j] >> row_seq[r]) & 1)            same sequence
//   && (mask == kFull || cell_pos[j] <= row_pos[r])                        causal
//   && (window == 0 || row_pos[r] − cell_pos[j] < window)                  sliding window
// The cell list may be in any order and may contain cells visible to no row.
// A (row, head) that sees no cell gets an all-zero output.
//
// Determinism (what makes speculative verification lossless): the output of a row depends
// only on that row's q, position and sequence, and on the visible cells *in list order* —
// never on which other rows are in the call, the thread count, or cells it cannot see. So
// decoding a token alone, or as row i of a verification batch whose cell list extends the
// first one's, gives bitwise identical results on the same ISA.
//
// Accuracy of the SIMD paths against attention_ref (which works in double):
//   |d| <= 2e-5 · max|V| (plus 1e-6 abs), checked in tests/ops.
#pragma once

#include <cstdint>

namespace fulgur {
class ThreadPool;
}

namespace fulgur::kernels {

enum class AttnMask { kCausal, kFull };

// Cells per K/V tile of the SIMD attention (32 cells · head_dim 128 · 4 B = 16 KiB per f32
// tile, so the K and V tiles together stay in a 48 KiB L1 with room for the query rows). The
// list of cells is cut into tiles by index, so a row's sums depend on where its visible cells
// sit in their tiles: a sliding-window cache forgets cells in whole tiles (model/kv_cache.h).
// The tile must not depend on the number of rows (row results would then depend on the batch).
inline constexpr int64_t kAttnTileCells = 32;

struct AttentionArgs {
  // q: [n_rows][q_row_stride] f32, each row holding [n_heads][head_dim].
  const float* q = nullptr;
  int64_t q_row_stride = 0;
  int64_t n_rows = 0;
  int64_t n_heads = 0;     // multiple of n_kv_heads; head h reads KV head h / (n_heads/n_kv_heads)
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;

  // K, V: blocks of [n_kv_heads][kv_block_cells][head_dim] f16 bits, kv_block_stride elements
  // apart (kv_block_cells 0: one block of n_ctx cells).
  const uint16_t* k = nullptr;
  const uint16_t* v = nullptr;
  int64_t n_ctx = 0;
  int64_t kv_block_cells = 0;
  int64_t kv_block_stride = 0;

  // The candidate cells: cells [n_cells] i32 in [0, n_ctx); cell_pos [n_cells] i32;
  // cell_seq [n_cells] u64 sequence bitsets (bit s = belongs to sequence s), or nullptr
  // when the batch has one sequence.
  const int32_t* cells = nullptr;
  const int32_t* cell_pos = nullptr;
  const uint64_t* cell_seq = nullptr;
  int64_t n_cells = 0;

  // Per query row: row_pos [n_rows] i32; row_seq [n_rows] i32 in [0, 64) (required iff
  // cell_seq is given).
  const int32_t* row_pos = nullptr;
  const int32_t* row_seq = nullptr;

  float scale = 0.0f;  // 0 means 1/sqrt(head_dim)
  AttnMask mask = AttnMask::kCausal;
  int32_t window = 0;  // sliding window length; 0 = unlimited

  // sinks: [n_heads] f32 or nullptr. A learned logit per head that joins the softmax
  // denominator only (gpt-oss): out = Σ e^{s_j} v_j / (e^{sink} + Σ e^{s_j}).
  const float* sinks = nullptr;

  // out: [n_rows][out_row_stride] f32, each row [n_heads][head_dim]. Must not alias q.
  float* out = nullptr;
  int64_t out_row_stride = 0;
};

// Elements from the start of a block layout (B cells per block, blocks block_stride apart) to
// the head_dim values of (KV head g, cell c).
inline int64_t kv_row_offset(int64_t block_cells, int64_t block_stride, int64_t head_dim, int64_t g, int64_t c) {
  return (c / block_cells) * block_stride + (g * block_cells + c % block_cells) * head_dim;
}

// The same for the cache an AttentionArgs describes.
inline int64_t kv_row(const AttentionArgs& a, int64_t g, int64_t c) {
  return kv_row_offset(a.kv_block_cells != 0 ? a.kv_block_cells : a.n_ctx, a.kv_block_stride, a.head_dim, g, c);
}

// Validates the arguments (throws fulgur::Error naming the bad field) and runs on the active
// ISA. Work is split over (KV head, block of query rows) units, each of which converts a tile
// of K/V cells to f32 once and reuses it for every query row and GQA head of the unit.
// pool == nullptr runs on the calling thread.
void attention(const AttentionArgs& args, ThreadPool* pool = nullptr);

// Scalar oracle: plain three-pass softmax per (row, head) in double precision.
void attention_ref(const AttentionArgs& args);

}  // namespace fulgur::kernels
