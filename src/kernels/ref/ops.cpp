// Scalar oracles of the element-wise kernels (DESIGN §1.3). Clarity first: transcendental
// functions and reductions run in double, so the refs are at least as accurate as any SIMD
// path and tolerances measure the fast path's error alone.
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "kernels/ops.h"
#include "tensor/quants.h"

namespace fulgur::kernels {

void rms_norm_ref(const float* x, const float* weight, float eps, float* y, int64_t n_rows,
                  int64_t dim, int64_t x_stride, int64_t y_stride) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * x_stride;
    float* yr = y + r * y_stride;
    double ss = 0.0;
    for (int64_t i = 0; i < dim; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(dim) + eps);
    for (int64_t i = 0; i < dim; ++i) {
      const double w = weight != nullptr ? weight[i] : 1.0;
      yr[i] = static_cast<float>(xr[i] * inv * w);
    }
  }
}

void l2_norm_ref(float* x, int64_t n_rows, int64_t n_heads, int64_t head_dim, int64_t row_stride,
                 float eps) {
  for (int64_t r = 0; r < n_rows; ++r) {
    for (int64_t h = 0; h < n_heads; ++h) {
      float* xh = x + r * row_stride + h * head_dim;
      double ss = 0.0;
      for (int64_t i = 0; i < head_dim; ++i) ss += static_cast<double>(xh[i]) * xh[i];
      const double norm = std::fmax(std::sqrt(ss), static_cast<double>(eps));
      for (int64_t i = 0; i < head_dim; ++i) xh[i] = static_cast<float>(xh[i] / norm);
    }
  }
}

void rope_apply_ref(float* x, int64_t n_rows, int64_t n_heads, int64_t head_dim,
                    int64_t row_stride, int64_t n_rot, RopeMode mode, const float* cs) {
  const int64_t half = n_rot / 2;
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* c = cs + r * 2 * n_rot;  // [n_rot] cos
    const float* s = c + n_rot;           // [n_rot] signed sin
    for (int64_t h = 0; h < n_heads; ++h) {
      float* xh = x + r * row_stride + h * head_dim;
      if (mode == RopeMode::kNeox) {
        for (int64_t i = 0; i < half; ++i) {
          const float x0 = xh[i], x1 = xh[i + half];
          xh[i] = x0 * c[i] + x1 * s[i];
          xh[i + half] = x1 * c[i + half] + x0 * s[i + half];
        }
      } else {
        for (int64_t i = 0; i < n_rot; i += 2) {
          const float x0 = xh[i], x1 = xh[i + 1];
          xh[i] = x0 * c[i] + x1 * s[i];
          xh[i + 1] = x1 * c[i + 1] + x0 * s[i + 1];
        }
      }
    }
  }
}

void softmax_ref(float* x, int64_t n_rows, int64_t n, int64_t row_stride, float scale) {
  for (int64_t r = 0; r < n_rows; ++r) {
    float* xr = x + r * row_stride;
    double mx = -INFINITY;
    for (int64_t i = 0; i < n; ++i) mx = std::fmax(mx, static_cast<double>(scale) * xr[i]);
    if (mx == -INFINITY) {  // nothing has any weight: all-zero row, never NaN
      for (int64_t i = 0; i < n; ++i) xr[i] = 0.0f;
      continue;
    }
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(scale) * xr[i] - mx);
    for (int64_t i = 0; i < n; ++i)
      xr[i] = static_cast<float>(std::exp(static_cast<double>(scale) * xr[i] - mx) / sum);
  }
}

namespace {

double silu_d(double x) { return x / (1.0 + std::exp(-x)); }
double gelu_d(double x) {
  constexpr double kSqrt2OverPi = 0.79788456080286535588;
  return 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
}

}  // namespace

void rms_norm_gated_ref(const float* x, const float* z, const float* weight, float eps,
                        GateOrder order, float* y, int64_t n_rows, int64_t dim,
                        int64_t n_groups, int64_t x_stride, int64_t z_stride, int64_t y_stride) {
  const int64_t gd = dim / n_groups;
  std::vector<double> u(static_cast<size_t>(gd));
  for (int64_t r = 0; r < n_rows; ++r) {
    for (int64_t o = 0; o < dim; o += gd) {
      const float* xr = x + r * x_stride + o;
      const float* zr = z + r * z_stride + o;
      double ss = 0.0;
      for (int64_t i = 0; i < gd; ++i) {
        u[i] = order == GateOrder::kGateThenNorm ? xr[i] * silu_d(zr[i]) : xr[i];
        ss += u[i] * u[i];
      }
      const double inv = 1.0 / std::sqrt(ss / static_cast<double>(gd) + eps);
      for (int64_t i = 0; i < gd; ++i) {
        double v = u[i] * inv * (weight != nullptr ? weight[o + i] : 1.0);
        if (order == GateOrder::kNormThenGate) v *= silu_d(zr[i]);
        y[r * y_stride + o + i] = static_cast<float>(v);
      }
    }
  }
}

void sigmoid_ref(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(x[i]))));
}
void softplus_ref(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    out[i] = static_cast<float>(v > 20.0 ? v : std::log1p(std::exp(v)));
  }
}
void relu_sq_ref(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double r = x[i] > 0.0f ? x[i] : 0.0;
    out[i] = static_cast<float>(r * r);
  }
}

void silu_ref(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(silu_d(x[i]));
}
void gelu_ref(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(gelu_d(x[i]));
}
void swiglu_ref(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(silu_d(gate[i]) * up[i]);
}
void geglu_ref(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(gelu_d(gate[i]) * up[i]);
}
void add_ref(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
void mul_ref(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
}

void to_f16_ref(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_f16(x[i]);
}

void get_rows_ref(DType type, const void* table, size_t row_stride_bytes, int64_t n_table_rows,
                  int64_t cols, const int32_t* ids, int64_t n, float* out, int64_t ldo) {
  const DTypeInfo& info = dtype_info(type);
  FULGUR_CHECK(info.computable, "get_rows: type ", info.name, " is not computable");
  FULGUR_CHECK(cols > 0 && cols % info.block_size == 0, "get_rows: cols = ", cols,
               " must be a positive multiple of the ", info.name, " block size ",
               info.block_size);
  const auto* base = static_cast<const uint8_t*>(table);
  for (int64_t i = 0; i < n; ++i) {
    FULGUR_CHECK(ids[i] >= 0 && ids[i] < n_table_rows, "get_rows: ids[", i, "] = ", ids[i],
                 " is outside the table's ", n_table_rows, " rows");
    dequantize_row(type, base + static_cast<size_t>(ids[i]) * row_stride_bytes, out + i * ldo,
                   cols);
  }
}

}  // namespace fulgur::kernels
