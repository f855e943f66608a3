// A scalar reference of the Gated-DeltaNet hybrids (qwen35, qwen35moe, qwen3next) and of their
// MTP block, written here from the GGUF's tensors (dequantized to f32 when quantized) and
// reference/archs-gguf.md §4.3 in double precision, independently of model/ (only the file
// reader, the reference dequantization and the causal attention of reference_model.h are
// shared). K and V are rounded to f16 as the engine's cache stores them, and the input of a
// product with quantized weights is rounded to 8-bit blocks of 32 with an f32 scale amax / 127,
// as fulgur's int8 kernels do (kernels/quant_act.h). One sequence, rows in position order.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "gguf/gguf_reader.h"
#include "reference_model.h"
#include "tensor/quants.h"

namespace fulgur::testing_support {

class GdnReference {
 public:
  using Vec = std::vector<double>;

  explicit GdnReference(const std::string& path) : g_(path) {
    arch_ = g_.get_string("general.architecture");
    const std::string a = arch_ + ".";
    E_ = g_.get_i64(a + "embedding_length");
    n_block_ = g_.get_i64(a + "block_count");
    n_nextn_ = g_.get_i64(a + "nextn_predict_layers", 0);
    interval_ = g_.get_i64(a + "full_attention_interval");
    eps_ = g_.get_f32(a + "attention.layer_norm_rms_epsilon");
    H_ = g_.get_i64(a + "attention.head_count");
    Hkv_ = g_.get_i64(a + "attention.head_count_kv");
    Dh_ = g_.get_i64(a + "attention.key_length");
    n_rot_ = g_.get_i64(a + "rope.dimension_count");
    base_ = g_.get_f32(a + "rope.freq_base");
    K_ = g_.get_i64(a + "ssm.conv_kernel");
    Dk_ = g_.get_i64(a + "ssm.state_size");
    Hk_ = g_.get_i64(a + "ssm.group_count");
    Hv_ = g_.get_i64(a + "ssm.time_step_rank");
    Dv_ = g_.get_i64(a + "ssm.inner_size") / Hv_;
    V_ = g_.tensor("token_embd.weight").ne[1];
  }

  int64_t n_trunk() const { return n_block_ - n_nextn_; }
  int64_t n_vocab() const { return V_; }
  int64_t n_embd() const { return E_; }

  struct Result {
    std::vector<Vec> hidden;  // [rows][E] final pre-norm hidden state
    std::vector<Vec> logits;  // [rows][V]
  };

  // The trunk over tokens at positions 0..n-1.
  Result trunk(const std::vector<int32_t>& tokens) const {
    std::vector<Vec> x;
    for (int32_t t : tokens) x.push_back(row("token_embd.weight", t));
    for (int64_t l = 0; l < n_trunk(); ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      const bool attn = (l + 1) % interval_ == 0;
      mixer(p, attn, x);
      ffn(p, x);
    }
    return finish(x, "output_norm.weight");
  }

  // The MTP block over rows (tokens[i], hidden[i]) at positions pos0 + i.
  Result mtp(const std::vector<int32_t>& tokens, const std::vector<Vec>& hidden, int64_t pos0) const {
    const std::string p = "blk." + std::to_string(n_trunk()) + ".";
    std::vector<Vec> x;
    for (size_t i = 0; i < tokens.size(); ++i) {
      Vec in = norm(row("token_embd.weight", tokens[i]), p + "nextn.enorm.weight");
      const Vec hn = norm(hidden[i], p + "nextn.hnorm.weight");
      in.insert(in.end(), hn.begin(), hn.end());
      x.push_back(mul(p + "nextn.eh_proj.weight", in));
    }
    mixer(p, true, x, pos0);
    ffn(p, x);
    return finish(x, p + "nextn.shared_head_norm.weight");
  }

