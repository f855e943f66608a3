// A model described as a list of layers (DESIGN §2): each layer has a mixer kind and a
// feed-forward kind, with its own dimensions. Each kind is implemented once (model/layers/) and
// shared by every architecture that uses it: targets, draft models and the DFlash backbone. An
// architecture (model/archs/) only reads its GGUF keys into this description and binds its
// tensors.
//
// Every layer runs
//   if mixer != kNone: x += mixer(RMSNorm(x) * mixer_norm)
//   if ffn   != kNone: x += ffn(RMSNorm(x) * ffn_norm)
// which covers Qwen3 (attention + SwiGLU), Qwen3-MoE (attention + MoE), Nemotron-H (exactly one
// of Mamba2 / attention / ReLU² MLP / MoE per block: a mixer-only or ffn-only layer) and the
// Gated-DeltaNet hybrids (Gated DeltaNet or gated attention, then SwiGLU or MoE). A model whose
// input row is more than a token embedding (an MTP block: eh_proj over [norm(embedding) ;
// norm(target hidden)]) describes it in `input`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/moe.h"
#include "kernels/ops.h"
#include "kernels/recurrent.h"

namespace fulgur {

class GgufReader;

enum class OutputNorm : uint8_t { kRms, kLayerNorm };
enum class MixerKind : uint8_t { kNone, kAttention, kGatedDeltaNet, kMamba2 };
// kSwiGlu, kRelu2 and kGeGlu are dense feed-forwards (FfnAct says which activation).
enum class FfnKind : uint8_t { kNone, kSwiGlu, kRelu2, kGeGlu, kMoe };

// The activation of a dense feed-forward: a layer's own, a MoE's experts, a shared expert.
enum class FfnAct : uint8_t {
  kSwiGlu,  // down(silu(gate·h) ⊙ up·h)       (Qwen; tensors gate, up, down)
  kRelu2,   // down(relu(up·h)²)               (Nemotron-H; tensors up, down)
  kGeGlu,   // down(gelu(gate·h) ⊙ up·h)       (Gemma, tanh GELU; tensors gate, up, down)
  // down(swiglu_oai(gate·h, up·h)): gate clamped above and up clamped both ways at 7, then
  // g·sigmoid(1.702 g)·(u + 1) (gpt-oss; kernels/ops.h swiglu_oai; tensors gate, up, down)
  kSwiGluOai,
};

// Whether the activation has a gate projection (SwiGLU, GEGLU).
inline bool gated_act(FfnAct act) { return act != FfnAct::kRelu2; }

const char* mixer_kind_name(MixerKind kind);
const char* ffn_kind_name(FfnKind kind);

struct AttentionDesc {
  int64_t n_head = 0, n_head_kv = 0, head_dim = 0;
  bool rope = true;      // rotary embedding of q and k (model-level RopeParams)
  bool qk_norm = false;  // per-head RMSNorm of q and k before RoPE (qwen3)
  bool qkv_bias = false; // biases on the q, k and v projections (qwen2, gpt-oss)
  bool out_bias = false; // a bias on the output projection (attn_output.bias; gpt-oss)
  // A learned logit per head that joins the softmax denominator only (attn_sinks; gpt-oss):
  // a head may put weight on "nothing" instead of on the visible cells.
  bool sinks = false;
  // false: a row sees every cell of its sequence, later positions included (the DFlash block,
  // whose rows attend to each other both ways).
  bool causal = true;
  // attn_q holds, per head, head_dim query rows then head_dim gate rows, and the attention output
  // is multiplied by sigmoid(gate) before attn_output (Qwen3-Next / Qwen3.5, archs-gguf.md §4.3).
  bool output_gate = false;
  // Columns of attn_q/k/v: 0 = n_embd; EAGLE-3's layer reads 2 n_embd (LayerDesc::eagle3_input).
  int64_t input_width = 0;
  // Sliding-window attention: a row sees the cells of the last `window` positions (its own
  // included); 0 = every earlier position. Such layers keep their K/V in a window-bounded cache.
  int32_t window = 0;
  float kq_scale = 0.0f;   // score scale; 0 = 1/sqrt(head_dim) (Gemma 4: 1)
  bool v_norm = false;     // V is RMS-normed per head without a weight (Gemma 4)
  bool v_from_k = false;   // no attn_v: V is K's projection before K's norm (Gemma 4 k_eq_v)
  // Reads the cache of layer kv_layer (an earlier layer of the same window) and owns none, so
  // it projects only q (Gemma 4's KV-shared layers); -1 = its own K and V.
  int64_t kv_layer = -1;
  // kv_layer is a layer of another model's context (Context::read_kv_from), not of this model:
  // the Gemma 4 assistant's layers own no cache and attend to its target's last sliding / full
  // layer.
  bool kv_external = false;
  int rope_table = 0;  // which of ModelDesc::ropes rotates q and k

