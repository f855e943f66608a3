// The Mamba2 mixer (layers.h mamba2_mixer; archs-gguf.md §4.4).
#include <algorithm>
#include <cstring>

#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/recurrent.h"
#include "model/layers/layers.h"

namespace fulgur {
namespace {

// Rows [t0, t1) of one sequence through the causal conv and the selective scan, updating the
// sequence's state in place. in: [m][W] the sequence's in-projection rows, xbc: [m][Cm] conv
// output, y: [m][Di] scan output; snap: the snapshot planes of rows t0.. (RecurrentState::rows),
// or null to keep none.
void scan_rows(const ForwardPass& p, const Mamba2Desc& d, const Mamba2Weights& w,
               const RecurrentState::Rows& st, const float* in, int64_t t0, int64_t t1, bool snap,
               float* xbc, float* y) {
  if (t1 <= t0) return;
  const int64_t W = d.in_width(), Cm = d.conv_channels(), Di = d.d_inner;
  const int64_t GN = d.n_groups * d.d_state;
  kernels::Conv1dArgs c;
  c.n = t1 - t0;
  c.channels = Cm;
  c.kernel = d.conv_kernel;
  c.x = in + t0 * W + Di;  // xBC
  c.x_stride = W;
  c.w = w.conv;
  c.w_tap_major = true;
  c.bias = w.conv_bias.data;
  c.silu = true;
  c.state = st.conv;
  c.y = xbc + t0 * Cm;
  c.y_stride = Cm;
  c.snap = snap ? st.conv_snap->data() + t0 : nullptr;
  kernels::conv1d_causal(c);

  kernels::SsmScanArgs s;
  s.n = t1 - t0;
  s.n_heads = d.n_heads;
  s.head_dim = d.head_dim;
  s.n_groups = d.n_groups;
  s.d_state = d.d_state;
  s.x = xbc + t0 * Cm;  // [Hs][P] of the conv output
  s.x_stride = Cm;
  s.dt = in + t0 * W + Di + Cm;
  s.dt_stride = W;
  s.dt_bias = w.dt_bias.data;
  s.a = w.a.data;
  s.b = xbc + t0 * Cm + Di;
  s.b_stride = Cm;
  s.c = xbc + t0 * Cm + Di + GN;
  s.c_stride = Cm;
  s.d = w.d.data;
  s.state = st.state;
  s.y = y + t0 * Di;
  s.y_stride = Di;
  s.snap = snap ? st.state_snap->data() + t0 : nullptr;
  kernels::ssm_scan(s, p.pool);
}

}  // namespace

void mamba2_mixer(const ForwardPass& p, int64_t layer, const Mamba2Desc& d,
                  const Mamba2Weights& w, const float* h, float* out) {
  LayerScratch& s = *p.s;
  const int64_t E = p.desc->n_embd, W = d.in_width(), Di = d.d_inner, n = p.n;
  // [n][W] rows z, xBC, dt of every row.
  kernels::matmul(w.in, h, n, E, s.ssm_in.data(), W, p.pool);
  for (int64_t g = 0; g < p.n_groups; ++g) {
    const SeqGroup& G = p.groups[g];
    const int64_t m = static_cast<int64_t>(G.rows.size());
    // A sequence's rows are ascending chunk rows; adjacent ones (the usual case) are read and
    // written in place, interleaved ones gathered.
    const bool adjacent = G.rows.back() - G.rows.front() + 1 == m;
    const float* in = s.ssm_in.data() + G.rows.front() * W;
    float* y = s.ssm_y.data() + G.rows.front() * Di;
    if (!adjacent) {
      for (int64_t t = 0; t < m; ++t) {
        std::memcpy(s.ssm_in_seq.data() + t * W, s.ssm_in.data() + G.rows[t] * W, W * sizeof(float));
      }
      in = s.ssm_in_seq.data();
      y = s.ssm_y_seq.data();
    }
    const RecurrentState::Rows st = p.rs->rows(layer, G.seq);
    // Only the last rows of a decode keep their state (a verification batch's); the rows before
    // them run without snapshots, so a prefill writes no per-token states it does not need.
    // Splitting the rows changes no bit: the kernels step token by token.
    const std::vector<float*>& snaps = *st.state_snap;
    const int64_t kept = std::find_if(snaps.begin(), snaps.end(), [](float* q) { return q != nullptr; }) -
                         snaps.begin();
    scan_rows(p, d, w, st, in, 0, kept, false, s.ssm_xbc.data(), y);
    scan_rows(p, d, w, st, in, kept, m, true, s.ssm_xbc.data(), y);
    if (!adjacent) {
      for (int64_t t = 0; t < m; ++t) {
        std::memcpy(s.ssm_y.data() + G.rows[t] * Di, y + t * Di, Di * sizeof(float));
      }
    }
  }
  // y = RMSNorm(y ⊙ silu(z)) per group of Di/G channels, * norm; z: the first Di of each row.
  p.for_rows(n, [&](int64_t r0, int64_t r1) {
    kernels::rms_norm_gated(s.ssm_y.data() + r0 * Di, s.ssm_in.data() + r0 * W, w.norm.data,
                            p.desc->rms_eps, kernels::GateOrder::kGateThenNorm,
                            s.ssm_y.data() + r0 * Di, r1 - r0, Di, d.n_groups, Di, W, Di);
  });
  kernels::matmul(w.out, s.ssm_y.data(), n, Di, out, E, p.pool);
}

}  // namespace fulgur
