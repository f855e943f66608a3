#include "core/error.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/swiglu_oai.h"
#include "model/layers/layers.h"

namespace fulgur {

void gated_activation(FfnAct act, const float* gate, const float* up, float* out, int64_t n) {
  switch (act) {
    case FfnAct::kSwiGlu: kernels::swiglu(gate, up, out, n); break;
    case FfnAct::kGeGlu: kernels::geglu(gate, up, out, n); break;
    case FfnAct::kSwiGluOai: kernels::swiglu_oai(gate, up, out, n); break;
    case FfnAct::kRelu2: fail("gated_activation: ReLU² has no gate");
  }
}

void dense_ffn(const ForwardPass& p, FfnAct act, int64_t n_ff, const FfnWeights& w, const float* h,
               float* out) {
  LayerScratch& s = *p.s;
  const int64_t E = p.desc->n_embd, F = n_ff;
  // a: [n][F] the activations the down projection reads.
  float* a = s.up.data();
  if (gated_act(act)) {
    const kernels::MatmulOut gate_up[] = {{&w.gate, s.gate.data(), F}, {&w.up, s.up.data(), F}};
    kernels::matmul_many(gate_up, 2, h, p.n, E, p.pool);
    a = s.gate.data();
    p.for_rows(p.n, [&](int64_t r0, int64_t r1) {
      const float* g = s.gate.data() + r0 * F;
      const float* u = s.up.data() + r0 * F;
      gated_activation(act, g, u, a + r0 * F, (r1 - r0) * F);
    });
  } else {
    kernels::matmul(w.up, h, p.n, E, a, F, p.pool);
    p.for_rows(p.n, [&](int64_t r0, int64_t r1) { kernels::relu_sq(a + r0 * F, a + r0 * F, (r1 - r0) * F); });
  }
  kernels::matmul(w.down, a, p.n, F, out, E, p.pool);
}

}  // namespace fulgur
