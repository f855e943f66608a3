#include <algorithm>
#include <cmath>

#include "kernels/matmul.h"
#include "kernels/moe.h"
#include "kernels/ops.h"
#include "model/layers/layers.h"

namespace fulgur {
namespace {

// Each (row, choice) pair's result y [n*k][width] (expert order) += its expert's bias row, bias
// [n_expert][width] (MoeDesc::expert_bias). Element-wise, so a row's result stays batch-free.
void add_expert_bias(const kernels::ExpertRows& by_expert, const float* bias, float* y, int64_t width) {
  for (int64_t e = 0; e < by_expert.n_expert(); ++e) {
    for (int64_t i = by_expert.offset(e); i < by_expert.offset(e) + by_expert.count(e); ++i) {
      kernels::add(y + i * width, bias + e * width, y + i * width, width);
    }
  }
}

}  // namespace

// The MoE feed-forward of a batch, on the kernels of kernels/moe.h:
//   logits = router · h; each row's k experts and weights (moe_route, with the selection bias);
//   u = h, or latent_down · h; the (row, choice) pairs grouped by expert (ExpertRows); the
//   experts' gate (SwiGLU) and up of every active expert over its rows of u in ONE grouped
//   matmul, the activation, down in a second one; each row sums its experts' outputs in the
//   order of its choices (then latent_up); the shared expert, gated or not, is added last.
//   Optional biases: the router's on the logits, the experts' after each projection.
//   Only active experts' bytes are read, and a row's result is the same bits in any batch.
void moe_ffn(const ForwardPass& p, const MoeDesc& d, const MoeWeights& w, const float* h,
             const float* x, float* out) {
  LayerScratch& s = *p.s;
  const int64_t E = p.desc->n_embd, n = p.n, n_exp = d.n_expert, k = d.n_expert_used;
  const int64_t F = d.n_ff_exp, X = d.expert_io(E);
  const float eps = p.desc->rms_eps;
  // Separate gate rows (gate_exps), or each expert's fused gate-then-up rows in exp_up [.][2F].
  const bool separate_gate = gated_act(d.expert_act) && !d.fused_gate_up;
  const int64_t up_width = d.fused_gate_up ? 2 * F : F;
  // What the router and the experts read: h, or with residual_branches their own norms of x.
  const float* router_in = h;
  const float* expert_in = h;
  if (d.residual_branches) {
    float* r_in = s.moe_router_in.data();
    float* e_in = s.moe_expert_in.data();
    const float inv_sqrt_e = 1.0f / std::sqrt(static_cast<float>(E));
    p.for_rows(n, [&](int64_t r0, int64_t r1) {
      const int64_t m = r1 - r0;
      kernels::rms_norm(x + r0 * E, nullptr, eps, r_in + r0 * E, m, E, E, E);
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = 0; c < E; ++c) r_in[r * E + c] = r_in[r * E + c] * inv_sqrt_e * w.router_scale.data[c];
      }
      kernels::rms_norm(x + r0 * E, w.expert_norm.data, eps, e_in + r0 * E, m, E, E, E);
    });
    router_in = r_in;
    expert_in = e_in;
  }
  // router: [n][n_expert] logits; chosen, chosen_w: [n][k].
  kernels::matmul(w.router, router_in, n, E, s.router.data(), n_exp, p.pool);
  if (d.router_bias) {
    for (int64_t r = 0; r < n; ++r) kernels::add(s.router.data() + r * n_exp, w.router_bias.data, s.router.data() + r * n_exp, n_exp);
  }
  const kernels::MoeRouting routing{.n_expert = n_exp, .n_used = k, .gating = d.gating,
                                    .selection_bias = w.selection_bias.data,
                                    .normalize = d.norm_weights, .scale = d.weights_scale};
  kernels::moe_route(routing, s.router.data(), n, n_exp, s.chosen.data(), s.chosen_w.data());
  kernels::ExpertRows& by_expert = s.expert_rows;
  by_expert.build(s.chosen.data(), n, k, n_exp);
  s.moe_experts_run += by_expert.n_active();
  ++s.moe_layers_run;
  // u: [n][X] what the experts read.
  const float* u = expert_in;
  if (d.latent > 0) {
    kernels::matmul(w.latent_down, expert_in, n, E, s.moe_latent.data(), X, p.pool);
    u = s.moe_latent.data();
  }

  // exp_gate (SwiGLU), exp_up: [n*k][F] in expert order; then exp_out: [n*k][X].
  std::vector<kernels::MatmulJob>& jobs = s.expert_jobs;
  jobs.clear();
  for (int64_t e = 0; e < n_exp; ++e) {
    const int64_t m = by_expert.count(e);
    if (m == 0) continue;
    const int64_t o = by_expert.offset(e);
    if (separate_gate) {
      s.expert_views[2 * e] = kernels::expert_matrix(w.gate_exps, n_exp, e);
      jobs.push_back({.w = &s.expert_views[2 * e], .n = m, .rows = by_expert.rows(e),
                      .y = s.exp_gate.data() + o * F, .ldy = F});
    }
    s.expert_views[2 * e + 1] = kernels::expert_matrix(w.up_exps, n_exp, e);
    jobs.push_back({.w = &s.expert_views[2 * e + 1], .n = m, .rows = by_expert.rows(e),
                    .y = s.exp_up.data() + o * up_width, .ldy = up_width});
  }
  kernels::matmul_grouped(jobs.data(), static_cast<int>(jobs.size()), u, n, X, p.pool);
  if (d.expert_bias) {
    add_expert_bias(by_expert, w.up_exps_bias, s.exp_up.data(), up_width);
    if (separate_gate) add_expert_bias(by_expert, w.gate_exps_bias, s.exp_gate.data(), F);
  }
  // a: [n*k][F] what the down projections read.
  float* a = gated_act(d.expert_act) ? s.exp_gate.data() : s.exp_up.data();
  p.for_rows(n * k, [&](int64_t r0, int64_t r1) {
    if (d.fused_gate_up) {  // row r of exp_up: gate [F] then up [F]
      for (int64_t r = r0; r < r1; ++r) {
        const float* gu = s.exp_up.data() + r * 2 * F;
        gated_activation(d.expert_act, gu, gu + F, a + r * F, F);
      }
    } else if (gated_act(d.expert_act)) {
      gated_activation(d.expert_act, s.exp_gate.data() + r0 * F, s.exp_up.data() + r0 * F, a + r0 * F,
                       (r1 - r0) * F);
    } else {
      kernels::relu_sq(a + r0 * F, a + r0 * F, (r1 - r0) * F);
    }
  });
  jobs.clear();
  for (int64_t e = 0; e < n_exp; ++e) {
    const int64_t m = by_expert.count(e);
    if (m == 0) continue;
    const int64_t o = by_expert.offset(e);
    s.expert_views[2 * e] = kernels::expert_matrix(w.down_exps, n_exp, e);
    jobs.push_back({.w = &s.expert_views[2 * e], .n = m, .x = a + o * F, .ldx = F,
                    .y = s.exp_out.data() + o * X, .ldy = X});
  }
  kernels::matmul_grouped(jobs.data(), static_cast<int>(jobs.size()), nullptr, 0, 0, p.pool);
  if (d.expert_bias) add_expert_bias(by_expert, w.down_exps_bias, s.exp_out.data(), X);

  // Each row sums its experts in the order of its choices: the same sum in any batch.
  // routed: [n][X], straight into out unless it goes through latent_up.
  float* routed = d.latent > 0 ? s.moe_routed.data() : out;
  p.for_rows(n, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* o = routed + r * X;
      std::fill(o, o + X, 0.0f);
      for (int64_t j = 0; j < k; ++j) {
        const float wj = s.chosen_w[r * k + j] *
                         (d.expert_scale ? w.expert_scale.data[s.chosen[r * k + j]] : 1.0f);
        const float* x = s.exp_out.data() + by_expert.slot(r, j) * X;
        for (int64_t c = 0; c < X; ++c) o[c] += wj * x[c];
      }
    }
  });
  if (d.latent > 0) kernels::matmul(w.latent_up, routed, n, X, out, E, p.pool);
  if (d.residual_branches) {
    p.for_rows(n, [&](int64_t r0, int64_t r1) {
      kernels::rms_norm(out + r0 * E, w.routed_post_norm.data, eps, out + r0 * E, r1 - r0, E, E, E);
    });
  }

  if (d.n_ff_shared == 0) return;
  // shared: [n][E]; out += g · shared with g = sigmoid(gate_inp_shexp · h) or 1.
  float* shared = s.moe_shared.data();
  dense_ffn(p, d.shared_act, d.n_ff_shared, w.shared, h, shared);
  p.for_rows(n, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* sh = shared + r * E;
      if (d.shared_gate) {
        float logit = 0.0f;
        for (int64_t c = 0; c < E; ++c) logit += w.shared_gate.data[c] * h[r * E + c];
        float g = 0.0f;
        kernels::sigmoid(&logit, &g, 1);
        for (int64_t c = 0; c < E; ++c) sh[c] *= g;
      }
      if (d.residual_branches) kernels::rms_norm(sh, w.shared_post_norm.data, eps, sh, 1, E, E, E);
      kernels::add(sh, out + r * E, out + r * E, E);
    }
  });
}

}  // namespace fulgur
