#include <cstring>

#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "model/layers/layers.h"

namespace fulgur {

void eagle3_mixer(const ForwardPass& p, int64_t layer, const LayerDesc& L, const LayerWeights& W,
                  const kernels::WeightView& token_embd, const int32_t* tokens, float* x, float* h,
                  float* y) {
  const int64_t E = p.desc->n_embd, I = 2 * E, n = p.n;
  const float eps = p.desc->rms_eps;
  // h [n][2E] = [RMSNorm(embedding) * attn_norm ; RMSNorm(x) * hidden_norm].
  kernels::get_rows(token_embd.type, token_embd.data, token_embd.row_stride, token_embd.rows, E,
                    tokens, n, h, I);
  p.for_rows(n, [&](int64_t r0, int64_t r1) {
    float* hr = h + r0 * I;
    kernels::rms_norm(hr, W.mixer_norm.data, eps, hr, r1 - r0, E, I, I);
    kernels::rms_norm(x + r0 * E, W.hidden_norm.data, eps, hr + E, r1 - r0, E, E, I);
    if (L.norm_before_residual) {
      for (int64_t r = r0; r < r1; ++r) std::memcpy(x + r * E, h + r * I + E, E * sizeof(float));
    }
  });
  attention_mixer(p, layer, L.attn, W.attn, h, y);
  p.for_rows(n, [&](int64_t r0, int64_t r1) {
    kernels::add(x + r0 * E, y + r0 * E, x + r0 * E, (r1 - r0) * E);
  });
}

}  // namespace fulgur
