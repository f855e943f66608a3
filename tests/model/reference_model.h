// Scalar references of layer pieces for the model tests, in double from a GGUF file's f32
// tensors, written from the formulas (archs-gguf.md §4) and not from fulgur's layers: matrix
// products by tensor name, RMSNorm, and causal attention (optionally with per-head q/k RMSNorm
// and NEOX RoPE, K and V rounded to f16 as fulgur's cache stores them).
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "gguf/gguf_reader.h"
#include "model/desc.h"

namespace fulgur::testing_support {

using Rows = std::vector<std::vector<double>>;

struct RefModel {
  explicit RefModel(const std::string& path) : gguf(path) {}
  std::vector<double> vec(const std::string& name) const {
    const GgufTensorInfo& t = gguf.tensor(name);
    const float* d = reinterpret_cast<const float*>(t.data);
    return std::vector<double>(d, d + t.n_elements());
  }
  // Row r of a matrix {cols, rows} (an embedding row).
  std::vector<double> vec_row(const std::string& name, int64_t r) const {
    const GgufTensorInfo& t = gguf.tensor(name);
    const float* d = reinterpret_cast<const float*>(t.data) + r * t.ne[0];
    return std::vector<double>(d, d + t.ne[0]);
  }
  // y = W x for W {cols, rows} (row-major [rows][cols]): all its rows, or `rows` rows from row
  // `offset` (one expert of a stacked tensor).
  std::vector<double> mul(const std::string& name, const std::vector<double>& x, int64_t offset = 0,
                          int64_t rows = -1) const {
    const GgufTensorInfo& t = gguf.tensor(name);
    if (rows < 0) rows = t.ne[1];
    const float* d = reinterpret_cast<const float*>(t.data) + offset * t.ne[0];
    std::vector<double> y(static_cast<size_t>(rows), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < t.ne[0]; ++c) y[r] += d[r * t.ne[0] + c] * x[c];
    }
    return y;
  }
  GgufReader gguf;
};

inline std::vector<double> rms_norm(const double* x, int64_t n, const double* w, double eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const double s = 1.0 / std::sqrt(ss / n + eps);
  std::vector<double> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s * w[i];
  return y;
}

// Causal softmax attention over grouped heads, in double: rows q [n][H*Dh] over k, v
// [n][Hkv*Dh], row i seeing rows 0..i; [n][H*Dh].
inline Rows causal_attention(const Rows& q, const Rows& k, const Rows& v, int64_t H, int64_t Hkv, int64_t Dh) {
  Rows out;
  for (size_t i = 0; i < q.size(); ++i) {
    std::vector<double> attn(static_cast<size_t>(H * Dh), 0.0);
    for (int64_t hd = 0; hd < H; ++hd) {
      const int64_t g = hd / (H / Hkv);
      std::vector<double> s(i + 1);
      double mx = -1e300, z = 0;
      for (size_t j = 0; j <= i; ++j) {
        s[j] = 0;
        for (int64_t c = 0; c < Dh; ++c) s[j] += q[i][hd * Dh + c] * k[j][g * Dh + c];
        s[j] /= std::sqrt(static_cast<double>(Dh));
        mx = std::max(mx, s[j]);
      }
      for (size_t j = 0; j <= i; ++j) z += s[j] = std::exp(s[j] - mx);
      for (size_t j = 0; j <= i; ++j) {
        for (int64_t c = 0; c < Dh; ++c) attn[hd * Dh + c] += s[j] / z * v[j][g * Dh + c];
      }
    }
    out.push_back(std::move(attn));
  }
  return out;
}

// The attention mixer of layer prefix `p` ("blk.N.") over the normed rows h of one sequence at
// positions 0..n-1: [n][E] outputs (before the residual add).
inline Rows ref_attention(const RefModel& m, const std::string& p, const ModelDesc& d, const AttentionDesc& a,
                          const Rows& h) {
  const int64_t H = a.n_head, Hkv = a.n_head_kv, Dh = a.head_dim, n = static_cast<int64_t>(h.size());
  const int64_t half = d.rope.n_rot / 2;
  std::vector<double> qn, kn;
  if (a.qk_norm) {
    qn = m.vec(p + "attn_q_norm.weight");
    kn = m.vec(p + "attn_k_norm.weight");
  }
  // Per-head RMSNorm (qk_norm) and NEOX rotation (rope) of row i's heads.
  const auto norm_rope = [&](std::vector<double>& t, int64_t heads, const std::vector<double>& w, int64_t i) {
    for (int64_t hd = 0; hd < heads; ++hd) {
      std::vector<double> r(t.begin() + hd * Dh, t.begin() + (hd + 1) * Dh);
      if (a.qk_norm) r = rms_norm(r.data(), Dh, w.data(), d.rms_eps);
      for (int64_t j = 0; a.rope && j < half; ++j) {
        const double th = i * std::pow(static_cast<double>(d.rope.freq_base), -2.0 * j / d.rope.n_rot);
        const double x0 = r[j], x1 = r[j + half];
        r[j] = x0 * std::cos(th) - x1 * std::sin(th);
        r[j + half] = x0 * std::sin(th) + x1 * std::cos(th);
      }
      std::copy(r.begin(), r.end(), t.begin() + hd * Dh);
    }
  };
  Rows q, k, v, out;
  for (int64_t i = 0; i < n; ++i) {
    q.push_back(m.mul(p + "attn_q.weight", h[i]));
    k.push_back(m.mul(p + "attn_k.weight", h[i]));
    v.push_back(m.mul(p + "attn_v.weight", h[i]));
    norm_rope(q.back(), H, qn, i);
    norm_rope(k.back(), Hkv, kn, i);
    for (double& e : k.back()) e = f16_to_f32(f32_to_f16(static_cast<float>(e)));
    for (double& e : v.back()) e = f16_to_f32(f32_to_f16(static_cast<float>(e)));
  }
  for (const std::vector<double>& attn : causal_attention(q, k, v, H, Hkv, Dh)) {
    out.push_back(m.mul(p + "attn_output.weight", attn));
  }
  return out;
}

}  // namespace fulgur::testing_support
