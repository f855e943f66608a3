// The weight binding table of the dense decoder (qwen3 / qwen2 / llama): every expected tensor
// with its shape and allowed types, checked at load so the forward never meets a surprise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/matmul.h"

namespace fulgur {

class GgufReader;
struct Hparams;

// A 1-D f32 vector (norm weight or bias) inside the mapped file.
struct VectorView {
  const float* data = nullptr;
  int64_t size = 0;
};

struct LayerWeights {
  VectorView attn_norm;                   // [E]
  kernels::WeightView wq, wk, wv, wo;     // [H*Dh][E], [Hkv*Dh][E] x2, [E][H*Dh]
  VectorView bq, bk, bv;                  // qwen2 biases, else empty
  VectorView q_norm, k_norm;              // [Dh] (qwen3), else empty
  VectorView ffn_norm;                    // [E]
  kernels::WeightView w_gate, w_up, w_down;  // [F][E], [F][E], [E][F]
};

struct ModelWeights {
  kernels::WeightView token_embd;  // [V][E], any computable type (row fetch)
  VectorView output_norm;          // [E]
  kernels::WeightView output;      // [V][E]; token_embd when the file has no `output`
  bool tied_output = false;
  std::vector<LayerWeights> layers;
};

// Binds every tensor; a missing, mis-shaped or wrongly typed tensor is an error naming it.
ModelWeights bind_weights(const GgufReader& gguf, const Hparams& hp);

}  // namespace fulgur
