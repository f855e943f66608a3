// A loaded `dflash` GGUF (spec/drafters/dflash_gguf.h): hyperparameters and bound weights of a
// DFlash / DSpark / DFlash2 block drafter, checked against the target it will draft for. The
// kind is read from the tensors present, as llama.cpp does: markov_w1 => DSpark, selector_* =>
// DFlash2. Embeddings and LM head come from the draft when it has them, else from the target.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf_reader.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "model/model.h"

namespace fulgur {

enum class MarkovHead { kNone, kVanilla, kGated, kRnn };
enum class DflashKind { kDflash, kDspark, kDflash2 };

const char* dflash_kind_name(DflashKind kind);

struct DflashHparams {
  int64_t n_embd = 0, n_layer = 0, head_dim = 0;
  std::vector<int64_t> n_head, n_head_kv, n_ff;  // [n_layer]
  float rms_eps = 1e-6f;
  kernels::RopeParams rope;
  int64_t n_ctx_train = 0;
  int64_t block_size = 0;
  std::vector<int> target_layers;  // target layer INPUT indices
  int64_t target_hidden = 0;
  int32_t mask_token = 0;
  bool sample_from_anchor = true;  // anchor-first (B drafts) vs 1+N (B-1 drafts)
  bool causal = false;
  DflashKind kind = DflashKind::kDflash;
  MarkovHead markov = MarkovHead::kNone;
  int64_t markov_rank = 0;
  bool confidence = false, conf_with_markov = false;
  int64_t n_vocab = 0;        // target vocabulary
  int64_t n_vocab_draft = 0;  // rows of output / markov_w2
  // DFlash2
  int64_t conv_kernel = 0, conv_group = 0, selector_rank = 0, selector_top_k = 0;

  // Drafts one block can give: B (anchor-first) or B - 1 (1+N).
  int64_t max_drafts() const { return sample_from_anchor ? block_size : block_size - 1; }
  // Block slot of the first prediction: 0 (anchor-first) or 1 (1+N).
  int64_t first_slot() const { return sample_from_anchor ? 0 : 1; }
};

struct DflashLayer {
  const float* attn_norm = nullptr;        // [E]
  kernels::WeightView wq, wk, wv, wo;      // [H*Dh][E], [Hkv*Dh][E] x2, [E][H*Dh]
  const float* q_norm = nullptr;           // [Dh]
  const float* k_norm = nullptr;           // [Dh]
  const float* ffn_norm = nullptr;         // [E]
  kernels::WeightView gate, up, down;      // [F][E], [F][E], [E][F]
  // DFlash2 block-local convolutions: base [2][K][E] f32, projection [2*K*G][E].
  const float* attn_conv_base = nullptr;
  kernels::WeightView attn_conv_proj;
  const float* ffn_conv_base = nullptr;
  kernels::WeightView ffn_conv_proj;
};

struct DflashWeights {
  kernels::WeightView fc;              // [E][m*E_t]
  const float* enc_norm = nullptr;     // [E]
  const float* output_norm = nullptr;  // [E]
  kernels::WeightView token_embd;      // [V][E] (draft's or target's)
  kernels::WeightView output;          // [V_d][E] (draft's or target's)
  bool own_embd = false, own_output = false;
  std::vector<int32_t> d2t;            // [V_d] absolute target ids; empty = identity
  kernels::WeightView markov_w1;       // [V][r] row lookup
  kernels::WeightView markov_w2;       // [V_d][r]
  kernels::WeightView markov_gate;     // [r][E+r]
  const float* markov_gate_b = nullptr;   // [r]
  kernels::WeightView markov_joint;    // [3r][2r+E]
  const float* markov_joint_b = nullptr;  // [3r]
  kernels::WeightView conf_proj;       // [1][E(+r)]
  float conf_bias = 0.0f;
  kernels::WeightView sel_pred, sel_succ;  // [V][R]
  kernels::WeightView sel_hidden;          // [R][E]
  std::vector<DflashLayer> layers;
};

class DflashModel {
 public:
  // Loads and validates `path` against `target` (widths, tap indices, vocabulary); throws
  // fulgur::Error naming both sides of any mismatch.
  DflashModel(const std::string& path, const Model& target);

  const DflashHparams& hparams() const { return hp_; }
  const DflashWeights& weights() const { return w_; }
  const GgufReader& gguf() const { return gguf_; }

 private:
  GgufReader gguf_;
  DflashHparams hp_;
  DflashWeights w_;
};

}  // namespace fulgur
