// Decoder-only transformers with one attention + one feed-forward per layer: Qwen3, Qwen2 and
// Llama (SwiGLU MLP), and Qwen3-MoE (the same attention as Qwen3, a routed SwiGLU MoE instead of
// the MLP), which differ only in a few flags (archs-gguf.md §3.2, §3.3, §6.2-6.4):
//   qwen3:    per-head q_norm / k_norm, optional attention_bias (q/k/v/o);
//   qwen2:    q/k/v biases always;
//   llama:    optional attention_bias, and the q/k rows are permuted from HF's rotate-half layout
//             to ggml's interleaved RoPE (llama.cpp does the same), plus vocab_size and
//             rope.dimension_count keys;
//   qwen3moe: qwen3's attention; router mlp.gate [n_expert, E] -> ffn_gate_inp {E, n_expert}
//             (F32, like llama.cpp), experts mlp.experts.{j}.{gate,up,down}_proj stacked into
//             ffn_{gate,up,down}_exps {E, F, n_expert} / {F, E, n_expert} (or the fused
//             transformers-v5 form mlp.experts.gate_up_proj [n_expert, 2F, E] + down_proj
//             [n_expert, E, F]); keys expert_count, expert_used_count, expert_feed_forward_length
//             and feed_forward_length = intermediate_size (as llama.cpp's converter writes it).
//             What llama.cpp's qwen3moe cannot run is refused by name: norm_topk_prob false (it
//             always renormalises the top-k weights), decoder_sparse_step != 1 or mlp_only_layers
//             (dense layers), a shared expert.
#pragma once

#include <optional>
#include <vector>

#include <set>
#include <string>

#include "convert/convert_plan.h"
#include "convert/hf_config.h"
#include "gguf/gguf_writer.h"

namespace fulgur {

// ---- pieces shared with the hybrid planners (convert/gdn_arch.h) ----

// The fields every decoder config has (archs-gguf.md §6.2).
struct DecoderDims {
  int64_t n_embd, n_layer, n_head, n_head_kv, head_dim;
  int64_t n_ff;  // intermediate_size; 0 when absent and not required
  int64_t n_vocab, n_ctx;
  double eps, rope_theta;
};
// Throws fulgur::Error naming the field on a missing or inconsistent value (num_attention_heads
// not a multiple of num_key_value_heads, hidden_size not divisible by heads without head_dim).
// rope_theta is read at the top level or (transformers v5) in rope_parameters.
DecoderDims read_decoder_dims(const HfConfig& cfg, bool need_ff = true);
// {arch}.context_length, embedding_length, block_count, feed_forward_length (when n_ff > 0),
// attention.{head_count, head_count_kv, key_length, value_length, layer_norm_rms_epsilon},
// rope.freq_base.
void write_decoder_keys(const std::string& arch, const DecoderDims& d, int64_t block_count,
                        GgufWriter& w);
// rope_scaling (v4) or rope_parameters (v5): none/default, linear and yarn are written as
// llama.cpp's rope.scaling.* keys; anything else is refused rather than silently ignored.
void write_rope_scaling(const HfConfig& cfg, const std::string& arch, GgufWriter& w);
// Llama 3.1's RoPE scaling ("rope_type": "llama3") as llama.cpp's converter computes it into
// the rope_freqs tensor: one divisor per rotary pair. nullopt when the config has no llama3
// scaling.
std::optional<std::vector<float>> llama3_rope_factors(const HfConfig& cfg, const DecoderDims& d);

// Routed-expert fields (configuration_qwen3_moe.py, qwen3_next, qwen3_5_moe).
struct MoeDims {
  int64_t n_expert, n_expert_used, n_ff_exp;
  int64_t n_ff_shexp;  // shared_expert_intermediate_size; 0 without a shared expert
};
// Refuses, naming `arch`, what llama.cpp's graphs cannot run: norm_topk_prob false (they always
// renormalise; `norm_topk_default` is the config class's default), decoder_sparse_step != 1 or
// mlp_only_layers (dense layers), and a shared expert unless `shared_expert`.
MoeDims read_moe_dims(const HfConfig& cfg, const std::string& arch, bool shared_expert,
                      bool norm_topk_default);
// {arch}.expert_count, expert_used_count, expert_feed_forward_length and, with a shared expert,
// expert_shared_feed_forward_length.
void write_moe_keys(const std::string& arch, const MoeDims& m, GgufWriter& w);

// The prefix of a decoder's weights: model.language_model. in the multimodal checkpoint classes
// (`nested`: LM fields under text_config), unless the names show model.embed_tokens.weight;
// model. otherwise.
std::string language_model_prefix(bool nested, const std::set<std::string>& names);

// {hf}mlp.{gate,up,down}_proj.weight -> {g}ffn_{gate,up,down}.weight.
void plan_swiglu_mlp(ArchPlan& plan, const std::string& hf, const std::string& g, int64_t n_embd,
                     int64_t n_ff);
// The router {hf}mlp.gate.weight [N, E] -> ffn_gate_inp {E, N}, and the experts
// {hf}mlp.experts.{j}.{gate,up,down}_proj.weight stacked into ffn_{gate,up,down}_exps
// {E, F, N} / {F, E, N}, or (when `names` has it) the fused transformers-v5 form
// mlp.experts.gate_up_proj [N, 2F, E] (gate rows first) + down_proj [N, E, F].
void plan_routed_experts(ArchPlan& plan, const std::set<std::string>& names, const std::string& hf,
                         const std::string& g, int64_t n_embd, int64_t n_ff_exp, int64_t n_expert);

// ---- the dense decoders ----

enum class DenseArch { kQwen3, kQwen2, kLlama, kQwen3Moe };

// "qwen3" / "qwen2" / "llama" / "qwen3moe" (general.architecture).
const char* dense_arch_name(DenseArch arch);

// Sets the {arch}.* hyperparameter keys on `w` and returns the tensor plan. Throws fulgur::Error
// naming config.json and the field on missing or inconsistent values (e.g. num_attention_heads
// not a multiple of num_key_value_heads, hidden_size not divisible by heads without head_dim,
// unsupported rope_scaling). `names`: the checkpoint's tensor names (lm_head.weight present or
// not, fused or per-expert MoE tensors).
ArchPlan plan_dense_decoder(DenseArch arch, const HfConfig& cfg, const std::set<std::string>& names,
                            GgufWriter& w);

}  // namespace fulgur
