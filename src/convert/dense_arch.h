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

#include <set>
#include <string>

#include "convert/convert_plan.h"
#include "convert/hf_config.h"
#include "gguf/gguf_writer.h"

namespace fulgur {

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
