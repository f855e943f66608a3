#include <algorithm>
#include <cstring>

#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "model/layers/layers.h"

namespace fulgur {
namespace {

// llama.cpp clamps the renormalisation's denominator (archs-gguf.md §4.0 step 7).
constexpr float kMinWeightSum = 6.103515625e-5f;

// Routing of one row: probabilities from the router logits, the top k experts (ties to the lower
// id, so the choice is deterministic), their weights. logits: [n_expert] in place -> probs.
void route(const MoeDesc& d, float* logits, int32_t* order, int32_t* chosen, float* weights) {
  const int64_t n = d.n_expert, k = d.n_expert_used;
  kernels::softmax(logits, 1, n, n);
  for (int64_t e = 0; e < n; ++e) order[e] = static_cast<int32_t>(e);
  std::partial_sort(order, order + k, order + n, [&](int32_t a, int32_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  });
  float sum = 0.0f;
  for (int64_t j = 0; j < k; ++j) {
    chosen[j] = order[j];
    weights[j] = logits[order[j]];
    sum += weights[j];
  }
  if (d.norm_weights) {
    const float denom = std::max(sum, kMinWeightSum);
    for (int64_t j = 0; j < k; ++j) weights[j] /= denom;
  }
  if (d.weights_scale != 0.0f && d.weights_scale != 1.0f) {
    for (int64_t j = 0; j < k; ++j) weights[j] *= d.weights_scale;
  }
}

}  // namespace

void moe_ffn(const ForwardPass& p, const MoeDesc& d, const MoeWeights& w, const float* h,
             float* out) {
  LayerScratch& s = *p.s;
  const int64_t E = p.desc->n_embd, n = p.n, n_exp = d.n_expert, k = d.n_expert_used;
  const int64_t F = d.n_ff_exp;
  // router: [n][n_expert] logits, then probabilities.
  kernels::matmul(w.router, h, n, E, s.router.data(), n_exp, p.pool);
  int32_t* chosen = s.chosen.data();   // [n][k]
  float* weight = s.chosen_w.data();   // [n][k]
  for (int64_t r = 0; r < n; ++r) {
    route(d, s.router.data() + r * n_exp, s.expert_order.data(), chosen + r * k, weight + r * k);
  }
  // The (row, choice) slots r * k + j grouped by expert: a counting sort.
  int32_t* start = s.expert_start.data();  // [n_expert + 1]
  std::fill(start, start + n_exp + 1, 0);
  for (int64_t i = 0; i < n * k; ++i) ++start[chosen[i] + 1];
  for (int64_t e = 0; e < n_exp; ++e) start[e + 1] += start[e];
  int32_t* fill = s.expert_fill.data();  // [n_expert] next free index per expert
  std::copy(start, start + n_exp, fill);
  for (int64_t i = 0; i < n * k; ++i) s.expert_rows[fill[chosen[i]]++] = static_cast<int32_t>(i);

  // Each active expert once over its rows; its output rows land in exp_out at their slots.
  for (int64_t e = 0; e < n_exp; ++e) {
    const int64_t m = start[e + 1] - start[e];
    if (m == 0) continue;
    const int32_t* slots = s.expert_rows.data() + start[e];
    for (int64_t i = 0; i < m; ++i) {
      std::memcpy(s.exp_in.data() + i * E, h + (slots[i] / k) * E, E * sizeof(float));
    }
    const kernels::MatmulOut gate_up[] = {{&w.gate[e], s.exp_gate.data(), F},
                                           {&w.up[e], s.exp_up.data(), F}};
    kernels::matmul_many(gate_up, 2, s.exp_in.data(), m, E, p.pool);
    kernels::swiglu(s.exp_gate.data(), s.exp_up.data(), s.exp_gate.data(), m * F);
    kernels::matmul(w.down[e], s.exp_gate.data(), m, F, s.exp_in.data(), E, p.pool);
    for (int64_t i = 0; i < m; ++i) {
      std::memcpy(s.exp_out.data() + slots[i] * E, s.exp_in.data() + i * E, E * sizeof(float));
    }
  }
  // Each row sums its experts in the order of its choices: the same sum in any batch.
  p.for_rows(n, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* o = out + r * E;
      std::fill(o, o + E, 0.0f);
      for (int64_t j = 0; j < k; ++j) {
        const float wj = weight[r * k + j];
        const float* x = s.exp_out.data() + (r * k + j) * E;
        for (int64_t c = 0; c < E; ++c) o[c] += wj * x[c];
      }
    }
  });
}

}  // namespace fulgur
