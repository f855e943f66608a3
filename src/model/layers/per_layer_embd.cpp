#include <cmath>

#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "model/layers/layers.h"

namespace fulgur {

void per_layer_inputs(const ForwardPass& p, const PerLayerEmbdWeights& w, const int32_t* tokens,
                      const float* x) {
  LayerScratch& s = *p.s;
  const int64_t E = p.desc->n_embd, P = p.desc->ple_width, W = p.desc->n_layer() * P, n = p.n;
  kernels::matmul(w.model_proj, x, n, E, s.ple_in.data(), W, p.pool);
  const kernels::WeightView& t = w.token_embd;
  kernels::get_rows(t.type, t.data, t.row_stride, t.rows, W, tokens, n, s.ple_tok.data(), W);
  const float proj_scale = 1.0f / std::sqrt(static_cast<float>(E));
  const float tok_scale = std::sqrt(static_cast<float>(P));
  const float sum_scale = 1.0f / std::sqrt(2.0f);
  p.for_rows(n, [&](int64_t r0, int64_t r1) {
    float* in = s.ple_in.data() + r0 * W;
    const float* tok = s.ple_tok.data() + r0 * W;
    const int64_t m = (r1 - r0) * W;
    for (int64_t i = 0; i < m; ++i) in[i] *= proj_scale;
    kernels::rms_norm(in, w.proj_norm.data, p.desc->rms_eps, in, m / P, P, P, P);
    for (int64_t i = 0; i < m; ++i) in[i] = (in[i] + tok[i] * tok_scale) * sum_scale;
  });
}

void per_layer_branch(const ForwardPass& p, int64_t l, const PerLayerBranchWeights& w, float* x, float* y) {
  LayerScratch& s = *p.s;
  const int64_t E = p.desc->n_embd, P = p.desc->ple_width, W = p.desc->n_layer() * P, n = p.n;
  float* g = s.ple_gate.data();
  kernels::matmul(w.gate, x, n, E, g, P, p.pool);
  p.for_rows(n, [&](int64_t r0, int64_t r1) {
    kernels::gelu(g + r0 * P, g + r0 * P, (r1 - r0) * P);
    for (int64_t r = r0; r < r1; ++r) kernels::mul(g + r * P, s.ple_in.data() + r * W + l * P, g + r * P, P);
  });
  kernels::matmul(w.proj, g, n, P, y, E, p.pool);
  p.for_rows(n, [&](int64_t r0, int64_t r1) {
    kernels::rms_norm(y + r0 * E, w.post_norm.data, p.desc->rms_eps, y + r0 * E, r1 - r0, E, E, E);
    kernels::add(x + r0 * E, y + r0 * E, x + r0 * E, (r1 - r0) * E);
  });
}

}  // namespace fulgur
