#include <cstring>

#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/recurrent.h"
#include "model/layers/layers.h"

namespace fulgur {
namespace {

// β = σ(b) and g = a·softplus(α + dt_bias) of the group's rows, into [m][Hv]. With ssm_ba each
// row holds, per k-head group of r v-heads, r β logits then r α logits (Qwen3-Next's grouped
// order, in which v-head j of group k is head k·r + j).
void gates(const ForwardPass& p, const GdnDesc& d, const GdnWeights& w, const std::vector<int32_t>& rows,
           float* beta, float* g) {
  const LayerScratch& s = *p.s;
  const int64_t Hv = d.n_v_heads, r = Hv / d.n_k_heads;
  const int64_t m = static_cast<int64_t>(rows.size());
  for (int64_t i = 0; i < m; ++i) {
    const float* b = s.gdn_b.data() + rows[i] * (d.fused_ba ? 2 * Hv : Hv);
    float* bi = beta + i * Hv;
    float* gi = g + i * Hv;
    if (d.fused_ba) {
      for (int64_t k = 0; k < d.n_k_heads; ++k) {
        for (int64_t j = 0; j < r; ++j) {
          bi[k * r + j] = b[k * 2 * r + j];
          gi[k * r + j] = b[k * 2 * r + r + j];
        }
      }
    } else {
      std::memcpy(bi, b, Hv * sizeof(float));
      std::memcpy(gi, s.gdn_a.data() + rows[i] * Hv, Hv * sizeof(float));
    }
    kernels::sigmoid(bi, bi, Hv);
    kernels::add(gi, w.dt_bias.data, gi, Hv);
    kernels::softplus(gi, gi, Hv);
    kernels::mul(gi, w.a.data, gi, Hv);
  }
}

}  // namespace

void gated_delta_mixer(const ForwardPass& p, int64_t layer, const GdnDesc& d, const GdnWeights& w,
                       const float* h, float* out) {
  LayerScratch& s = *p.s;
  const int64_t E = p.desc->n_embd, n = p.n, C = d.conv_channels(), Kd = d.qk_width();
  const int64_t Vd = d.v_width(), Hv = d.n_v_heads;
  // [q|k|v]: [n][C], z: [n][Vd], β/α logits: [n][Hv] each or [n][2Hv].
  if (d.fused_ba) {
    const kernels::MatmulOut outs[] = {{&w.qkv, s.gdn_qkv.data(), C}, {&w.z, s.gdn_z.data(), Vd},
                                       {&w.ba, s.gdn_b.data(), 2 * Hv}};
    kernels::matmul_many(outs, 3, h, n, E, p.pool);
  } else {
    const kernels::MatmulOut outs[] = {{&w.qkv, s.gdn_qkv.data(), C}, {&w.z, s.gdn_z.data(), Vd},
                                       {&w.beta, s.gdn_b.data(), Hv}, {&w.alpha, s.gdn_a.data(), Hv}};
    kernels::matmul_many(outs, 4, h, n, E, p.pool);
  }

  // The recurrence, one sequence at a time over its rows in order. Always the per-token form,
  // whatever the batch: it makes prefill, decode and verification rows bitwise the states and
  // outputs of one-token decodes (what speculative decoding's rollback relies on), and on CPUs
  // the chunked form costs as many flops and ran slower (kernels/recurrent.h; measured again
  // for this choice, bench_ssm at Qwen3.5's sizes, 512 tokens, one thread, interleaved
  // repetitions on a loaded host: per-token 40.6 ms CPU, chunked 61.9 ms).
  for (int64_t gi = 0; gi < p.n_groups; ++gi) {
    const SeqGroup& G = p.groups[gi];
    const std::vector<int32_t>& rows = G.rows;
    const int64_t m = static_cast<int64_t>(rows.size());
    // Interleaved sequences are gathered; a sequence's contiguous rows are used in place.
    bool contiguous = true;
    for (int64_t i = 1; i < m && contiguous; ++i) contiguous = rows[i] == rows[0] + i;
    const float* in = s.gdn_qkv.data() + rows[0] * C;
    if (!contiguous) {
      for (int64_t i = 0; i < m; ++i) {
        std::memcpy(s.gdn_in.data() + i * C, s.gdn_qkv.data() + rows[i] * C, C * sizeof(float));
      }
      in = s.gdn_in.data();
    }
    const RecurrentState::Rows st = p.rs->rows(layer, G.seq);

    kernels::Conv1dArgs conv;
    conv.n = m;
    conv.channels = C;
    conv.kernel = d.conv_kernel;
    conv.x = in;
    conv.x_stride = C;
    conv.w = w.conv;
    conv.w_tap_major = true;
    conv.silu = true;
    conv.state = st.conv;
    conv.y = s.gdn_conv.data();  // [m][C]
    conv.y_stride = C;
    conv.snap = st.conv_snap->data();
    kernels::conv1d_causal(conv);
    // q and k heads to unit length (ggml l2_norm, eps = the model's RMS eps).
    kernels::l2_norm(s.gdn_conv.data(), m, 2 * d.n_k_heads, d.k_dim, C, p.desc->rms_eps);
    gates(p, d, w, rows, s.gdn_beta.data(), s.gdn_g.data());

    float* o = contiguous ? s.gdn_o.data() + rows[0] * Vd : s.gdn_og.data();
    kernels::GatedDeltaArgs a;
    a.n = m;
    a.n_k_heads = d.n_k_heads;
    a.n_v_heads = Hv;
    a.k_dim = d.k_dim;
    a.v_dim = d.v_dim;
    a.head_map = d.head_map;
    a.q = s.gdn_conv.data();
    a.q_stride = C;
    a.k = s.gdn_conv.data() + Kd;
    a.k_stride = C;
    a.v = s.gdn_conv.data() + 2 * Kd;
    a.v_stride = C;
    a.g = s.gdn_g.data();
    a.g_stride = Hv;
    a.beta = s.gdn_beta.data();
    a.beta_stride = Hv;
    a.state = st.state;
    a.out = o;  // [m][Vd]
    a.out_stride = Vd;
    a.snap = st.state_snap->data();
    kernels::gated_delta(a, p.pool);
    if (!contiguous) {
      for (int64_t i = 0; i < m; ++i) {
        std::memcpy(s.gdn_o.data() + rows[i] * Vd, o + i * Vd, Vd * sizeof(float));
      }
    }
  }

  // Per (row, v-head): RMSNorm(o)·ssm_norm ⊙ silu(z), then the output projection.
  p.for_rows(n, [&](int64_t r0, int64_t r1) {
    kernels::rms_norm_gated(s.gdn_o.data() + r0 * Vd, s.gdn_z.data() + r0 * Vd, w.norm.data,
                            p.desc->rms_eps, kernels::GateOrder::kNormThenGate,
                            s.gdn_o.data() + r0 * Vd, (r1 - r0) * Hv, d.v_dim, 1, d.v_dim, d.v_dim,
                            d.v_dim);
  });
  kernels::matmul(w.out, s.gdn_o.data(), n, Vd, out, E, p.pool);
}

}  // namespace fulgur
