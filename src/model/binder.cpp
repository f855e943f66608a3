#include "model/binder.h"

#include <cstring>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "kernels/recurrent.h"

namespace fulgur {
namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "{";
  for (size_t i = 0; i < s.size(); ++i) out += cat(i ? ", " : "", s[i]);
  return out + "}";
}

// llama.cpp names a weight's NVFP4 per-tensor scale by replacing the `weight` suffix:
// blk.0.attn_q.weight -> blk.0.attn_q.scale.
std::string scale_name(const std::string& weight_name) {
  const std::string base = weight_name.ends_with(".weight")
                               ? weight_name.substr(0, weight_name.size() - 7)
                               : weight_name;
  return base + ".scale";
}

}  // namespace

bool Binder::has(const std::string& name) const { return gguf_.find_tensor(name) != nullptr; }

const GgufTensorInfo& Binder::tensor(const std::string& name) const { return gguf_.tensor(name); }

void Binder::check_shape(const GgufTensorInfo& t, const std::vector<int64_t>& expected) const {
  const std::vector<int64_t> got = t.shape();
  bool ok = got.size() == expected.size();
  for (size_t i = 0; ok && i < got.size(); ++i) ok = expected[i] < 0 || got[i] == expected[i];
  FULGUR_CHECK(ok, gguf_.where(), ": tensor '", t.name, "' has shape ", shape_str(got),
               ", expected ", shape_str(expected));
}

kernels::WeightView Binder::view(const GgufTensorInfo& t, const std::string& name, int64_t cols,
                                 int64_t rows) const {
  FULGUR_CHECK(kernels::matmul_supports(t.type), gguf_.where(), ": tensor '", name,
               "' has type ", dtype_name(t.type), ", which fulgur cannot multiply");
  kernels::WeightView w;
  w.type = t.type;
  w.data = t.data;
  w.rows = rows;
  w.cols = cols;
  w.row_stride = row_bytes(t.type, cols);
  // A `.scale` of more than one value is not a per-tensor scale but a tensor of its own (Gemma
  // 4's ffn_gate_inp.scale, ffn_down_exps.scale), bound by the kind that uses it.
  const GgufTensorInfo* s = gguf_.find_tensor(scale_name(name));
  if (s != nullptr && (s->n_elements() == 1 || t.type == DType::kNVFP4)) {
    FULGUR_CHECK(s->type == DType::kF32 && s->n_elements() == 1, gguf_.where(), ": tensor '",
                 s->name, "' must be a single f32");
    std::memcpy(&w.scale, s->data, sizeof(float));
  }
  return w;
}

kernels::WeightView Binder::matrix(const std::string& name, int64_t cols, int64_t rows) const {
  const GgufTensorInfo& t = tensor(name);
  check_shape(t, {cols, rows});
  return view(t, name, t.ne[0], t.ne[1]);
}

kernels::WeightView Binder::experts(const std::string& name, int64_t cols, int64_t rows,
                                    int64_t n_expert) const {
  const GgufTensorInfo& t = tensor(name);
  check_shape(t, {cols, rows, n_expert});
  return view(t, name, cols, rows * n_expert);
}

const float* Binder::f32(const std::string& name, const std::vector<int64_t>& shape) const {
  const GgufTensorInfo& t = tensor(name);
  check_shape(t, shape);
  FULGUR_CHECK(t.type == DType::kF32, gguf_.where(), ": tensor '", name, "' has type ",
               dtype_name(t.type), ", expected f32");
  return reinterpret_cast<const float*>(t.data);
}

VectorView Binder::vector(const std::string& name, int64_t size) const {
  return {f32(name, {size}), size};
}

VectorView Binder::optional_vector(const std::string& name, int64_t size) const {
  return has(name) ? vector(name, size) : VectorView{};
}

AttentionWeights Binder::attention(const std::string& p, const AttentionDesc& d,
                                   int64_t n_embd) const {
  const int64_t E = n_embd, q_width = d.q_width(), kv_width = d.kv_width();
  const int64_t I = d.input_width > 0 ? d.input_width : E;
  AttentionWeights a;
  a.wq = matrix(p + "attn_q.weight", I, d.output_gate ? 2 * q_width : q_width);
  if (d.owns_kv()) {
    a.wk = matrix(p + "attn_k.weight", I, kv_width);
    if (!d.v_from_k) a.wv = matrix(p + "attn_v.weight", I, kv_width);
  }
  a.wo = matrix(p + "attn_output.weight", q_width, E);
  if (d.qkv_bias) {
    a.bq = vector(p + "attn_q.bias", q_width);
    a.bk = vector(p + "attn_k.bias", kv_width);
    a.bv = vector(p + "attn_v.bias", kv_width);
  }
  if (d.out_bias) a.bo = vector(p + "attn_output.bias", E);
  if (d.sinks) a.sinks = vector(p + "attn_sinks.weight", d.n_head);
  if (d.qk_norm) {
    a.q_norm = vector(p + "attn_q_norm.weight", d.head_dim);
    if (d.owns_kv()) a.k_norm = vector(p + "attn_k_norm.weight", d.head_dim);
  }
  return a;
}

const float* Binder::tap_major_conv(const std::string& name, int64_t K, int64_t C,
                                    std::vector<float>& tap_major) const {
  tap_major.resize(static_cast<size_t>(K * C));
  kernels::conv1d_tap_major(f32(name, {K, C}), C, K, tap_major.data());
  return tap_major.data();
}

