// gpt-oss (GptOssForCausalLM; transformers' configuration_gpt_oss.py) as llama.cpp's converter
// stores it (conversion/gpt_oss.py, loaded by llama.cpp's `gpt-oss` arch): the keys of the
// `gpt-oss` GGUF and its tensor list.
//   keys: the decoder's (feed_forward_length = intermediate_size), expert_count
//     (num_local_experts), expert_used_count (num_experts_per_tok), expert_feed_forward_length
//     (intermediate_size), attention.sliding_window, the YaRN rope.scaling.* keys; layer_types
//     must alternate sliding / full from layer 0, the only pattern llama.cpp's loader assumes
//     without a key (load_swa_pattern(2)).
//   per layer: input_layernorm -> attn_norm, self_attn.{q,k,v,o}_proj (+ .bias) ->
//     attn_{q,k,v,output}, self_attn.sinks -> attn_sinks.weight, post_attention_layernorm ->
//     post_attention_norm, mlp.router (+ .bias) -> ffn_gate_inp, and the experts
//     ffn_{gate,up,down}_exps.{weight,bias}.
// The experts have no checkpoint source in the plan: transformers stores them transposed
// (gate_up_proj [N, E, 2F] with gate and up interleaved by column, down_proj [N, F, E]) or as
// MXFP4 blocks and scales, neither of which the plan's row parts (convert_plan.h) can express.
// So `fulgur convert` does not offer GptOssForCausalLM yet; `fulgur synth` writes these tensors
// from the plan's names and shapes alone (it draws values per GGUF row).
#pragma once

#include "convert/convert_plan.h"
#include "convert/hf_config.h"
#include "gguf/gguf_writer.h"

namespace fulgur {

// Sets general.architecture = gpt-oss and the gpt-oss.* keys on `w`, and returns the plan.
// Throws fulgur::Error naming the config field on a missing or inconsistent value.
ArchPlan plan_gpt_oss(const HfConfig& cfg, GgufWriter& w);

}  // namespace fulgur