 private:
  // The tensor's values as f32 (dequantized once).
  const float* data(const std::string& name) const {
    auto it = f32_.find(name);
    if (it != f32_.end()) return it->second.data();
    const GgufTensorInfo& t = g_.tensor(name);
    std::vector<float> v(static_cast<size_t>(t.n_elements()));
    const int64_t rows = t.n_elements() / t.ne[0];
    for (int64_t r = 0; r < rows; ++r) {
      dequantize_row(t.type, t.data + r * row_bytes(t.type, t.ne[0]), v.data() + r * t.ne[0], t.ne[0]);
    }
    return f32_.emplace(name, std::move(v)).first->second.data();
  }
  Vec vec(const std::string& name) const {
    const float* d = data(name);
    return Vec(d, d + g_.tensor(name).n_elements());
  }
  Vec row(const std::string& name, int64_t r) const {
    const GgufTensorInfo& t = g_.tensor(name);
    const float* d = data(name) + r * t.ne[0];
    return Vec(d, d + t.ne[0]);
  }
  // x rounded to 8-bit blocks of 32 with scale amax / 127.
  static Vec act_q8(const Vec& x) {
    Vec y(x.size());
    for (size_t b = 0; b < x.size(); b += 32) {
      float amax = 0.0f;
      for (size_t i = b; i < std::min(x.size(), b + 32); ++i) amax = std::max(amax, std::fabs(static_cast<float>(x[i])));
      const float d = amax / 127.0f;
      for (size_t i = b; i < std::min(x.size(), b + 32); ++i) {
        y[i] = d == 0.0f ? 0.0 : std::nearbyint(static_cast<float>(x[i]) / d) * static_cast<double>(d);
      }
    }
    return y;
  }
  // W x for W {cols, rows}, or for matrix e of a stacked {cols, rows, n} tensor.
  Vec mul(const std::string& name, const Vec& x_in, int64_t e = 0) const {
    const GgufTensorInfo& t = g_.tensor(name);
    const bool quantized = t.type != DType::kF32 && t.type != DType::kF16 && t.type != DType::kBF16;
    const Vec x = quantized ? act_q8(x_in) : x_in;
    const float* d = data(name) + e * t.ne[0] * t.ne[1];
    Vec y(static_cast<size_t>(t.ne[1]), 0.0);
    for (int64_t r = 0; r < t.ne[1]; ++r) {
      for (int64_t c = 0; c < t.ne[0]; ++c) y[r] += d[r * t.ne[0] + c] * x[c];
    }
    return y;
  }
  static Vec rms(const double* x, int64_t n, const double* w, double eps) {
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
    const double s = 1.0 / std::sqrt(ss / n + eps);
    Vec y(n);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s * (w ? w[i] : 1.0);
    return y;
  }
  Vec norm(const Vec& x, const std::string& weight) const {
    const Vec w = vec(weight);
    return rms(x.data(), static_cast<int64_t>(x.size()), w.data(), eps_);
  }
  static double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }
  static double silu(double v) { return v * sigmoid(v); }
  static double f16(double v) { return f16_to_f32(f32_to_f16(static_cast<float>(v))); }

  Result finish(const std::vector<Vec>& x, const std::string& norm_name) const {
    Result r;
    r.hidden = x;
    const std::string head = g_.find_tensor("output.weight") ? "output.weight" : "token_embd.weight";
    for (const Vec& h : x) r.logits.push_back(mul(head, norm(h, norm_name)));
    return r;
  }

  // down(silu(gate h) ⊙ up h) of expert `e` of a stacked tensor (or of a plain one, e = 0).
  Vec swiglu(const std::string& gate, const std::string& up, const std::string& down, const Vec& h,
             int64_t e = 0) const {
    const Vec g = mul(gate, h, e), u = mul(up, h, e);
    Vec a(g.size());
    for (size_t c = 0; c < g.size(); ++c) a[c] = silu(g[c]) * u[c];
    return mul(down, a, e);
  }

