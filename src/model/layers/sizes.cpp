#include <algorithm>

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
  int64_t gate_width = 0;  // widest gated attention
  for (const LayerDesc& l : desc.layers) {
    if (l.mixer == MixerKind::kAttention && l.attn.output_gate) gate_width = std::max(gate_width, l.attn.q_width());
  }
  sized(q_and_gate, B * 2 * gate_width);
  sized(attn_gate, B * gate_width);
  if (desc.has(MixerKind::kGatedDeltaNet)) {
    int64_t C = 0, Vd = 0, Hv = 0;
    for (const LayerDesc& l : desc.layers) {
      if (l.mixer != MixerKind::kGatedDeltaNet) continue;
      C = std::max(C, l.gdn.conv_channels());
      Vd = std::max(Vd, l.gdn.v_width());
      Hv = std::max(Hv, l.gdn.n_v_heads);
    }
    for (std::vector<float>* v : {&gdn_qkv, &gdn_in, &gdn_conv}) sized(*v, B * C);
    for (std::vector<float>* v : {&gdn_z, &gdn_o, &gdn_og}) sized(*v, B * Vd);
    sized(gdn_b, B * 2 * Hv);
    for (std::vector<float>* v : {&gdn_a, &gdn_beta, &gdn_g}) sized(*v, B * Hv);
  }
  // Dense feed-forwards and a MoE's shared expert (which runs as one).
  int64_t dense_ff = 0;
  for (const LayerDesc& l : desc.layers) {
    if (l.ffn == FfnKind::kSwiGlu) dense_ff = std::max(dense_ff, l.n_ff);
    if (l.ffn == FfnKind::kMoe) dense_ff = std::max(dense_ff, l.moe.n_ff_shared);
  }
  sized(gate, B * dense_ff);
  sized(up, B * dense_ff);
  if (desc.has(FfnKind::kMoe)) {
    const int64_t n_exp = desc.max_expert_count(), slots = B * desc.max_expert_used();
    sized(router, B * n_exp);
    chosen.resize(static_cast<size_t>(slots));
    sized(chosen_w, slots);
    expert_jobs.reserve(static_cast<size_t>(2 * n_exp));
    expert_views.resize(static_cast<size_t>(2 * n_exp));
    sized(exp_gate, slots * desc.max_ff());
    sized(exp_up, slots * desc.max_ff());
    sized(exp_out, slots * E);
    sized(moe_shared, B * E);
  }
  if (desc.block_conv_kernel > 0) {
    sized(conv_delta, B * 2 * desc.block_conv_kernel * (E / desc.block_conv_group));
    sized(conv_out, B * E);
  }
}

std::vector<RecurrentState::LayerSize> recurrent_sizes(const ModelDesc& desc) {
  std::vector<RecurrentState::LayerSize> sizes(static_cast<size_t>(desc.n_layer()));
  for (int64_t l = 0; l < desc.n_layer(); ++l) {
    const LayerDesc& L = desc.layers[static_cast<size_t>(l)];
    if (L.mixer != MixerKind::kGatedDeltaNet) continue;
    // conv: the last K-1 inputs [K-1][C]; state: [Hv][Dv][Dk] (kernels/recurrent.h).
    sizes[static_cast<size_t>(l)] = {(L.gdn.conv_kernel - 1) * L.gdn.conv_channels(),
                                     L.gdn.n_v_heads * L.gdn.v_dim * L.gdn.k_dim};
  }
  return sizes;
}

}  // namespace fulgur
