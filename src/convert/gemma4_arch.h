// Gemma 4 text models (Gemma4ForCausalLM, and the text tower of Gemma4ForConditionalGeneration)
// as llama.cpp's converter stores them (conversion/gemma.py Gemma4Model, loaded by
// llama_model_gemma4; archs-gguf.md §3.7, §4.5, §6.2). The fields are transformers'
// (configuration_gemma4.py Gemma4TextConfig), under text_config for the multimodal class, whose
// weights are under model.language_model.* and whose vision / audio towers (model.vision_tower.*,
// model.audio_tower.*, model.embed_vision.*, model.embed_audio.*) are left out.
//
// Layers are sliding-window ("sliding_attention") or full ("full_attention") per layer_types,
// written as the bool array attention.sliding_window_pattern. The two kinds differ in:
//   head size: head_dim (key_length_swa) / global_head_dim (key_length, = rope.dimension_count);
//   KV heads: num_key_value_heads, or on full layers with attention_k_eq_v
//     num_global_key_value_heads (then attention.head_count_kv is a per-layer array);
//   V: a full layer with attention_k_eq_v has no v_proj (V is K's projection), so no attn_v;
//   RoPE: sliding layers rotate head_dim * partial_rotary_factor dims with rope_theta
//     (freq_base_swa, dimension_count_swa); full layers use "proportional" RoPE: all
//     global_head_dim dims at freq_base, with the computed tensor rope_freqs {global_head_dim/2}
//     = 1 for the first global_head_dim * partial_rotary_factor / 2 pairs and 1e30 (no rotation)
//     for the rest.
// The last num_kv_shared_layers layers own no K/V (no k_proj, v_proj, k_norm: transformers
// ignores them in a checkpoint, and so does this converter, saying so); they read the cache of the
// last KV-owning layer of their kind, which llama.cpp finds by position (the last KV-owning
// layer for a full layer, the one before it for a sliding one), so the KV-owning layers must end
// "sliding, full". With use_double_wide_mlp those layers' MLPs are 2 * intermediate_size wide
// (feed_forward_length per layer).
// Per layer: input_layernorm -> attn_norm, self_attn.{q,k,v,o}_proj -> attn_{q,k,v,output},
// q_norm / k_norm -> attn_{q,k}_norm, post_attention_layernorm -> post_attention_norm,
// pre_feedforward_layernorm -> ffn_norm, mlp.{gate,up,down}_proj -> ffn_{gate,up,down} (GELU-tanh
// gated), post_feedforward_layernorm -> post_ffw_norm, layer_scalar [1] -> layer_output_scale.
// MoE (enable_moe_block: every layer keeps its MLP and adds routed experts): router.proj ->
// ffn_gate_inp, router.scale [E] -> ffn_gate_inp.scale, router.per_expert_scale [N] ->
// ffn_down_exps.scale, experts.gate_up_proj [N, 2F, E] -> ffn_gate_up_exps {E, 2F, N},
// experts.down_proj -> ffn_down_exps, pre_feedforward_layernorm_2 -> pre_ffw_norm_2,
// post_feedforward_layernorm_{1,2} -> post_ffw_norm_{1,2}; keys expert_count, expert_used_count
// (top_k_experts), expert_feed_forward_length (moe_intermediate_size).
// Per-layer embeddings (hidden_size_per_layer_input > 0): embed_tokens_per_layer ->
// per_layer_token_embd {L * n_pl, V}, per_layer_model_projection -> per_layer_model_proj,
// per_layer_projection_norm -> per_layer_proj_norm, and per layer per_layer_input_gate -> inp_gate,
// per_layer_projection -> proj, post_per_layer_input_norm -> post_norm.
// Norm gains are stored as they are (Gemma4RMSNorm multiplies by w, not 1 + w), and the
// embedding unscaled (the sqrt(hidden_size) factor is the runtime's). The head is tied.
// What llama.cpp's gemma4 cannot run, or would run differently, is refused by name.
#pragma once

#include <set>
#include <string>

#include "convert/convert_plan.h"
#include "convert/hf_config.h"
#include "gguf/gguf_writer.h"

namespace fulgur {

// Sets general.architecture = gemma4 and the gemma4.* keys on `w`, and returns the tensor plan.
// Throws fulgur::Error naming the file and field on a missing or inconsistent value. `names`: the
// checkpoint's tensor names (the weight prefix, the towers and KV-shared K/V to leave out).
ArchPlan plan_gemma4(const HfConfig& cfg, const std::set<std::string>& names, GgufWriter& w);

// The Gemma 4 assistant (Gemma4AssistantForCausalLM; llama.cpp's Gemma4AssistantModel, arch
// gemma4-assistant): the same text model with every layer KV-shared (num_kv_shared_layers =
// num_hidden_layers: q, q_norm, o and the rest, no K/V), plus embedding_length_out =
// backbone_hidden_size (the target's width), nextn_predict_layers = block_count, and
// pre_projection [E, 2 Et] / post_projection [Et, E] -> nextn.pre_projection /
// nextn.post_projection. Ordered-embedding tensors (masked_embedding.*) are left out, as
// llama.cpp's converter does; MoE and per-layer embeddings are refused.
ArchPlan plan_gemma4_assistant(const HfConfig& cfg, const std::set<std::string>& names, GgufWriter& w);

}  // namespace fulgur
