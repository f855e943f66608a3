// The bound weights of a model: per layer, the tensors of its mixer and feed-forward kinds
// (model/desc.h), all views into the mapped GGUF (or into tiles repacked at load). Checked at
// load by the binder (model/binder.h), so the forward never meets a surprise.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/matmul.h"

namespace fulgur {

// A 1-D f32 vector (norm weight or bias) inside the mapped file.
struct VectorView {
  const float* data = nullptr;
  int64_t size = 0;
};

struct AttentionWeights {
  // wq: [H*Dh][I], or [H][2][Dh][I] with output_gate (each head's query rows, then its gate
  // rows); wk, wv: [Hkv*Dh][I]; wo: [E][H*Dh]. I = AttentionDesc::input_width, else E.
  kernels::WeightView wq, wk, wv, wo;
  VectorView bq, bk, bv;               // qkv_bias, else empty
  VectorView bo;                       // [E] out_bias, else empty
  VectorView sinks;                    // [H] sinks, else empty
  VectorView q_norm, k_norm;           // [Dh] qk_norm, else empty
};

// Gated DeltaNet (desc.h GdnDesc), C = 2*Kd + Vd conv channels.
struct GdnWeights {
  kernels::WeightView qkv;          // [C][E] attn_qkv, rows [q | k | v]
  kernels::WeightView z;            // [Vd][E] attn_gate
  kernels::WeightView beta, alpha;  // [Hv][E] ssm_beta, ssm_alpha (Qwen3.5), or
  kernels::WeightView ba;           // [Hk][2][r][E] ssm_ba (Qwen3-Next; r = Hv/Hk)
  const float* conv = nullptr;      // [K][C] f32: ssm_conv1d {K, C} made tap-major at load
  VectorView a;                     // [Hv] ssm_a = -exp(A_log)
  VectorView dt_bias;               // [Hv] ssm_dt.bias
  VectorView norm;                  // [Dv] ssm_norm, shared by the v-heads
  kernels::WeightView out;          // [E][Vd] ssm_out
};

// A dense feed-forward (model/desc.h FfnAct): gate [F][E] (SwiGLU only, else empty), up [F][E],
// down [E][F].
// Per-layer embeddings (ModelDesc::ple_width P, L layers): the model's tables, and per layer the
// branch's gate, projection and post-norm (model/layers/layers.h per_layer_inputs).
struct PerLayerEmbdWeights {
  kernels::WeightView token_embd;  // [V][L*P] per_layer_token_embd (row fetch)
  kernels::WeightView model_proj;  // [L*P][E] per_layer_model_proj
  VectorView proj_norm;            // [P] per_layer_proj_norm
};
struct PerLayerBranchWeights {
  kernels::WeightView gate;  // [P][E] inp_gate
  kernels::WeightView proj;  // [E][P] proj
  VectorView post_norm;      // [E] post_norm
};

struct FfnWeights {
  kernels::WeightView gate, up, down;
};

// Mamba2 mixer (desc.h Mamba2Desc; GGUF blk.N.ssm_*).
struct Mamba2Weights {
  kernels::WeightView in;   // [2Di + 2GN + Hs][E]: rows z, xBC, dt
  const float* conv = nullptr;  // [K][Cm] tap-major, transposed at load from ggml {K, Cm}
  VectorView conv_bias;     // [Cm], or empty (the file has none: use_conv_bias false)
  VectorView dt_bias;       // [Hs]
  VectorView a;             // [Hs] = −exp(A_log)
  VectorView d;             // [Hs] skip term
  VectorView norm;          // [Di] grouped RMSNorm weight (ggml {Di/G, G})
  kernels::WeightView out;  // [E][Di]
};

struct MoeWeights {
  kernels::WeightView router;  // [n_expert][E]
  VectorView selection_bias;   // [n_expert] exp_probs_b, when MoeDesc::selection_bias
  VectorView router_bias;      // [n_expert] ffn_gate_inp.bias, when MoeDesc::router_bias
  // The file's 3-D expert tensors, each bound as one matrix of every expert's rows one after
  // another (kernels/moe.h): gate (SwiGLU experts only), up [n_expert * F_exp][X], down
  // [n_expert * X][F_exp], X = MoeDesc::expert_io(E); kernels::expert_matrix() gives expert
  // e's matrix.
  kernels::WeightView gate_exps, up_exps, down_exps;
  // MoeDesc::expert_bias: [n_expert][F] gate (SwiGLU-like experts), [n_expert][F or 2F fused]
  // up, [n_expert][X] down; else null.
  const float* gate_exps_bias = nullptr;
  const float* up_exps_bias = nullptr;
  const float* down_exps_bias = nullptr;
  kernels::WeightView latent_down;  // [L][E], latent MoE only
  kernels::WeightView latent_up;    // [E][L], latent MoE only
  FfnWeights shared;                // ffn_{gate,up,down}_shexp, when MoeDesc::n_ff_shared > 0
  VectorView shared_gate;           // [E] ffn_gate_inp_shexp, when MoeDesc::shared_gate
  // MoeDesc::residual_branches: router input gain, the experts' input norm, and each branch's
  // output norm; MoeDesc::expert_scale: [n_expert] output scale per expert.
  VectorView router_scale, expert_norm, shared_post_norm, routed_post_norm;
  VectorView expert_scale;
};

// DFlash2's block-local dynamic convolution around a sublayer (reference/dspark-dflash-spec.md
// §2.1): base [2][K][E] f32 (input side, output side), proj [2*K*G][E] giving per-row deltas.
struct BlockConvWeights {
  const float* base = nullptr;
  kernels::WeightView proj;
};

// The per-position heads of a `dflash` draft (archs/dflash.h, dflash_heads.h).
struct DflashHeadWeights {
  kernels::WeightView markov_w1;        // [V][r] row lookup
  kernels::WeightView markov_w2;        // [V_d][r]
  kernels::WeightView markov_gate;      // [r][E+r]
  const float* markov_gate_b = nullptr; // [r]
  kernels::WeightView markov_joint;     // [3r][2r+E]
  const float* markov_joint_b = nullptr;  // [3r]
  kernels::WeightView conf_proj;        // [1][E(+r)]
  float conf_bias = 0.0f;
  kernels::WeightView sel_pred, sel_succ;  // [V][R]
  kernels::WeightView sel_hidden;          // [R][E]
};

struct LayerWeights {
  VectorView mixer_norm;  // [E]
  VectorView ffn_norm;    // [E]
  VectorView mixer_post_norm, ffn_post_norm;  // [E] LayerDesc::post_norms only
  VectorView output_scale;                    // [1] LayerDesc::output_scale only
  PerLayerBranchWeights ple;                  // ModelDesc::ple_width > 0 only
  VectorView hidden_norm; // [E] LayerDesc::eagle3_input only
  AttentionWeights attn;
  GdnWeights gdn;
  Mamba2Weights ssm;
  FfnWeights ffn;  // ffn kind kSwiGlu or kRelu2
  MoeWeights moe;
  BlockConvWeights mixer_conv, ffn_conv;  // DFlash2 only (proj.data == nullptr otherwise)
};

// The input matrix of a model with input parts (desc.h InputPart): fc [E][input_width], and the
// gain of each normed part (empty for the others).
struct InputWeights {
  kernels::WeightView fc;
  std::vector<VectorView> norms;  // [input parts]
  kernels::WeightView token_embd;  // [V][width] a token part's table when not the model's own (row fetch)
};

struct ModelWeights {
  kernels::WeightView token_embd;  // [V][E], any computable type (row fetch)
  VectorView output_norm;          // [E]
  kernels::WeightView output;      // [V_out][E]; token_embd when the file has no `output`
  bool tied_output = false;
  std::vector<LayerWeights> layers;
  // KV injection input (DFlash): c = RMSNorm(inject_fc · features) * inject_norm, the rows each
  // attention layer turns into K and V without running the layer (Context::inject_kv).
  kernels::WeightView inject_fc;  // [E][m*E_target]
  VectorView inject_norm;         // [E]
  DflashHeadWeights dflash_heads;  // `dflash` drafts with DSpark / DFlash2 heads
  InputWeights input;             // when desc.input is not empty
  // A projection of the final-normed hidden state of each output row (Context::projected_hidden):
  // the Gemma 4 assistant's nextn.post_projection back to its target's width. Empty: none.
  kernels::WeightView hidden_proj;  // [E_out][E]
  PerLayerEmbdWeights ple;        // when desc.ple_width > 0
  // f32 arrays derived from the file at load (the Gated DeltaNet and Mamba2 tap-major conv
  // kernels), which the views above point into; moving ModelWeights keeps them in place.
  std::vector<std::vector<float>> owned;

  // Every matrix a decoded token may read, for packing at load and for byte counts.
  std::vector<kernels::WeightView*> matrices();
  std::vector<const kernels::WeightView*> matrices() const;
};

}  // namespace fulgur
