// NVIDIA Nemotron-H hybrids (archs-gguf.md §3.6, §4.4, §6.2-6.4), as llama.cpp's converter
// (conversion/nemotron.py, with the Puzzle support of PR #25444) writes them:
//   NemotronHForCausalLM -> nemotron_h (Mamba2, attention and ReLU² MLP layers), or
//   nemotron_h_moe when the config has num_experts_per_tok (Mamba2, attention and MoE layers);
//   the Puzzle form (NemotronHPuzzleForCausalLM, or any config with block_configs) -> always
//   nemotron_h_moe, each MoE block with its own expert width and experts used.
// One layer per entry of hybrid_override_pattern (M Mamba2, * attention, - MLP, E MoE),
// layers_block_type (mamba|linear_attention, attention|full_attention, mlp, moe) or
// block_configs[i].block_type (mamba, attention, mlp, moe); a Puzzle block's effective config is
// the global config overridden by the block's non-null fields (HF's
// get_nemotron_h_config_for_layer). Tensor prefix backbone. (original releases) or model.
// (Puzzle releases), from the checkpoint.
//
// GGUF keys ({a} = nemotron_h | nemotron_h_moe; per-layer arrays are INT32 arrays of
// block_count entries, as gguf-py writes Python lists):
//   {a}.context_length (max_position_embeddings), embedding_length, block_count, vocab_size,
//   {a}.feed_forward_length [per layer]: MLP intermediate_size / MoE moe_intermediate_size / 0,
//   {a}.attention.head_count, attention.head_count_kv [per layer]: KV heads on attention layers,
//     0 elsewhere (so head_count_kv[i] == 0 && feed_forward_length[i] == 0 marks Mamba2),
//   {a}.attention.key_length, value_length, attention.layer_norm_epsilon (llama.cpp requires it)
//     and attention.layer_norm_rms_epsilon (the same value),
//   {a}.ssm.conv_kernel, ssm.inner_size (Di = mamba_num_heads * mamba_head_dim), ssm.state_size,
//     ssm.time_step_rank (mamba_num_heads), ssm.group_count (n_groups),
//   MoE only: expert_count, expert_used_count and expert_feed_forward_length (scalars, or per-layer
//     arrays with 0 on non-MoE layers for Puzzle), expert_shared_feed_forward_length,
//     expert_shared_count, expert_weights_norm, expert_weights_scale, expert_group_count,
//     expert_group_used_count (when topk_group is set), moe_latent_size (when set).
// Tensors per layer (blk.N.): attn_norm; Mamba2: ssm_in {E, 2Di+2GN+Hs}, ssm_conv1d.weight
// {K, Di+2GN} (HF [C, 1, K]), ssm_conv1d.bias (use_conv_bias), ssm_dt.bias {Hs}, ssm_a {1, Hs}
// = -exp(A_log), ssm_d {1, Hs}, ssm_norm.weight {Di/G, G}, ssm_out {Di, E}; attention: attn_q,
// attn_k, attn_v, attn_output (no RoPE, no q/k norm); MLP: ffn_up, ffn_down; MoE: ffn_gate_inp
// {E, n_expert}, exp_probs_b.bias {n_expert} (HF gate.e_score_correction_bias), ffn_up_exps
// {L, F_i, n_expert}, ffn_down_exps {F_i, L, n_expert}, ffn_up_shexp, ffn_down_shexp, and with
// moe_latent_size L (else L = E): ffn_latent_down {E, L}, ffn_latent_up {L, E}.
//
// Refused by name, because llama.cpp's nemotron_h(_moe) cannot hold them: a pattern entry
// other than the four kinds, a list whose length differs from num_hidden_layers, an MLP block
// in a MoE model or a MoE block in a dense one, Puzzle fields that differ between blocks other
// than moe_intermediate_size and num_experts_per_tok (expert count, shared width, latent size,
// scaling, groups: llama.cpp keeps one value), sliding-window attention, attention/MLP/Mamba
// projection biases, activations other than relu2/silu, n_shared_experts other than 1.
// time_step_limit is ignored, as llama.cpp does.
//
// MTP (num_nextn_predict_layers = 1, llama.cpp's NemotronH MTP export): with `mtp` kInclude, or
// kAuto when the checkpoint has mtp.* tensors, HF mtp.layers.0 (enorm, hnorm, eh_proj [E, 2E],
// norm, mixer.{q,k,v,o}_proj) and mtp.layers.1 (norm, mixer.* of the model's feed-forward: the
// MoE, or on a dense model fulgur's ReLU² MLP, which llama.cpp has no MTP graph for, and
// final_layernorm) become one block blk.N, N = num_hidden_layers: nextn.enorm, nextn.hnorm,
// nextn.eh_proj {2E, E}, attn_norm, attn_q/k/v/output, post_attention_norm, the feed-forward's
// tensors and nextn.shared_head_norm; block_count counts it, the per-layer arrays give it the
// attention's KV heads and the feed-forward's width, and {a}.nextn_predict_layers = 1. Puzzle
// checkpoints keep their head (mtp_block_configs) out, as llama.cpp's converter does: --mtp on
// one is an error, otherwise it is left out with a log line.
#pragma once

#include <set>
#include <string>

#include "convert/convert_plan.h"
#include "convert/hf_config.h"
#include "gguf/gguf_writer.h"

namespace fulgur {

// Sets general.architecture (nemotron_h or nemotron_h_moe) and the {arch}.* keys on `w` and
// returns the tensor plan. `names`: the checkpoint's tensor names (prefix, lm_head, MTP); `mtp`:
// whether the MTP block is written (above).
ArchPlan plan_nemotron_h(const HfConfig& cfg, const std::set<std::string>& names, MtpMode mtp, GgufWriter& w);

}  // namespace fulgur