  bool owns_kv() const { return kv_layer < 0; }

  int64_t q_width() const { return n_head * head_dim; }
  int64_t kv_width() const { return n_head_kv * head_dim; }
};

// Gated DeltaNet (archs-gguf.md §3.4, §4.3): fused q/k/v projection, causal conv with state,
// per-head L2 norm of q and k, the gated delta rule with a recurrent state per v-head, gated
// RMSNorm by z, output projection. β and α come from ssm_beta / ssm_alpha (Qwen3.5) or from one
// fused ssm_ba grouped per k-head (Qwen3-Next).
struct GdnDesc {
  int64_t n_k_heads = 0, k_dim = 0;  // Hk (ssm.group_count), Dk (ssm.state_size)
  int64_t n_v_heads = 0, v_dim = 0;  // Hv (ssm.time_step_rank), Dv (ssm.inner_size / Hv)
  int64_t conv_kernel = 0;           // K (ssm.conv_kernel)
  kernels::GdnHeadMap head_map = kernels::GdnHeadMap::kTiled;
  bool fused_ba = false;

  int64_t qk_width() const { return n_k_heads * k_dim; }  // Kd
  int64_t v_width() const { return n_v_heads * v_dim; }   // Vd
  int64_t conv_channels() const { return 2 * qk_width() + v_width(); }  // C = [q | k | v]
};

// Mamba2 mixer (archs-gguf.md §3.6, §4.4): in-projection to z (Di), xBC (Di + 2GN) and dt (Hs),
// causal conv over xBC with silu, selective scan per head, y ⊙ silu(z), grouped RMSNorm, output
// projection. Recurrent state per sequence: the conv's last K−1 inputs and [Hs][P][N].
struct Mamba2Desc {
  int64_t d_inner = 0;      // Di = n_heads * head_dim
  int64_t n_heads = 0;      // Hs (time_step_rank)
  int64_t head_dim = 0;     // P
  int64_t n_groups = 0;     // G, for B, C and the gated norm
  int64_t d_state = 0;      // N
  int64_t conv_kernel = 0;  // K

