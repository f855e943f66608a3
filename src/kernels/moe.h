// Mixture-of-experts pieces below the model (archs-gguf.md §4.0 "Generic MoE", §4.2): the
// experts of a stacked GGUF tensor as matrices, the router's choice of experts and weights, and
// the grouping of a batch's rows by expert that matmul_grouped's jobs gather. All scalar: the
// router works on n_expert floats per row, the grouping on n * k integers, next to matrix
// products of millions of weights.
//
// How a MoE feed-forward runs on these (n batch rows h: [n][E], k experts used per row, expert
// width F, SwiGLU):
//   logits = router · h                                [n][n_expert]  matmul
//   moe_route(routing, logits) -> ids, weights         [n][k] i32, [n][k] f32
//   ExpertRows::build(ids)                              rows per expert, slots
//   gate/up jobs of each expert e with count(e) > 0: rows(e) of h -> rows offset(e).. of
//     g, u: [n*k][F]                                    one matmul_grouped
//   swiglu(g, u) -> a: [n*k][F]
//   down jobs: a's rows offset(e).. -> d: [n*k][E]     one matmul_grouped
//   out[r] = sum over j < k, in j order, of weights[r][j] * d[slot(r, j)]
// Each step computes a row from that row alone, so a row's output is the same bits in any batch.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/matmul.h"

namespace fulgur::kernels {

// ---- expert slices -----------------------------------------------------------------------------
// A GGUF expert tensor {cols, rows, n_expert} (ggml order: ffn_gate_exps, ffn_up_exps {E, F, N},
// ffn_down_exps {F, E, N}) holds n_expert matrices [rows][cols] one after another. Bound as ONE
// 2-D matrix of n_expert * rows rows ("the stack": WeightView{type, data, n_expert * rows, cols,
// row_bytes(type, cols)}), it is what the loader checks, PackedWeight packs and the tile cache
// keys, as any matrix. When rows is a multiple of 16 (kPackRows; every released MoE's expert
// widths and hidden sizes are), no 16-row tile holds two experts' rows, so the packed stack is
// each expert's packed matrix one after another, byte for byte.

// Whether a stack of experts of rows_per_expert rows may be packed as one matrix.
bool expert_stack_packable(int64_t rows_per_expert);

// Expert e's matrix [stack.rows / n_expert][stack.cols] within stack, in stack's layout (no
// copy). Throws fulgur::Error when n_expert does not divide stack.rows, e is out of range, or
// stack is packed (kRows16) with rows per expert not a multiple of 16.
WeightView expert_matrix(const WeightView& stack, int64_t n_expert, int64_t e);

// ---- routing -----------------------------------------------------------------------------------
enum class MoeGating : uint8_t {
  kSoftmax,  // expert_gating_func 1 (and the default): p = softmax(logits)
  kSigmoid,  // expert_gating_func 2: p = sigmoid(logits), each expert on its own
  // expert_gating_func 3 (gpt-oss): experts chosen on the raw logits, and the weights are the
  // softmax over the k chosen experts' logits only.
  kSoftmaxWeight,
};

struct MoeRouting {
  int64_t n_expert = 0;
  int64_t n_used = 0;  // k: 1 <= k <= n_expert
  MoeGating gating = MoeGating::kSoftmax;
  const float* selection_bias = nullptr;  // [n_expert] exp_probs_b, added for choosing only; or null
  bool normalize = false;                 // expert_weights_norm: w /= max(sum w, 6.103515625e-5)
  float scale = 1.0f;                     // expert_weights_scale; 0 (absent) and 1 change nothing
};

// The router's decision for each of n rows:
//   p   = gating(logits[r])                      (softmax in double, as softmax_ref; sigmoid;
//                                                 kSoftmaxWeight: the logits themselves)
//   ids = the k experts of largest p + bias, best first; equal values: the lower expert id first
//   w   = p[ids] (without the bias), for kSoftmaxWeight softmax(p[ids]), then normalized and
//         scaled as the routing asks
// logits: [n][ld] f32, the first n_expert of each row; ids: [n][k] i32; weights: [n][k] f32.
// Throws fulgur::Error for n_used outside [1, n_expert] or ld < n_expert. A row is computed
// from itself alone (no batch dependence). Steady-state calls allocate nothing.
void moe_route(const MoeRouting& routing, const float* logits, int64_t n, int64_t ld,
               int32_t* ids, float* weights);

// ---- rows by expert ----------------------------------------------------------------------------
// The (row, slot) pairs of a batch's choices ids[r][j] sorted by expert (a counting sort, stable:
// an expert's rows ascend), laying out the per-pair buffers of a MoE layer: expert e's pairs are
// rows [offset(e), offset(e) + count(e)) of a [n * k][..] buffer, and row r's j-th expert's
// result is its row slot(r, j). Rebuilding for a batch no larger than one seen allocates nothing.
class ExpertRows {
 public:
  // ids: [n][k] i32, each in [0, n_expert) (throws fulgur::Error naming the row and slot).
  void build(const int32_t* ids, int64_t n, int64_t k, int64_t n_expert);

  int64_t n_expert() const { return n_expert_; }
  int64_t count(int64_t e) const { return offsets_[e + 1] - offsets_[e]; }
  int64_t offset(int64_t e) const { return offsets_[e]; }
  // [count(e)] the batch rows routed to e, ascending: a gathered MatmulJob's rows.
  const int32_t* rows(int64_t e) const { return rows_.data() + offsets_[e]; }
  int32_t slot(int64_t r, int64_t j) const { return slots_[r * k_ + j]; }
  // Experts with at least one row.
  int64_t n_active() const { return n_active_; }

 private:
  int64_t n_expert_ = 0, k_ = 0, n_active_ = 0;
  std::vector<int32_t> offsets_;  // [n_expert + 1] prefix sums of the counts
  std::vector<int32_t> rows_;     // [n * k] batch row of each pair, grouped by expert
  std::vector<int32_t> slots_;    // [n][k] each pair's index in rows_
};

}  // namespace fulgur::kernels
