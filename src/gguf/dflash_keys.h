// The GGUF contract of block drafters (DFlash, DSpark, DFlash2): llama.cpp's arch `dflash`
// (reference/llamacpp-speculative.md §2-4), plus the keys and tensors of the DSpark gated and
// rnn Markov heads, which llama.cpp cannot hold. Shared by the converter (convert/draft_*) and
// the runtime (model/archs/dflash.cpp). Header only: names, no code.
//
// Keys (all u32 unless noted; standard LLM keys under `dflash.` as for qwen3):
//   dflash.embedding_length, block_count, feed_forward_length, attention.head_count,
//   attention.head_count_kv, attention.key_length, attention.value_length,
//   attention.layer_norm_rms_epsilon (f32), rope.freq_base (f32), context_length, vocab_size
//   dflash.block_size            trained block size B (anchor + masks)
//   dflash.target_layers         i32[]: target layer INPUT indices = checkpoint target_layer_ids + 1
//   dflash.target_hidden_size    width of one tapped target row
//   tokenizer.ggml.mask_token_id the mask ("noise") token filling block slots 1..B-1
//   dflash.sample_from_anchor    bool; true = anchor-first (B drafts), false = 1+N (B-1 drafts);
//                                absent = true (dense DeepSpec), as llama.cpp reads it
//   dflash.attention.causal      bool; absent = false (non-causal in-block attention)
//   dflash.has_confidence_head   bool (informative; the runtime looks at conf_proj)
//   dflash.markov_head_type      string "vanilla" | "gated" | "rnn" (fulgur's key; absent with
//                                markov_w1 present = "vanilla", the only kind llama.cpp knows)
//   dflash.conv_kernel_size, conv_group_size, selector_rank, selector_top_k   DFlash2
//   dflash.logit_scale, final_logit_softcapping (f32)   DFlash2 base logits (refused elsewhere)
//   dflash.rope.dimension_sections  i32[4]; only [n_rot/2, 0, 0, 0] (text-only M-RoPE)
//   dflash.embedding_scale (f32)       token embeddings times it (Gemma backbone: sqrt(E))
//   dflash.attention.scale (f32)       score scale; absent = 1/sqrt(head_dim) (Gemma: 1)
//   dflash.hidden_activation (string)  silu (SwiGLU, absent) | gelu | gelu_pytorch_tanh (GEGLU)
//   (dflash.attention.sliding_window and attn_sinks tensors are refused by name)
//
// Tensors (ggml shapes, ne0 first; every 2-D weight may carry a `.scale` f32[1] sibling that
// multiplies its product):
//   fc.weight {m*E_t, E}            enc.output_norm.weight {E}       output_norm.weight {E}
//   token_embd.weight {E, V}        (optional; else the target's)
//   output.weight {E, V_d}          (optional; else the target's lm_head)
//   d2t {V_d} I64                   absolute target ids of the draft vocabulary (optional)
//   blk.N.attn_norm / attn_q / attn_k / attn_v / attn_output / attn_q_norm / attn_k_norm /
//   ffn_norm / ffn_gate / ffn_up / ffn_down .weight   (as qwen3)
//   Gemma-style layers (llama.cpp's Gemma4DSparkModel export), each optional: no attn_v (V is
//   K's projection, RMS-normed without a weight), blk.N.post_attention_norm + post_ffw_norm
//   (sandwich norms), blk.N.layer_output_scale.weight {1}, rope_freqs.weight {head_dim/2}
//   (proportional RoPE: 1 for rotated pairs, 1e30 for the others)
//   markov_w1.weight {r, V}         W1: previous target token -> r
//   markov_w2.weight {r, V_d}       W2: r -> draft-vocab logit bias
//   markov_gate.weight {E+r, r} + markov_gate.bias {r}          gated head (fulgur)
//   markov_joint.weight {2r+E, 3r} + markov_joint.bias {3r}     rnn head (fulgur)
//   conf_proj.weight {E(+r), 1} + conf_proj.bias {1}            confidence head
//   blk.N.attn_conv_base {E, K, 2}, blk.N.attn_conv_proj.weight {E, 2*K*E/g}, same ffn_conv_*
//   selector_predecessor.weight {R, V}, selector_successor.weight {R, V},
//   selector_hidden.weight {E, R}                                DFlash2
#pragma once

namespace fulgur::dflash_gguf {

inline constexpr const char* kArch = "dflash";
inline constexpr const char* kBlockSize = "dflash.block_size";
inline constexpr const char* kTargetLayers = "dflash.target_layers";
inline constexpr const char* kTargetHidden = "dflash.target_hidden_size";
inline constexpr const char* kMaskToken = "tokenizer.ggml.mask_token_id";
inline constexpr const char* kSampleFromAnchor = "dflash.sample_from_anchor";
inline constexpr const char* kCausal = "dflash.attention.causal";
inline constexpr const char* kHasConfidence = "dflash.has_confidence_head";
inline constexpr const char* kMarkovHeadType = "dflash.markov_head_type";
inline constexpr const char* kConvKernel = "dflash.conv_kernel_size";
inline constexpr const char* kConvGroup = "dflash.conv_group_size";
inline constexpr const char* kSelectorRank = "dflash.selector_rank";
inline constexpr const char* kSelectorTopK = "dflash.selector_top_k";
inline constexpr const char* kLogitScale = "dflash.logit_scale";             // f32, DFlash2
inline constexpr const char* kSoftcap = "dflash.final_logit_softcapping";    // f32, DFlash2
inline constexpr const char* kRopeSections = "dflash.rope.dimension_sections";  // i32[4]
inline constexpr const char* kEmbdScale = "dflash.embedding_scale";          // f32
inline constexpr const char* kAttnScale = "dflash.attention.scale";          // f32
inline constexpr const char* kHiddenAct = "dflash.hidden_activation";        // string

inline constexpr const char* kFc = "fc.weight";
inline constexpr const char* kEncNorm = "enc.output_norm.weight";
inline constexpr const char* kOutputNorm = "output_norm.weight";
inline constexpr const char* kTokenEmbd = "token_embd.weight";
inline constexpr const char* kOutput = "output.weight";
inline constexpr const char* kD2t = "d2t";
inline constexpr const char* kMarkovW1 = "markov_w1.weight";
inline constexpr const char* kMarkovW2 = "markov_w2.weight";
inline constexpr const char* kMarkovGate = "markov_gate.weight";
inline constexpr const char* kMarkovGateBias = "markov_gate.bias";
inline constexpr const char* kMarkovJoint = "markov_joint.weight";
inline constexpr const char* kMarkovJointBias = "markov_joint.bias";
inline constexpr const char* kConfProj = "conf_proj.weight";
inline constexpr const char* kConfBias = "conf_proj.bias";
inline constexpr const char* kSelPred = "selector_predecessor.weight";
inline constexpr const char* kSelSucc = "selector_successor.weight";
inline constexpr const char* kSelHidden = "selector_hidden.weight";
inline constexpr const char* kRopeFreqs = "rope_freqs.weight";

}  // namespace fulgur::dflash_gguf
