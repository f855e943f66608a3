// Dense decoder-only transformers with one attention + one SwiGLU MLP per layer: Qwen3, Qwen2 and
// Llama, which differ only in a few flags (archs-gguf.md §3.2, §6.2-6.4):
//   qwen3: per-head q_norm / k_norm, optional attention_bias (q/k/v/o);
//   qwen2: q/k/v biases always;
//   llama: optional attention_bias, and the q/k rows are permuted from HF's rotate-half layout to
//          ggml's interleaved RoPE (llama.cpp does the same), plus vocab_size and
//          rope.dimension_count keys.
#pragma once

#include <string>

#include "convert/convert_plan.h"
#include "convert/hf_config.h"
#include "gguf/gguf_writer.h"

namespace fulgur {

enum class DenseArch { kQwen3, kQwen2, kLlama };

// "qwen3" / "qwen2" / "llama" (general.architecture).
const char* dense_arch_name(DenseArch arch);

// Sets the {arch}.* hyperparameter keys on `w` and returns the tensor plan. Throws fulgur::Error
// naming config.json and the field on missing or inconsistent values (e.g. num_attention_heads
// not a multiple of num_key_value_heads, hidden_size not divisible by heads without head_dim,
// unsupported rope_scaling). `has_lm_head`: whether the checkpoint holds lm_head.weight.
ArchPlan plan_dense_decoder(DenseArch arch, const HfConfig& cfg, bool has_lm_head, GgufWriter& w);

}  // namespace fulgur
