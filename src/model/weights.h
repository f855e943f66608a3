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
  kernels::WeightView wq, wk, wv, wo;  // [H*Dh][E], [Hkv*Dh][E] x2, [E][H*Dh]
  VectorView bq, bk, bv;               // qkv_bias, else empty
  VectorView q_norm, k_norm;           // [Dh] qk_norm, else empty
};

struct SwiGluWeights {
  kernels::WeightView gate, up, down;  // [F][E], [F][E], [E][F]
};

struct MoeWeights {
  kernels::WeightView router;  // [n_expert][E]
  // The file's 3-D expert tensors, each bound as one matrix of every expert's rows one after
  // another (kernels/moe.h): gate, up [n_expert * F_exp][E], down [n_expert * E][F_exp];
  // kernels::expert_matrix() gives expert e's matrix.
  kernels::WeightView gate_exps, up_exps, down_exps;
};

// DFlash2's block-local dynamic convolution around a sublayer (reference/dspark-dflash-spec.md
// §2.1): base [2][K][E] f32 (input side, output side), proj [2*K*G][E] giving per-row deltas.
struct BlockConvWeights {
  const float* base = nullptr;
  kernels::WeightView proj;
};

struct LayerWeights {
  VectorView mixer_norm;  // [E]
  VectorView ffn_norm;    // [E]
  AttentionWeights attn;
  SwiGluWeights swiglu;
  MoeWeights moe;
  BlockConvWeights mixer_conv, ffn_conv;  // DFlash2 only (proj.data == nullptr otherwise)
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

  // Every matrix a decoded token may read, for packing at load and for byte counts.
  std::vector<kernels::WeightView*> matrices();
};

}  // namespace fulgur
