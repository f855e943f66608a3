#include "model/weights.h"

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "model/hparams.h"

namespace fulgur {
namespace {

class Binder {
 public:
  explicit Binder(const GgufReader& gguf) : gguf_(gguf) {}

  // A matrix of ggml shape {cols, rows} whose type matmul (or row fetch) can use.
  kernels::WeightView matrix(const std::string& name, int64_t cols, int64_t rows) const {
    const GgufTensorInfo& t = gguf_.tensor(name);
    check_shape(t, {cols, rows});
    FULGUR_CHECK(kernels::matmul_supports(t.type), gguf_.where(), ": tensor '", name,
                 "' has type ", dtype_name(t.type), ", which fulgur cannot multiply");
    kernels::WeightView w;
    w.type = t.type;
    w.data = t.data;
    w.rows = rows;
    w.cols = cols;
    w.row_stride = row_bytes(t.type, cols);
    if (const GgufTensorInfo* s = gguf_.find_tensor(name + ".scale")) {  // NVFP4 sidecar
      FULGUR_CHECK(s->type == DType::kF32 && s->n_elements() == 1, gguf_.where(), ": tensor '",
                   s->name, "' must be a single f32");
      w.scale = *reinterpret_cast<const float*>(s->data);
    }
    return w;
  }

  VectorView vector(const std::string& name, int64_t size) const {
    const GgufTensorInfo& t = gguf_.tensor(name);
    check_shape(t, {size});
    FULGUR_CHECK(t.type == DType::kF32, gguf_.where(), ": tensor '", name, "' has type ",
                 dtype_name(t.type), ", expected f32");
    return {reinterpret_cast<const float*>(t.data), size};
  }

  VectorView optional_vector(const std::string& name, int64_t size) const {
    return gguf_.find_tensor(name) != nullptr ? vector(name, size) : VectorView{};
  }

 private:
  void check_shape(const GgufTensorInfo& t, const std::vector<int64_t>& expected) const {
    const std::vector<int64_t> got = t.shape();
    if (got == expected) return;
    std::string want, have;
    for (int64_t d : expected) want += (want.empty() ? "" : ", ") + std::to_string(d);
    for (int64_t d : got) have += (have.empty() ? "" : ", ") + std::to_string(d);
    fail(gguf_.where(), ": tensor '", t.name, "' has shape {", have, "}, expected {", want, "}");
  }

  const GgufReader& gguf_;
};

}  // namespace

ModelWeights bind_weights(const GgufReader& gguf, const Hparams& hp) {
  const Binder bind(gguf);
  const int64_t E = hp.n_embd, Dh = hp.head_dim;
  ModelWeights w;
  const GgufTensorInfo& embd = gguf.tensor("token_embd.weight");
  FULGUR_CHECK(embd.n_dims == 2 && embd.ne[0] == E, gguf.where(),
               ": tensor 'token_embd.weight' must have shape {", E, ", n_vocab}");
  w.token_embd = bind.matrix("token_embd.weight", E, embd.ne[1]);
  const int64_t V = embd.ne[1];
  w.output_norm = bind.vector("output_norm.weight", E);
  w.tied_output = gguf.find_tensor("output.weight") == nullptr;
  w.output = w.tied_output ? w.token_embd : bind.matrix("output.weight", E, V);
  w.layers.resize(hp.n_layer);
  for (int64_t l = 0; l < hp.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const int64_t q_width = hp.n_head[l] * Dh, kv_width = hp.n_head_kv[l] * Dh, F = hp.n_ff[l];
    LayerWeights& L = w.layers[l];
    L.attn_norm = bind.vector(p + "attn_norm.weight", E);
    L.wq = bind.matrix(p + "attn_q.weight", E, q_width);
    L.wk = bind.matrix(p + "attn_k.weight", E, kv_width);
    L.wv = bind.matrix(p + "attn_v.weight", E, kv_width);
    L.wo = bind.matrix(p + "attn_output.weight", q_width, E);
    if (hp.qkv_bias) {
      L.bq = bind.vector(p + "attn_q.bias", q_width);
      L.bk = bind.vector(p + "attn_k.bias", kv_width);
      L.bv = bind.vector(p + "attn_v.bias", kv_width);
    }
    if (hp.qk_norm) {
      L.q_norm = bind.vector(p + "attn_q_norm.weight", Dh);
      L.k_norm = bind.vector(p + "attn_k_norm.weight", Dh);
    }
    L.ffn_norm = bind.vector(p + "ffn_norm.weight", E);
    L.w_gate = bind.matrix(p + "ffn_gate.weight", E, F);
    L.w_up = bind.matrix(p + "ffn_up.weight", E, F);
    L.w_down = bind.matrix(p + "ffn_down.weight", F, E);
  }
  return w;
}

}  // namespace fulgur
