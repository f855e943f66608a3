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
//     post_attention_norm, mlp.router (+ .bias) -> ffn_gate_inp, and the experts, which
//     transformers stores [in, out] with gate and up interleaved by column (as llama.cpp's
//     converter reads them: transposed, then even / odd rows), read by strided parts
//     (convert_plan.h): mlp.experts.gate_up_proj [N, E, 2F] -> ffn_gate_exps / ffn_up_exps
//     {E, F, N}, gate_up_proj_bias [N, 2F] -> ffn_{gate,up}_exps.bias {F, N}, down_proj
//     [N, F, E] -> ffn_down_exps {F, E, N}, down_proj_bias [N, E] -> ffn_down_exps.bias.
// The released checkpoints store the experts' weights in MXFP4 (convert/mxfp4_checkpoint.h) as
// out x in: gate_up_proj_blocks / _scales stand for [N, 2F, E] whose rows 2f / 2f + 1 are gate /
// up row f, down_proj_blocks / _scales for [N, E, F] (as llama.cpp's converter reads them:
// generate_extra_tensors, repack_mxfp4). Each of gate_up_proj and down_proj is planned in the
// form the checkpoint holds it; the rows are repacked into ggml MXFP4 blocks or dequantized as
// checkpoint_tensor_type decides (convert_plan.h).
#pragma once

#include <set>
#include <string>

#include "convert/convert_plan.h"
#include "convert/hf_config.h"
#include "gguf/gguf_writer.h"

namespace fulgur {

// Sets general.architecture = gpt-oss and the gpt-oss.* keys on `w`, and returns the plan.
// Throws fulgur::Error naming the config field on a missing or inconsistent value. `names`: the
// checkpoint's tensor names (planning_names: which form each expert weight is in).
ArchPlan plan_gpt_oss(const HfConfig& cfg, const std::set<std::string>& names, GgufWriter& w);

}  // namespace fulgur