  int64_t conv_channels() const { return d_inner + 2 * n_groups * d_state; }  // Cm: x, B, C
  int64_t in_width() const { return d_inner + conv_channels() + n_heads; }    // z, xBC, dt
  int64_t conv_state() const { return (conv_kernel - 1) * conv_channels(); }  // floats
  int64_t ssm_state() const { return n_heads * head_dim * d_state; }          // floats
};

// A mixture of experts (archs-gguf.md §4.0 "Generic MoE", §4.2, §4.4): router, gating, top-k
// (optionally chosen on probabilities + a selection bias), renormalisation and scale; each chosen
// expert a dense feed-forward of its own activation, on h or on a latent projection of h; and
// an optional shared expert on h, optionally gated per row by sigmoid(gate_inp_shexp · h).
struct MoeDesc {
  int64_t n_expert = 0;       // experts in the layer
  int64_t n_expert_used = 0;  // k of the top-k routing
  int64_t n_ff_exp = 0;       // width of one expert's FFN
  FfnAct expert_act = FfnAct::kSwiGlu;
  kernels::MoeGating gating = kernels::MoeGating::kSoftmax;
  bool selection_bias = false;  // exp_probs_b: added to the probabilities for choosing only
  // ffn_gate_inp.bias: added to the router logits before gating (so to choosing and weights).
  bool router_bias = false;
  // ffn_{gate,up,down}_exps.bias: each expert's projections have biases ({F, n_expert} for gate
  // and up, {X, n_expert} for down), added before the activation and before the weighting.
  bool expert_bias = false;
  bool norm_weights = false;  // renormalise the top-k weights to sum 1
  float weights_scale = 1.0f; // applied after renormalisation
  // Latent MoE: the experts read latent_down · h [L] and their weighted sum goes through
  // latent_up back to [E]; 0 = the experts read h.
  int64_t latent = 0;
  int64_t n_ff_shared = 0;    // shared expert's width; 0 = none
  FfnAct shared_act = FfnAct::kSwiGlu;
  bool shared_gate = false;   // the shared expert's output scaled by sigmoid(gate_inp_shexp · h)
  // Gemma 4: the "shared expert" is the layer's own feed-forward (ffn_gate/up/down), the router
  // reads RMSNorm(x)/sqrt(E) ⊙ ffn_gate_inp.scale and the experts RMSNorm(x)·pre_ffw_norm_2,
  // where x is the residual stream (not the sublayer's normed input h), and each branch's output
  // is RMS-normed with its own gain (post_ffw_norm_1 for the dense one, post_ffw_norm_2 for the
  // experts) before the two are added.
  bool residual_branches = false;
  bool fused_gate_up = false;  // ffn_gate_up_exps: each expert's gate rows, then its up rows
  bool expert_scale = false;   // ffn_down_exps.scale [n_expert] multiplies each expert's output

  // Width of the experts' input and output rows.
  int64_t expert_io(int64_t n_embd) const { return latent > 0 ? latent : n_embd; }
};

struct LayerDesc {
  MixerKind mixer = MixerKind::kNone;
  FfnKind ffn = FfnKind::kNone;
  AttentionDesc attn;  // mixer == kAttention
  GdnDesc gdn;         // mixer == kGatedDeltaNet
  Mamba2Desc ssm;      // mixer == kMamba2
  int64_t n_ff = 0;    // ffn == kSwiGlu, kRelu2
  MoeDesc moe;         // ffn == kMoe
  // EAGLE-3's decoder layer (reference/llamacpp-speculative.md §6): the attention mixer reads
  // [RMSNorm(token embedding) * mixer_norm ; RMSNorm(x) * hidden_norm] (attn.input_width =
  // 2 n_embd), and the residual continues from x, or from RMSNorm(x) * hidden_norm with
  // norm_before_residual. The FFN sublayer is the ordinary one.
  bool eagle3_input = false;
  bool norm_before_residual = false;
  // Sandwich norms (Gemma): each sublayer's output is RMS-normed with its own gain
  // (post_attention_norm, post_ffw_norm) before the residual add.
  bool post_norms = false;
  // The layer's output x is multiplied by a scalar (layer_output_scale) after both sublayers.
  bool output_scale = false;
};

// The activation of a dense feed-forward kind (kSwiGlu, kRelu2 or kGeGlu).
FfnAct dense_ffn_act(FfnKind kind);
bool is_dense_ffn(FfnKind kind);

// One part of a model's input row when it is more than the token's embedding: the token's
// embedding (width n_embd) or `width` floats of the batch's aux rows (Batch::aux), RMS-normed
// with the part's own gain when `norm`. The parts are concatenated and projected to n_embd by
// the model's input matrix (weights.h InputWeights): an MTP block's eh_proj over
// [enorm(embedding) ; hnorm(target hidden)], EAGLE-3's fc over the concatenated target taps.
// A token part reads InputWeights::token_embd when it is bound (another model's table: the
// Gemma 4 assistant embeds with its target's), else the model's own, times `scale`.
struct InputPart {
  bool token = false;
  int64_t width = 0;
  bool norm = false;
  float scale = 1.0f;
};

struct ModelDesc {
  std::string arch;  // general.architecture
  int64_t n_embd = 0;
  int64_t n_vocab = 0;  // rows of the token embedding
  int64_t n_ctx_train = 0;
  float rms_eps = 1e-6f;
  kernels::RopeParams rope;  // n_rot, mode and base of the rotary layers (AttentionDesc::rope_table 0)
  // Further RoPE tables for layers with their own rotary dims, base or factors (Gemma 4's
  // sliding layers): AttentionDesc::rope_table i >= 1 is extra_ropes[i - 1].
  std::vector<kernels::RopeParams> extra_ropes;
  float embd_scale = 1.0f;     // token embeddings are multiplied by it (Gemma: sqrt(n_embd))
  float logit_softcap = 0.0f;  // logits c·tanh(logits/c) when c > 0 (Gemma's final soft-capping)
  // Per-layer embeddings (Gemma 4 E-series): width of each layer's extra input; 0 = none
  // (weights.h PerLayerEmbdWeights).
  int64_t ple_width = 0;
  std::vector<LayerDesc> layers;
  // DFlash2's block-local convolution around every sublayer (weights.h BlockConvWeights):
  // taps per side and channels per dynamic coefficient; 0 = none.
  int64_t block_conv_kernel = 0, block_conv_group = 0;
  // Empty: the input row is the token's embedding (or Batch::embd); else see InputPart.
  std::vector<InputPart> input;
  // MTP (NextN) blocks the file holds after these layers (llama.cpp's nextn_predict_layers);
  // they are not in `layers`: ModelOptions::nextn loads them as a model of their own.
  int64_t n_nextn = 0;
  // The final norm before the output head: RMSNorm, or LayerNorm without bias (mean removed,
  // then divided by the standard deviation; Nemotron-H's MTP final_layernorm, llama.cpp's
  // LLM_NORM), both with rms_eps and the output_norm gain.
  OutputNorm output_norm = OutputNorm::kRms;
  // An MTP model only: the hidden row it pairs with each token is the final norm's output (the
  // target's output_norm, its own output_norm in a chain: tap n_layer + 1) rather than the
  // residual entering that norm (tap n_layer). llama.cpp's nemotron_h_moe exports h_nextn after
  // output_norm and its MTP graph after final_layernorm.
  bool pairs_normed_hidden = false;

