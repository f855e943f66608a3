// Block-drafter checkpoint formats (reference/dspark-dflash-spec.md §6) normalised into one
// description, so that a single planner can emit the `dflash` GGUF (gguf/dflash_keys.h).
// Every convention difference is mapped here, explicitly, per format:
//
//   format        HF architecture            layout (default)   tap ids in config       embeddings
//   DeepSpec      Qwen3DSparkModel           anchor-first       target_layer_ids (+1)   stored
//   z-lab DFlash  DFlashDraftModel           1+N                dflash_config (+1)      not stored
//   DFlash2       DFlash2DraftModel          1+N                dflash_config (+1)      not stored
//   speculators   DFlashSpeculator           1+N (field)        aux_hidden_state_ (+0)  stored, reduced vocab
//                 DSparkSpeculator, or       (field; absent:    layer_ids, HF index     + d2t offsets
//                 D*DraftModel with          speculative_tokens,
//                 transformer_layer_config   else 1+N)
//   SpecForge     DSparkDraftModel           1+N                dflash_config (+1)      optional
//   DeepSpec      Gemma4DSparkModel          anchor-first       target_layer_ids (+1)   stored, scaled
//   Gemma 4       (flat: the target's text_config; or speculators-nested, as above)
//
// The backbone is Qwen3 layers (model_type qwen3, the default) or, for Gemma4DSparkModel
// (model_type gemma4_text), Gemma 4 layers as DeepSpec / vLLM / NeMo / llama.cpp build them:
// embeddings times sqrt(hidden_size), global_head_dim heads, attention scale 1, K = V
// (attention_k_eq_v, num_global_key_value_heads) with a weightless V norm, sandwich norms,
// GELU-tanh GEGLU, a per-layer output scalar and proportional RoPE (partial_rotary_factor).
// The `dflash` GGUF describes them with llama.cpp's optional keys and tensors (dflash_keys.h).
//
// Unknown, missing or contradictory fields throw fulgur::Error naming config.json and the field.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "convert/hf_config.h"

namespace fulgur {

enum class DraftFormat { kDeepSpec, kZlabDflash, kDflash2, kSpeculators, kSpecForge };
enum class DraftBackbone { kQwen3, kGemma4 };

struct DraftSpec {
  DraftFormat format = DraftFormat::kDeepSpec;
  std::string hf_arch;  // architectures[0]
  // Backbone (one Qwen3- or Gemma-style decoder layer per draft layer).
  DraftBackbone backbone = DraftBackbone::kQwen3;
  int64_t n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0;
  // silu (SwiGLU) or gelu_pytorch_tanh (GEGLU: Gemma layers, and speculators' Qwen3 layers
  // built from a Gemma verifier's config); dflash.hidden_activation when not silu.
  std::string hidden_act = "silu";
  bool k_eq_v = false;     // Gemma: no v_proj, V is K's projection (attention_k_eq_v)
  int64_t rope_pairs = 0;  // Gemma: rotated pairs of a head (< head_dim / 2: proportional RoPE)
  int64_t n_ctx = 0;
  double rms_eps = 1e-6, rope_theta = 10000.0;
  int64_t n_vocab = 0;        // target (verifier) vocabulary
  int64_t n_vocab_draft = 0;  // rows of lm_head / markov_w2 (= n_vocab without reduced vocab)
  // Drafting.
  int64_t block_size = 0;
  std::vector<int32_t> target_layers;  // target layer INPUT indices (checkpoint ids + 1)
  int64_t target_hidden = 0;
  int64_t mask_token = -1;
  bool sample_from_anchor = true;
  bool causal = false;
  // DSpark heads.
  std::string markov_type;  // "" (none), "vanilla", "gated", "rnn"
  int64_t markov_rank = 0;
  bool confidence = false;
  bool conf_with_markov = false;
  std::string head_prefix;  // "" or "logit_head." (older SpecForge exports)
  // DFlash2.
  bool dflash2 = false;
  int64_t conv_kernel = 0, conv_group = 0, selector_rank = 0, selector_top_k = 0;
  // The base logits l -> softcap · tanh(l · logit_scale / softcap) (softcap 0: l · logit_scale),
  // from dflash_config.output_multiplier and final_logit_softcapping (dflash.logit_scale,
  // dflash.final_logit_softcapping; archs/dflash.h).
  double logit_scale = 1.0, softcap = 0.0;

  std::string describe() const;  // "Qwen3DSparkModel (hidden_size=256, ...)" for messages
};

// Whether architectures[0] of this config is a block-drafter format handled here.
bool is_draft_config(const HfConfig& cfg);

// The normalised description; `tensor_names` (the checkpoint's) resolves what only the tensors
// tell (head prefix, presence of d2t). Throws on any unknown/missing/contradictory field.
DraftSpec parse_draft_config(const HfConfig& cfg, const std::set<std::string>& tensor_names);

// What llama.cpp would read differently in the `dflash` GGUF written for `s`, or refuse, one
// message each naming the difference (the converter prints them as warnings); empty when both
// engines read the file alike.
std::vector<std::string> llamacpp_differences(const DraftSpec& s);

// The HF architecture names handled here, comma separated.
std::string supported_draft_architectures();

}  // namespace fulgur