GdnWeights Binder::gated_delta_net(const std::string& p, const GdnDesc& d, int64_t n_embd,
                                   std::vector<float>& conv_tap_major) const {
  const int64_t E = n_embd, Hv = d.n_v_heads, C = d.conv_channels(), K = d.conv_kernel;
  GdnWeights g;
  g.qkv = matrix(p + "attn_qkv.weight", E, C);
  g.z = matrix(p + "attn_gate.weight", E, d.v_width());
  if (d.fused_ba) {
    g.ba = matrix(p + "ssm_ba.weight", E, 2 * Hv);
  } else {
    g.beta = matrix(p + "ssm_beta.weight", E, Hv);
    g.alpha = matrix(p + "ssm_alpha.weight", E, Hv);
  }
  g.conv = tap_major_conv(p + "ssm_conv1d.weight", K, C, conv_tap_major);
  g.a = vector(p + "ssm_a", Hv);
  g.dt_bias = vector(p + "ssm_dt.bias", Hv);
  g.norm = vector(p + "ssm_norm.weight", d.v_dim);
  g.out = matrix(p + "ssm_out.weight", d.v_width(), E);
  return g;
}

FfnWeights Binder::dense_ffn(const std::string& p, FfnAct act, int64_t n_ff, int64_t n_embd,
                             const std::string& suffix) const {
  FfnWeights f;
  if (gated_act(act)) f.gate = matrix(p + "ffn_gate" + suffix + ".weight", n_embd, n_ff);
  f.up = matrix(p + "ffn_up" + suffix + ".weight", n_embd, n_ff);
  f.down = matrix(p + "ffn_down" + suffix + ".weight", n_ff, n_embd);
  return f;
}

Mamba2Weights Binder::mamba2(const std::string& p, const Mamba2Desc& d, int64_t n_embd,
                             std::vector<float>& conv_tap_major) const {
  const int64_t E = n_embd, Cm = d.conv_channels(), Hs = d.n_heads, K = d.conv_kernel;
  Mamba2Weights m;
  m.in = matrix(p + "ssm_in.weight", E, d.in_width());
  m.conv = tap_major_conv(p + "ssm_conv1d.weight", K, Cm, conv_tap_major);
  m.conv_bias = optional_vector(p + "ssm_conv1d.bias", Cm);
  m.dt_bias = vector(p + "ssm_dt.bias", Hs);
  m.a = {f32(p + "ssm_a", {1, Hs}), Hs};
  m.d = {f32(p + "ssm_d", {1, Hs}), Hs};
  m.norm = {f32(p + "ssm_norm.weight", {d.d_inner / d.n_groups, d.n_groups}), d.d_inner};
  m.out = matrix(p + "ssm_out.weight", d.d_inner, E);
  return m;
}

MoeWeights Binder::moe(const std::string& p, const MoeDesc& d, int64_t n_embd) const {
  const int64_t E = n_embd, X = d.expert_io(E), F = d.n_ff_exp;
  MoeWeights m;
  m.router = matrix(p + "ffn_gate_inp.weight", E, d.n_expert);
  if (d.selection_bias) m.selection_bias = vector(p + "exp_probs_b.bias", d.n_expert);
  if (d.router_bias) m.router_bias = vector(p + "ffn_gate_inp.bias", d.n_expert);
  if (d.latent > 0) {
    m.latent_down = matrix(p + "ffn_latent_down.weight", E, X);
    m.latent_up = matrix(p + "ffn_latent_up.weight", X, E);
  }
  if (d.fused_gate_up) {
    // One matrix of 2F rows per expert; the activation splits each row into gate and up.
    m.up_exps = experts(p + "ffn_gate_up_exps.weight", X, 2 * F, d.n_expert);
  } else {
    if (gated_act(d.expert_act)) m.gate_exps = experts(p + "ffn_gate_exps.weight", X, F, d.n_expert);
    m.up_exps = experts(p + "ffn_up_exps.weight", X, F, d.n_expert);
  }
  m.down_exps = experts(p + "ffn_down_exps.weight", F, X, d.n_expert);
  if (d.expert_bias) {
    if (d.fused_gate_up) {
      m.up_exps_bias = f32(p + "ffn_gate_up_exps.bias", {2 * F, d.n_expert});
    } else {
      if (gated_act(d.expert_act)) m.gate_exps_bias = f32(p + "ffn_gate_exps.bias", {F, d.n_expert});
      m.up_exps_bias = f32(p + "ffn_up_exps.bias", {F, d.n_expert});
    }
    m.down_exps_bias = f32(p + "ffn_down_exps.bias", {X, d.n_expert});
  }
  if (d.n_ff_shared > 0) {
    m.shared = dense_ffn(p, d.shared_act, d.n_ff_shared, E, d.residual_branches ? "" : "_shexp");
  }
  if (d.shared_gate) m.shared_gate = vector(p + "ffn_gate_inp_shexp.weight", E);
  if (d.residual_branches) {
    m.router_scale = vector(p + "ffn_gate_inp.scale", E);
    m.expert_norm = vector(p + "pre_ffw_norm_2.weight", E);
    m.shared_post_norm = vector(p + "post_ffw_norm_1.weight", E);
    m.routed_post_norm = vector(p + "post_ffw_norm_2.weight", E);
  }
  if (d.expert_scale) m.expert_scale = vector(p + "ffn_down_exps.scale", d.n_expert);
  return m;
}

}  // namespace fulgur
