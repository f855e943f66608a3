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
  if (desc.has(FfnKind::kSwiGlu)) {
    sized(gate, B * desc.max_ff());
    sized(up, B * desc.max_ff());
  }
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
  }
  if (desc.block_conv_kernel > 0) {
    sized(conv_delta, B * 2 * desc.block_conv_kernel * (E / desc.block_conv_group));
    sized(conv_out, B * E);
  }
}

std::vector<RecurrentState::LayerSize> recurrent_sizes(const ModelDesc& desc) {
  std::vector<RecurrentState::LayerSize> sizes(static_cast<size_t>(desc.n_layer()));
  return sizes;  // no recurrent layer kind yet
}

}  // namespace fulgur