  int64_t n_layer() const { return static_cast<int64_t>(layers.size()); }
  const kernels::RopeParams& rope_of(const AttentionDesc& a) const {
    return a.rope_table == 0 ? rope : extra_ropes[static_cast<size_t>(a.rope_table - 1)];
  }
  int64_t n_rope_tables() const { return 1 + static_cast<int64_t>(extra_ropes.size()); }
  bool has(MixerKind kind) const;
  bool has(FfnKind kind) const;
  // Largest widths over the layers, for scratch sized once per context.
  int64_t max_q_width() const;
  int64_t max_kv_width() const;
  int64_t max_ff() const;           // dense FFN, one expert and a shared expert
  bool uses_rope() const;           // some attention layer rotates q and k
  int64_t max_expert_used() const;
  int64_t max_expert_count() const;
  // KV heads and head dims of every layer that keeps K and V with the given window (0 for the
  // others): what each KV cache allocates.
  std::vector<int64_t> kv_heads(int32_t window) const;
  std::vector<int64_t> kv_head_dims(int32_t window) const;
  int32_t max_window() const;  // largest sliding window of an attention layer (0 = none)
  int64_t input_width() const;  // floats of the concatenated input parts (0: no input matrix)
  int64_t aux_width() const;    // floats of Batch::aux per row (the non-token parts)
};

// A scalar-or-per-layer integer key (llama.cpp's get_key_or_arr): a scalar applies to every
// layer, an array must have exactly n_layer entries. at() of a layer out of range fails naming
// the key.
class PerLayerKey {
 public:
  // Missing key: every layer gets `fallback`, or, when fallback < 0, an error naming the key.
  PerLayerKey(const GgufReader& gguf, std::string key, int64_t n_layer, int64_t fallback);

  int64_t at(int64_t layer) const;
  bool present() const { return present_; }
  const std::string& key() const { return key_; }

 private:
  std::string key_;
  std::vector<int64_t> values_;
  bool present_ = false;
};

}  // namespace fulgur
