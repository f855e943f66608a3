#include "model/layers/layers.h"

namespace fulgur {

LayerScratch::LayerScratch(const ModelDesc& desc, int64_t max_rows) {
  const int64_t B = max_rows, E = desc.n_embd;
  const auto sized = [](std::vector<float>& v, int64_t n) { v.resize(static_cast<size_t>(n)); };
  sized(q, B * desc.max_q_width());
  sized(k, B * desc.max_kv_width());
  sized(v, B * desc.max_kv_width());
  sized(attn, B * desc.max_q_width());
  sized(q_gather, B * desc.max_q_width());
  sized(out_gather, B * desc.max_q_width());
  // Per-layer widths: each buffer is sized for the widest layer that uses it.
  const auto at_least = [](std::vector<float>& v, int64_t n) {
    if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
  };
  for (const LayerDesc& l : desc.layers) {
    if (l.mixer == MixerKind::kAttention && l.attn.output_gate) {
      at_least(q_and_gate, B * 2 * l.attn.q_width());
      at_least(attn_gate, B * l.attn.q_width());
    }
    if (l.mixer == MixerKind::kGatedDeltaNet) {
      const GdnDesc& g = l.gdn;
      for (std::vector<float>* v : {&gdn_qkv, &gdn_in, &gdn_conv}) at_least(*v, B * g.conv_channels());
      for (std::vector<float>* v : {&gdn_z, &gdn_o, &gdn_og}) at_least(*v, B * g.v_width());
      at_least(gdn_b, B * 2 * g.n_v_heads);
      for (std::vector<float>* v : {&gdn_a, &gdn_beta, &gdn_g}) at_least(*v, B * g.n_v_heads);
    }
    if (l.mixer == MixerKind::kMamba2) {
      at_least(ssm_in, B * l.ssm.in_width());
      at_least(ssm_xbc, B * l.ssm.conv_channels());
      at_least(ssm_y, B * l.ssm.d_inner);
      at_least(ssm_in_seq, B * l.ssm.in_width());
      at_least(ssm_y_seq, B * l.ssm.d_inner);
    }
    // Dense feed-forwards, and a MoE's shared expert (which runs as one).
    const int64_t dense_ff = l.ffn == FfnKind::kMoe ? l.moe.n_ff_shared : l.n_ff;
    if (l.ffn != FfnKind::kNone && dense_ff > 0) {
      at_least(gate, B * dense_ff);
      at_least(up, B * dense_ff);
    }
    if (l.ffn == FfnKind::kMoe) {
      const MoeDesc& m = l.moe;
      const int64_t slots = B * m.n_expert_used, X = m.expert_io(E);
      at_least(exp_gate, slots * m.n_ff_exp);
      at_least(exp_up, slots * m.n_ff_exp * (m.fused_gate_up ? 2 : 1));
      if (m.residual_branches) {
        at_least(moe_router_in, B * E);
        at_least(moe_expert_in, B * E);
      }
      at_least(exp_out, slots * X);
      if (m.latent > 0) {
        at_least(moe_latent, B * X);
        at_least(moe_routed, B * X);
      }
      if (m.n_ff_shared > 0) at_least(moe_shared, B * E);
    }
  }
  if (desc.has(FfnKind::kMoe)) {
    const int64_t n_exp = desc.max_expert_count(), slots = B * desc.max_expert_used();
    sized(router, B * n_exp);
    chosen.resize(static_cast<size_t>(slots));
    sized(chosen_w, slots);
    expert_jobs.reserve(static_cast<size_t>(2 * n_exp));
    expert_views.resize(static_cast<size_t>(2 * n_exp));
  }
  if (desc.ple_width > 0) {
    sized(ple_in, B * desc.n_layer() * desc.ple_width);
    sized(ple_tok, B * desc.n_layer() * desc.ple_width);
    sized(ple_gate, B * desc.ple_width);
  }
  if (desc.block_conv_kernel > 0) {
    sized(conv_delta, B * 2 * desc.block_conv_kernel * (E / desc.block_conv_group));
    sized(conv_out, B * E);
  }
}

std::vector<RecurrentState::LayerSize> recurrent_sizes(const ModelDesc& desc) {
  std::vector<RecurrentState::LayerSize> sizes(static_cast<size_t>(desc.n_layer()));
  for (size_t l = 0; l < sizes.size(); ++l) {
    const LayerDesc& L = desc.layers[l];
    if (L.mixer == MixerKind::kMamba2) sizes[l] = {L.ssm.conv_state(), L.ssm.ssm_state()};
    // Gated DeltaNet: conv, the last K-1 inputs [K-1][C]; state [Hv][Dv][Dk] (kernels/recurrent.h).
    if (L.mixer == MixerKind::kGatedDeltaNet) {
      sizes[l] = {(L.gdn.conv_kernel - 1) * L.gdn.conv_channels(), L.gdn.n_v_heads * L.gdn.v_dim * L.gdn.k_dim};
    }
  }
  return sizes;
}

}  // namespace fulgur
