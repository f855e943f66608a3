// Gated-DeltaNet hybrids: Qwen3-Next (qwen3next) and Qwen3.5 (qwen35 dense, qwen35moe), as
// llama.cpp's converter stores them (conversion/qwen.py at 03173d5e; archs-gguf.md §3.4, §3.5,
// §4.3, §6.2-6.4; llamacpp-speculative.md §5.1, §9).
//
// Layers: layer i is full attention iff (i + 1) % full_attention_interval == 0 (or HF
// layer_types, which must follow that pattern: llama.cpp keeps only the interval), else Gated
// DeltaNet. Every layer: input_layernorm -> attn_norm, post_attention_layernorm ->
// post_attention_norm (the pre-FFN norm), and a SwiGLU MLP (qwen35) or the MoE (qwen3next,
// qwen35moe): router mlp.gate -> ffn_gate_inp, experts stacked (per-expert or fused, as
// dense_arch.h plan_routed_experts), mlp.shared_expert.{gate,up,down}_proj -> ffn_*_shexp and
// mlp.shared_expert_gate [1, E] -> ffn_gate_inp_shexp {E}; keys expert_count, expert_used_count,
// expert_feed_forward_length, expert_shared_feed_forward_length.
//   full attention: self_attn.q_proj [2*H*Dh, E] (per head Dh query rows then Dh gate rows) ->
//     attn_q {E, 2*H*Dh}; k/v/o_proj; q_norm / k_norm -> attn_{q,k}_norm.
//   Gated DeltaNet (Dk = linear_key_head_dim, Hk = linear_num_key_heads, Dv, Hv likewise,
//   Kd = Hk*Dk, Vd = Hv*Dv, r = Hv/Hk, C = 2*Kd + Vd):
//     qwen35: linear_attn.in_proj_qkv [C, E] -> attn_qkv, in_proj_z [Vd, E] -> attn_gate,
//       in_proj_b / in_proj_a [Hv, E] -> ssm_beta / ssm_alpha;
//     qwen3next: linear_attn.in_proj_qkvz [2*Kd + 2*Vd, E], grouped per K head g as
//       [q_g (Dk), k_g (Dk), v_g (r*Dv), z_g (r*Dv)], split into attn_qkv {E, C} (all q, all k,
//       all v, groups in order) and attn_gate {E, Vd} (all z); in_proj_ba [2*Hv, E] -> ssm_ba
//       unchanged (grouped [b (r), a (r)] per K head);
//     both: conv1d.weight [C, 1, K] -> ssm_conv1d {K, C} (kept F32), A_log [Hv] -> ssm_a =
//       -exp(A_log), dt_bias [Hv] -> ssm_dt.bias, norm.weight [Dv] -> ssm_norm, out_proj [E, Vd]
//       -> ssm_out {Vd, E}.
//   qwen35 V heads are stored TILED: HF groups V heads by K head (head g*r + j belongs to K head g);
//   GGUF position t = j*Hk + g holds HF head g*r + j, so V head t reads K head t % Hk (ggml's
//   broadcast). Reordered: the V rows of in_proj_qkv, in_proj_z, in_proj_a/b, A_log, dt_bias, the V
//   channels of conv1d and the columns of out_proj. qwen3next keeps the grouped order.
// Norms: every *norm.weight except linear_attn.norm holds w of HF's norm(x) * (1 + w); the GGUF
// holds 1 + w (computed in f32, as HF does).
// RoPE: rope.dimension_count = head_dim * partial_rotary_factor (default 0.25); qwen35* also
// rope.dimension_sections = mrope_section padded to 4 (default [11, 11, 10, 0]).
// MTP (mtp_num_hidden_layers = 1, the field of the released Qwen3.5 config.json files; also read
// for Qwen3-Next): mtp.fc [E, 2E] -> blk.N.nextn.eh_proj
// {2E, E}, mtp.pre_fc_norm_embedding -> nextn.enorm, mtp.pre_fc_norm_hidden -> nextn.hnorm,
// mtp.norm -> nextn.shared_head_norm (all +1), mtp.layers.0.* -> blk.N.* as a full-attention
// layer with the same FFN, N = num_hidden_layers; block_count counts it and
// {arch}.nextn_predict_layers = 1. The default (MtpMode::kAuto) includes it when the checkpoint has
// mtp.* tensors; llama.cpp's converter does the same for Qwen3.5 but still drops Qwen3-Next's
// ("ignore MTP layers for now"), although its qwen3next loader and MTP graph take the block.
// The Qwen3.5 checkpoint form Qwen3_5ForConditionalGeneration keeps the LM fields under
// text_config and the weights under model.language_model.*; its vision tower (model.visual.*) is
// dropped, as llama.cpp does.
#pragma once

#include <set>
#include <string>

#include "convert/convert_plan.h"
#include "convert/hf_config.h"
#include "gguf/gguf_writer.h"

namespace fulgur {

enum class GdnArch { kQwen3Next, kQwen35, kQwen35Moe };

// "qwen3next" / "qwen35" / "qwen35moe" (general.architecture).
const char* gdn_arch_name(GdnArch arch);

// Sets the {arch}.* keys on `w` and returns the tensor plan; throws fulgur::Error naming the file
// and field on a missing or inconsistent value. `names`: the checkpoint's tensor names (lm_head,
// the weight prefix, the MTP block's presence, the vision tower to drop).
ArchPlan plan_gdn_hybrid(GdnArch arch, const HfConfig& cfg, const std::set<std::string>& names,
                         MtpMode mtp, GgufWriter& w);

}  // namespace fulgur