  // SwiGLU, or the MoE: softmax router, top-k (ties to the lower id), renormalised weights, and
  // the shared expert scaled by sigmoid(ffn_gate_inp_shexp · h).
  void ffn(const std::string& p, std::vector<Vec>& x) const {
    for (Vec& xi : x) {
      const Vec h = norm(xi, p + "post_attention_norm.weight");
      Vec o(E_, 0.0);
      if (!g_.find_tensor(p + "ffn_gate_inp.weight")) {
        o = swiglu(p + "ffn_gate.weight", p + "ffn_up.weight", p + "ffn_down.weight", h);
      } else {
        Vec pr = mul(p + "ffn_gate_inp.weight", h);
        const double top = *std::max_element(pr.begin(), pr.end());
        double z = 0;
        for (double& t : pr) z += t = std::exp(t - top);
        std::vector<int64_t> ids(pr.size());
        for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);
        std::stable_sort(ids.begin(), ids.end(), [&](int64_t a, int64_t b) { return pr[a] > pr[b]; });
        const int64_t k = g_.get_i64(arch_ + ".expert_used_count");
        double wsum = 0;
        for (int64_t j = 0; j < k; ++j) wsum += pr[ids[j]];
        for (int64_t j = 0; j < k; ++j) {
          const Vec y = swiglu(p + "ffn_gate_exps.weight", p + "ffn_up_exps.weight", p + "ffn_down_exps.weight",
                               h, ids[j]);
          for (int64_t c = 0; c < E_; ++c) o[c] += pr[ids[j]] / wsum * y[c];
        }
        const Vec sh = swiglu(p + "ffn_gate_shexp.weight", p + "ffn_up_shexp.weight", p + "ffn_down_shexp.weight", h);
        const Vec gw = vec(p + "ffn_gate_inp_shexp.weight");
        double gl = 0;
        for (int64_t c = 0; c < E_; ++c) gl += gw[c] * h[c];
        for (int64_t c = 0; c < E_; ++c) o[c] += sigmoid(gl) * sh[c];
      }
      for (int64_t c = 0; c < E_; ++c) xi[c] += o[c];
    }
  }

  void mixer(const std::string& p, bool attn, std::vector<Vec>& x, int64_t pos0 = 0) const {
    std::vector<Vec> h;
    for (const Vec& xi : x) h.push_back(norm(xi, p + "attn_norm.weight"));
    const std::vector<Vec> o = attn ? attention(p, h, pos0) : gated_delta_net(p, h);
    for (size_t i = 0; i < x.size(); ++i) {
      for (int64_t c = 0; c < E_; ++c) x[i][c] += o[i][c];
    }
  }

  // Gated attention: per head Dh query rows then Dh gate rows in attn_q; q/k RMSNorm; NEOX RoPE
  // on the first n_rot dims; causal softmax; output ⊙ sigmoid(gate).
  std::vector<Vec> attention(const std::string& p, const std::vector<Vec>& h, int64_t pos0) const {
    const int64_t n = static_cast<int64_t>(h.size()), half = n_rot_ / 2;
    const Vec qn = vec(p + "attn_q_norm.weight"), kn = vec(p + "attn_k_norm.weight");
    std::vector<Vec> q(n), gate(n), k(n), v(n);
    const auto norm_rope = [&](double* t, const Vec& w, int64_t pos) {
      const Vec r = rms(t, Dh_, w.data(), eps_);
      std::copy(r.begin(), r.end(), t);
      for (int64_t j = 0; j < half; ++j) {
        const double th = pos * std::pow(static_cast<double>(base_), -2.0 * j / n_rot_);
        const double a = t[j], b = t[j + half];
        t[j] = a * std::cos(th) - b * std::sin(th);
        t[j + half] = a * std::sin(th) + b * std::cos(th);
      }
    };
    for (int64_t i = 0; i < n; ++i) {
      const Vec qg = mul(p + "attn_q.weight", h[i]);
      for (int64_t hd = 0; hd < H_; ++hd) {
        q[i].insert(q[i].end(), qg.begin() + hd * 2 * Dh_, qg.begin() + hd * 2 * Dh_ + Dh_);
        gate[i].insert(gate[i].end(), qg.begin() + hd * 2 * Dh_ + Dh_, qg.begin() + (hd + 1) * 2 * Dh_);
      }
      k[i] = mul(p + "attn_k.weight", h[i]);
      v[i] = mul(p + "attn_v.weight", h[i]);
      for (int64_t hd = 0; hd < H_; ++hd) norm_rope(q[i].data() + hd * Dh_, qn, pos0 + i);
      for (int64_t hd = 0; hd < Hkv_; ++hd) norm_rope(k[i].data() + hd * Dh_, kn, pos0 + i);
      for (double& e : k[i]) e = f16(e);
      for (double& e : v[i]) e = f16(e);
    }
    std::vector<Vec> out, attn = causal_attention(q, k, v, H_, Hkv_, Dh_);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t c = 0; c < H_ * Dh_; ++c) attn[i][c] *= sigmoid(gate[i][c]);
      out.push_back(mul(p + "attn_output.weight", attn[i]));
    }
    return out;
  }

  // Gated DeltaNet from a zero state (archs-gguf.md §4.3 steps 1-9).
  std::vector<Vec> gated_delta_net(const std::string& p, const std::vector<Vec>& h) const {
    const int64_t n = static_cast<int64_t>(h.size()), Kd = Hk_ * Dk_, C = 2 * Kd + Hv_ * Dv_;
    const int64_t r = Hv_ / Hk_;
    const bool next = arch_ == "qwen3next";
    const Vec conv_w = vec(p + "ssm_conv1d.weight"), A = vec(p + "ssm_a"), dt = vec(p + "ssm_dt.bias");
    const Vec sn = vec(p + "ssm_norm.weight");
    std::vector<Vec> u(n), S(Hv_, Vec(Dk_ * Dv_, 0.0)), out;
    for (int64_t t = 0; t < n; ++t) u[t] = mul(p + "attn_qkv.weight", h[t]);
    for (int64_t t = 0; t < n; ++t) {
      Vec y(C);
      for (int64_t c = 0; c < C; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < K_; ++j) {
          const int64_t src = t - (K_ - 1) + j;
          if (src >= 0) acc += conv_w[c * K_ + j] * u[src][c];
        }
        y[c] = silu(acc);
      }
      for (int64_t hd = 0; hd < 2 * Hk_; ++hd) {  // q and k heads to unit length
        double ss = 0;
        for (int64_t i = 0; i < Dk_; ++i) ss += y[hd * Dk_ + i] * y[hd * Dk_ + i];
        const double s = 1.0 / std::max(std::sqrt(ss), static_cast<double>(eps_));
        for (int64_t i = 0; i < Dk_; ++i) y[hd * Dk_ + i] *= s;
      }
      Vec b(Hv_), al(Hv_);
      if (next) {
        const Vec ba = mul(p + "ssm_ba.weight", h[t]);
        for (int64_t g = 0; g < Hk_; ++g) {
          for (int64_t j = 0; j < r; ++j) {
            b[g * r + j] = ba[g * 2 * r + j];
            al[g * r + j] = ba[g * 2 * r + r + j];
          }
        }
      } else {
        b = mul(p + "ssm_beta.weight", h[t]);
        al = mul(p + "ssm_alpha.weight", h[t]);
      }
      const Vec z = mul(p + "attn_gate.weight", h[t]);
      Vec o(Hv_ * Dv_);
      for (int64_t hv = 0; hv < Hv_; ++hv) {
        const int64_t hk = next ? hv / r : hv % Hk_;
        const double* q = y.data() + hk * Dk_;
        const double* k = y.data() + Kd + hk * Dk_;
        const double* v = y.data() + 2 * Kd + hv * Dv_;
        const double beta = sigmoid(b[hv]);
        const double sp = al[hv] + dt[hv] > 20 ? al[hv] + dt[hv] : std::log1p(std::exp(al[hv] + dt[hv]));
        const double decay = std::exp(A[hv] * sp);
        Vec& s = S[hv];  // s[i * Dv + j] = S[i][j]
        for (double& e : s) e *= decay;
        for (int64_t j = 0; j < Dv_; ++j) {
          double m = 0;
          for (int64_t i = 0; i < Dk_; ++i) m += s[i * Dv_ + j] * k[i];
          const double delta = beta * (v[j] - m);
          for (int64_t i = 0; i < Dk_; ++i) s[i * Dv_ + j] += k[i] * delta;
        }
        for (int64_t j = 0; j < Dv_; ++j) {
          double acc = 0;
          for (int64_t i = 0; i < Dk_; ++i) acc += s[i * Dv_ + j] * q[i] / std::sqrt(static_cast<double>(Dk_));
          o[hv * Dv_ + j] = acc;
        }
        const Vec on = rms(o.data() + hv * Dv_, Dv_, sn.data(), eps_);
        for (int64_t j = 0; j < Dv_; ++j) o[hv * Dv_ + j] = on[j] * silu(z[hv * Dv_ + j]);
      }
      out.push_back(mul(p + "ssm_out.weight", o));
    }
    return out;
  }

  GgufReader g_;
  mutable std::map<std::string, std::vector<float>> f32_;
  std::string arch_;
  int64_t E_, n_block_, n_nextn_, interval_, H_, Hkv_, Dh_, n_rot_, K_, Dk_, Hk_, Hv_, Dv_, V_;
  float eps_, base_;
};

}  // namespace fulgur::testing_support
