// Scalar oracles of the recurrent kernels (DESIGN §1.3): the formulas of recurrent.h as plain
// loops in double, with the states rounded to f32 where the real ones live in memory (after
// every token; after every chunk in the chunked form), so that the refs keep the determinism
// contract themselves (FULGUR_ISA=ref runs speculation too). Allocation is fine here.
#include "kernels/recurrent.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace fulgur::kernels {
namespace {

double silu_d(double x) {
  return x / (1.0 + std::exp(-x));
}
double softplus_d(double x) {
  return x > 20.0 ? x : std::log1p(std::exp(x));
}

void copy_floats(float* dst, const float* src, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

int64_t k_head_of(const GatedDeltaArgs& a, int64_t hv) {
  return a.head_map == GdnHeadMap::kTiled ? hv % a.n_k_heads : hv / (a.n_v_heads / a.n_k_heads);
}

double q_scale_of(const GatedDeltaArgs& a) {
  return a.q_scale != 0.0f ? a.q_scale : 1.0 / std::sqrt(static_cast<double>(a.k_dim));
}

}  // namespace

void conv1d_causal_ref(const Conv1dArgs& a) {
  const int64_t c_n = a.channels, k_n = a.kernel, hist = k_n - 1;
  // The whole input sequence: the state's rows, then x's rows. [K−1 + n][C]
  std::vector<float> seq(static_cast<size_t>((hist + a.n) * c_n));
  copy_floats(seq.data(), a.state, hist * c_n);
  for (int64_t t = 0; t < a.n; ++t) copy_floats(&seq[(hist + t) * c_n], a.x + t * a.x_stride, c_n);
  for (int64_t t = 0; t < a.n; ++t) {
    for (int64_t c = 0; c < c_n; ++c) {
      double acc = 0.0;
      for (int64_t j = 0; j < k_n; ++j)
        acc += static_cast<double>(a.w_tap_major ? a.w[j * c_n + c] : a.w[c * k_n + j]) *
               seq[(t + j) * c_n + c];
      if (a.bias != nullptr) acc += a.bias[c];
      a.y[t * a.y_stride + c] = static_cast<float>(a.silu ? silu_d(acc) : acc);
    }
    // The state after token t: inputs t−(K−2) .. t, i.e. seq rows t+1 .. t+K−1.
    if (a.snap != nullptr && a.snap[t] != nullptr)
      copy_floats(a.snap[t], &seq[(t + 1) * c_n], hist * c_n);
  }
  copy_floats(a.state, &seq[a.n * c_n], hist * c_n);
}

void ssm_scan_ref(const SsmScanArgs& a) {
  const int64_t p_n = a.head_dim, n_n = a.d_state, heads_per_group = a.n_heads / a.n_groups;
  const int64_t plane = a.n_heads * p_n * n_n;
  for (int64_t t = 0; t < a.n; ++t) {
    for (int64_t h = 0; h < a.n_heads; ++h) {
      const int64_t g = h / heads_per_group;
      const double dt = static_cast<double>(a.dt[t * a.dt_stride + h]) +
                        (a.dt_bias != nullptr ? a.dt_bias[h] : 0.0);
      const double delta = softplus_d(dt);
      const double da = std::exp(delta * a.a[h]);
      const float* b = a.b + t * a.b_stride + g * n_n;  // [N]
      const float* c = a.c + t * a.c_stride + g * n_n;  // [N]
      for (int64_t p = 0; p < p_n; ++p) {
        const double x = a.x[t * a.x_stride + h * p_n + p];
        float* s = a.state + (h * p_n + p) * n_n;  // [N]
        double y = 0.0;
        for (int64_t i = 0; i < n_n; ++i) {
          const double si = s[i] * da + b[i] * (x * delta);
          y += si * c[i];
          s[i] = static_cast<float>(si);
        }
        a.y[t * a.y_stride + h * p_n + p] =
            static_cast<float>(y + (a.d != nullptr ? a.d[h] : 0.0) * x);
      }
    }
    if (a.snap != nullptr && a.snap[t] != nullptr) copy_floats(a.snap[t], a.state, plane);
  }
}

void gated_delta_ref(const GatedDeltaArgs& a) {
  const int64_t dk = a.k_dim, dv = a.v_dim;
  const double scale = q_scale_of(a);
  std::vector<double> s(static_cast<size_t>(dk));  // one row S[·][j] of the state
  for (int64_t t = 0; t < a.n; ++t) {
    for (int64_t hv = 0; hv < a.n_v_heads; ++hv) {
      const int64_t hk = k_head_of(a, hv);
      const float* q = a.q + t * a.q_stride + hk * dk;  // [Dk]
      const float* k = a.k + t * a.k_stride + hk * dk;  // [Dk]
      const float* v = a.v + t * a.v_stride + hv * dv;  // [Dv]
      const double decay = std::exp(static_cast<double>(a.g[t * a.g_stride + hv]));
      const double beta = a.beta[t * a.beta_stride + hv];
      for (int64_t j = 0; j < dv; ++j) {
        float* row = a.state + (hv * dv + j) * dk;  // [Dk]: S[i][j] for every i
        double m = 0.0;
        for (int64_t i = 0; i < dk; ++i) {
          s[i] = row[i] * decay;
          m += s[i] * k[i];
        }
        const double delta = beta * (v[j] - m);
        double o = 0.0;
        for (int64_t i = 0; i < dk; ++i) {
          s[i] += k[i] * delta;
          o += s[i] * (q[i] * scale);
          row[i] = static_cast<float>(s[i]);
        }
        a.out[t * a.out_stride + hv * dv + j] = static_cast<float>(o);
      }
    }
    if (a.snap != nullptr && a.snap[t] != nullptr)
      copy_floats(a.snap[t], a.state, a.n_v_heads * dv * dk);
  }
}

// The chunked form written as in recurrent.h, one chunk and one v-head at a time, with S in
// its mathematical layout S[i][j] (Dk × Dv).
void gated_delta_chunked_ref(const GatedDeltaArgs& a) {
  const int64_t dk = a.k_dim, dv = a.v_dim;
  const double scale = q_scale_of(a);
  std::vector<double> s(static_cast<size_t>(dk * dv));  // [Dk][Dv]
  std::vector<double> gc(kGdnChunk);                    // [L]
  // [L][L]: k_t·k_u, q'_t·k_u and e^{G_t − G_u}
  std::vector<double> kk(kGdnChunk * kGdnChunk), qk(kGdnChunk * kGdnChunk),
      dec(kGdnChunk * kGdnChunk);
  std::vector<double> x(static_cast<size_t>(kGdnChunk * (dv + dk)));  // [L][Dv + Dk]: U | W
  std::vector<double> delta(static_cast<size_t>(kGdnChunk * dv));     // [L][Dv]
  for (int64_t hv = 0; hv < a.n_v_heads; ++hv) {
    const int64_t hk = k_head_of(a, hv);
    float* st = a.state + hv * dv * dk;  // [Dv][Dk]
    auto q_at = [&](int64_t t, int64_t i) { return a.q[t * a.q_stride + hk * dk + i] * scale; };
    auto k_at = [&](int64_t t, int64_t i) {
      return static_cast<double>(a.k[t * a.k_stride + hk * dk + i]);
    };
    auto v_at = [&](int64_t t, int64_t j) {
      return static_cast<double>(a.v[t * a.v_stride + hv * dv + j]);
    };
    auto beta_at = [&](int64_t t) { return static_cast<double>(a.beta[t * a.beta_stride + hv]); };
    int64_t t0 = 0;
    while (t0 < a.n) {
      const int64_t len = std::min(a.n - t0, kGdnChunk - (a.pos0 + t0) % kGdnChunk);
      for (int64_t i = 0; i < dk; ++i)
        for (int64_t j = 0; j < dv; ++j) s[i * dv + j] = st[j * dk + i];
      for (int64_t t = 0; t < len; ++t)
        gc[t] = (t > 0 ? gc[t - 1] : 0.0) + a.g[(t0 + t) * a.g_stride + hv];
      for (int64_t t = 0; t < len; ++t) {
        for (int64_t u = 0; u < len; ++u) {
          double dkk = 0.0, dqk = 0.0;
          for (int64_t i = 0; i < dk; ++i) {
            dkk += k_at(t0 + t, i) * k_at(t0 + u, i);
            dqk += q_at(t0 + t, i) * k_at(t0 + u, i);
          }
          kk[t * kGdnChunk + u] = dkk;
          qk[t * kGdnChunk + u] = dqk;
          dec[t * kGdnChunk + u] = std::exp(gc[t] - gc[u]);
        }
      }
      // Forward substitution: X_t = R_t − Σ_{s<t} A[t][s]·X_s, R_t = [β v_t | β e^{G_t} k_t].
      for (int64_t t = 0; t < len; ++t) {
        double* xt = &x[t * (dv + dk)];
        const double b = beta_at(t0 + t);
        for (int64_t j = 0; j < dv; ++j) xt[j] = b * v_at(t0 + t, j);
        for (int64_t i = 0; i < dk; ++i) xt[dv + i] = b * std::exp(gc[t]) * k_at(t0 + t, i);
        for (int64_t u = 0; u < t; ++u) {
          const double coef = b * kk[t * kGdnChunk + u] * dec[t * kGdnChunk + u];
          for (int64_t c = 0; c < dv + dk; ++c) xt[c] -= coef * x[u * (dv + dk) + c];
        }
      }
      for (int64_t t = 0; t < len; ++t) {  // Δ = U − W·S
        const double* xt = &x[t * (dv + dk)];
        for (int64_t j = 0; j < dv; ++j) {
          double ws = 0.0;
          for (int64_t i = 0; i < dk; ++i) ws += xt[dv + i] * s[i * dv + j];
          delta[t * dv + j] = xt[j] - ws;
        }
      }
      for (int64_t t = 0; t < len; ++t) {
        float* out = a.out + (t0 + t) * a.out_stride + hv * dv;
        for (int64_t j = 0; j < dv; ++j) {
          double o = 0.0;
          for (int64_t i = 0; i < dk; ++i) o += q_at(t0 + t, i) * s[i * dv + j];
          o *= std::exp(gc[t]);
          for (int64_t u = 0; u <= t; ++u)
            o += qk[t * kGdnChunk + u] * dec[t * kGdnChunk + u] * delta[u * dv + j];
          out[j] = static_cast<float>(o);
        }
      }
      const int64_t last = len - 1;
      for (int64_t i = 0; i < dk; ++i) {
        for (int64_t j = 0; j < dv; ++j) {
          double v = std::exp(gc[last]) * s[i * dv + j];
          for (int64_t t = 0; t < len; ++t)
            v += dec[last * kGdnChunk + t] * k_at(t0 + t, i) * delta[t * dv + j];
          st[j * dk + i] = static_cast<float>(v);
        }
      }
      t0 += len;
    }
  }
}

}  // namespace fulgur::kernels
