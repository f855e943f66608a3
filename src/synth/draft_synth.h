// Seeded random block-drafter checkpoints (DFlash, DSpark, DFlash2) written in every source
// format the converter reads (convert/draft_config.h), so tests go through `fulgur convert`
// exactly like downloaded drafts. Every weight is drawn from a stream keyed by its canonical
// name and the seed, so the same options give the same weights in every format.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fulgur {

struct DraftSynthOptions {
  // deepspec | zlab | dflash2 | speculators | specforge
  std::string format = "deepspec";
  std::string markov = "vanilla";  // "" (plain DFlash) | vanilla | gated | rnn
  bool confidence = true;
  bool conf_with_markov = true;
  bool sample_from_anchor = true;  // speculators only (the others have a fixed layout)
  bool zero_w2 = false;            // Markov W2 = 0 (DSpark reduces to DFlash)
  bool dflash2_identity = false;   // conv base [1, 0], zero projections, zero successor codebook
  bool logit_head_prefix = false;  // specforge: older `logit_head.` tensor names

  // qwen3 | gemma4: Gemma 4 layers (architectures Gemma4DSparkModel, model_type gemma4_text;
  // formats deepspec (flat) and speculators (nested)), head_dim being global_head_dim and
  // n_head_kv num_global_key_value_heads, with proportional RoPE over a quarter of the head.
  std::string backbone = "qwen3";
  bool k_eq_v = true;  // gemma4: attention_k_eq_v (no v_proj)
  int64_t n_embd = 256, n_layer = 1, n_head = 4, n_head_kv = 2, head_dim = 64, n_ff = 256;
  int64_t n_vocab = 0;             // target vocabulary (required)
  int64_t n_target_layers = 2;
  std::vector<int64_t> target_layer_ids = {0, 1};  // checkpoint (z-lab) convention
  int64_t block_size = 4;
  int64_t mask_token_id = 0;
  int64_t markov_rank = 16;
  int64_t draft_vocab = 0;         // speculators: reduced vocabulary (0 = full)
  int64_t conv_kernel = 2, conv_group = 16, selector_rank = 16, selector_top_k = 4;
  double rope_theta = 1000000.0;
  uint64_t seed = 1;
  // The target's embedding and LM head ([n_vocab][n_embd] each), stored by the formats that
  // keep copies (deepspec, speculators, specforge); empty = random.
  std::vector<float> embed, lm_head;
  std::string out_dir;
  // EAGLE-3 only (synth_eagle3_checkpoint): the target's width (0 = n_embd) and the layer's
  // residual taken after hidden_norm.
  int64_t target_hidden = 0;
  bool norm_before_residual = false;
};

// Writes config.json + model.safetensors into out_dir (created). Throws fulgur::Error on an
// option the chosen format cannot express.
void synth_draft_checkpoint(const DraftSynthOptions& options);

// An EAGLE-3 checkpoint (format speculators: Eagle3Speculator; specforge:
// LlamaForCausalLMEagle3) with seeded random weights: target_layer_ids are its three taps in
// the HF hidden_states convention (target layer inputs), draft_vocab a reduced vocabulary with
// d2t / t2d. Both formats hold the same values.
void synth_eagle3_checkpoint(const DraftSynthOptions& options);

}  // namespace fulgur
