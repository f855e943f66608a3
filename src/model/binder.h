// The one place GGUF tensors become weight views: every architecture (targets, draft models, the
// DFlash backbone) binds through it, so a missing tensor, a wrong shape or a type fulgur cannot
// multiply is always refused the same way, naming the file and the tensor. Also the binding of
// each layer kind's tensors under llama.cpp's names, shared by the archs that use the kind.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/desc.h"
#include "model/weights.h"

namespace fulgur {

class GgufReader;
struct GgufTensorInfo;

class Binder {
 public:
  explicit Binder(const GgufReader& gguf) : gguf_(gguf) {}

  const GgufReader& gguf() const { return gguf_; }
  bool has(const std::string& name) const;

  // A matrix of ggml shape {cols, rows} whose type matmul (or row fetch) can use; cols or rows
  // < 0 take the file's value. Picks up an NVFP4 `.scale` sibling.
  kernels::WeightView matrix(const std::string& name, int64_t cols, int64_t rows) const;
  // A 3-D tensor {cols, rows, n_expert} of n_expert matrices {cols, rows}, as one matrix of
  // n_expert * rows rows (kernels/moe.h).
  kernels::WeightView experts(const std::string& name, int64_t cols, int64_t rows,
                              int64_t n_expert) const;
  // An f32 tensor of exactly this ggml shape.
  const float* f32(const std::string& name, const std::vector<int64_t>& shape) const;
  VectorView vector(const std::string& name, int64_t size) const;
  VectorView optional_vector(const std::string& name, int64_t size) const;

  // A causal conv's {K, C} f32 kernel, transposed into `tap_major` as the [K][C] the kernels
  // read (it must outlive the weights, e.g. in ModelWeights::owned).
  const float* tap_major_conv(const std::string& name, int64_t K, int64_t C,
                              std::vector<float>& tap_major) const;

  // The kinds' tensors under llama.cpp's names, `p` = "blk.N.".
  AttentionWeights attention(const std::string& p, const AttentionDesc& d, int64_t n_embd) const;
  // Gated DeltaNet; `conv_tap_major` receives the conv kernel (see tap_major_conv).
  GdnWeights gated_delta_net(const std::string& p, const GdnDesc& d, int64_t n_embd,
                             std::vector<float>& conv_tap_major) const;
  // ffn_gate{suffix} (SwiGLU only), ffn_up{suffix}, ffn_down{suffix} of width n_ff: suffix ""
  // for a layer's feed-forward, "_shexp" for a MoE's shared expert.
  FfnWeights dense_ffn(const std::string& p, FfnAct act, int64_t n_ff, int64_t n_embd,
                       const std::string& suffix = "") const;
  // ssm_in, ssm_conv1d (+ bias), ssm_dt.bias, ssm_a, ssm_d, ssm_norm, ssm_out. The conv kernel goes
  // to `conv_tap_major` (see tap_major_conv).
  Mamba2Weights mamba2(const std::string& p, const Mamba2Desc& d, int64_t n_embd,
                       std::vector<float>& conv_tap_major) const;
  // ffn_gate_inp, and as the description asks exp_probs_b, ffn_latent_{down,up}, the expert
  // stacks ffn_{gate,up,down}_exps and the shared expert ffn_{gate,up,down}_shexp with
  // ffn_gate_inp_shexp.
  MoeWeights moe(const std::string& p, const MoeDesc& d, int64_t n_embd) const;

 private:
  const GgufTensorInfo& tensor(const std::string& name) const;
  kernels::WeightView view(const GgufTensorInfo& t, const std::string& name, int64_t cols,
                           int64_t rows) const;
  void check_shape(const GgufTensorInfo& t, const std::vector<int64_t>& expected) const;

  const GgufReader& gguf_;
};

}  // namespace fulgur
