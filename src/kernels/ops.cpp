// The element-wise ops: their argument checks, then the active family's kernel (table.h), plus
// the scalar RoPE table that every ISA shares (sin/cos are computed once per row and reused by
// every head).
#include <cmath>
#include <numbers>

#include "core/error.h"
#include "kernels/ops.h"
#include "kernels/table.h"
#include "tensor/quants.h"

namespace fulgur::kernels {

void rms_norm(const float* x, const float* weight, float eps, float* y, int64_t n_rows,
              int64_t dim, int64_t x_stride, int64_t y_stride) {
  kernel_table().rms_norm(x, weight, eps, y, n_rows, dim, x_stride, y_stride);
}

void l2_norm(float* x, int64_t n_rows, int64_t n_heads, int64_t head_dim, int64_t row_stride,
             float eps) {
  FULGUR_CHECK(n_heads >= 0 && head_dim > 0 && row_stride >= n_heads * head_dim, "l2_norm: n_heads = ",
               n_heads, ", head_dim = ", head_dim, ", row_stride = ", row_stride,
               ", expected head_dim > 0 and row_stride >= n_heads * head_dim");
  kernel_table().l2_norm(x, n_rows, n_heads, head_dim, row_stride, eps);
}

void rms_norm_gated(const float* x, const float* z, const float* weight, float eps,
                    GateOrder order, float* y, int64_t n_rows, int64_t dim, int64_t n_groups,
                    int64_t x_stride, int64_t z_stride, int64_t y_stride) {
  FULGUR_CHECK(dim > 0 && n_groups > 0 && dim % n_groups == 0, "rms_norm_gated: dim = ", dim,
               " is not a positive multiple of n_groups = ", n_groups);
  FULGUR_CHECK(order == GateOrder::kNormThenGate || order == GateOrder::kGateThenNorm,
               "rms_norm_gated: unknown gate order ", static_cast<int>(order));
  kernel_table().rms_norm_gated(x, z, weight, eps, order, y, n_rows, dim, n_groups, x_stride,
                                z_stride, y_stride);
}

// ---- RoPE ------------------------------------------------------------------------------

namespace {

void check_rope_params(const RopeParams& p) {
  FULGUR_CHECK(p.n_rot > 0 && p.n_rot % 2 == 0 && p.n_rot <= kRopeMaxRot, "rope: n_rot = ",
               p.n_rot, ", expected an even number in [2, ", kRopeMaxRot, "]");
  FULGUR_CHECK(p.mode == RopeMode::kNeox || p.mode == RopeMode::kNormal, "rope: mode = ",
               static_cast<int>(p.mode), ", expected 0 (normal) or 2 (neox)");
  FULGUR_CHECK(p.freq_base > 0.0f, "rope: freq_base = ", p.freq_base, ", expected > 0");
  FULGUR_CHECK(p.freq_scale > 0.0f, "rope: freq_scale = ", p.freq_scale, ", expected > 0");
  FULGUR_CHECK(p.ext_factor == 0.0f || p.n_ctx_orig > 0, "rope: YaRN (ext_factor = ",
               p.ext_factor, ") needs n_ctx_orig > 0, got ", p.n_ctx_orig);
}

void check_rope_shape(int64_t n_heads, int64_t head_dim, int64_t row_stride, int64_t n_rot) {
  FULGUR_CHECK(n_heads >= 0 && head_dim > 0, "rope: n_heads = ", n_heads, ", head_dim = ",
               head_dim, ", expected n_heads >= 0 and head_dim > 0");
  FULGUR_CHECK(n_rot > 0 && n_rot % 2 == 0 && n_rot <= head_dim, "rope: n_rot = ", n_rot,
               ", expected an even number in [2, head_dim = ", head_dim, "]");
  FULGUR_CHECK(row_stride >= n_heads * head_dim, "rope: row_stride = ", row_stride,
               " is shorter than n_heads * head_dim = ", n_heads * head_dim);
}

// Dimension below/above which YaRN extrapolates/interpolates (ggml's corr_dim).
double yarn_corr_dim(double n_rot, double n_ctx_orig, double beta, double base) {
  return n_rot * std::log(n_ctx_orig / (beta * 2.0 * std::numbers::pi)) / (2.0 * std::log(base));
}

void rope_cache_row(const RopeParams& p, int32_t pos, double low, double high, float* cs) {
  const int64_t half = p.n_rot / 2;
  float* c = cs;           // [n_rot]
  float* s = cs + p.n_rot;  // [n_rot]
  double mscale = p.attn_factor;
  if (p.ext_factor != 0.0f) mscale *= 1.0 + 0.1 * std::log(1.0 / p.freq_scale);
  for (int64_t i = 0; i < half; ++i) {
    double theta = pos * std::pow(static_cast<double>(p.freq_base),
                                  -2.0 * static_cast<double>(i) / static_cast<double>(p.n_rot));
    if (p.freq_factors != nullptr) theta /= p.freq_factors[i];
    const double interp = p.freq_scale * theta;
    if (p.ext_factor != 0.0f) {
      const double y = (static_cast<double>(i) - low) / std::fmax(0.001, high - low);
      const double mix = (1.0 - std::fmin(1.0, std::fmax(0.0, y))) * p.ext_factor;
      theta = interp * (1.0 - mix) + theta * mix;
    } else {
      theta = interp;
    }
    const auto cv = static_cast<float>(std::cos(theta) * mscale);
    const auto sv = static_cast<float>(std::sin(theta) * mscale);
    // First member of the pair gets −sin, second +sin (see ops.h).
    const int64_t a = p.mode == RopeMode::kNeox ? i : 2 * i;
    const int64_t b = p.mode == RopeMode::kNeox ? i + half : 2 * i + 1;
    c[a] = cv;
    c[b] = cv;
    s[a] = -sv;
    s[b] = sv;
  }
}

void yarn_range(const RopeParams& p, double* low, double* high) {
  *low = 0.0;
  *high = 0.0;
  if (p.ext_factor == 0.0f) return;
  const auto n_rot = static_cast<double>(p.n_rot);
  const auto n_ctx = static_cast<double>(p.n_ctx_orig);
  *low = std::fmax(0.0, std::floor(yarn_corr_dim(n_rot, n_ctx, p.beta_fast, p.freq_base)));
  *high = std::fmin(n_rot - 1, std::ceil(yarn_corr_dim(n_rot, n_ctx, p.beta_slow, p.freq_base)));
}

void rope_impl(float* x, int64_t n_rows, int64_t n_heads, int64_t head_dim, int64_t row_stride,
               const int32_t* positions, const RopeParams& p, bool ref) {
  check_rope_params(p);
  check_rope_shape(n_heads, head_dim, row_stride, p.n_rot);
  double low = 0.0, high = 0.0;
  yarn_range(p, &low, &high);
  float cs[2 * kRopeMaxRot];  // [2][n_rot] table of the current row
  for (int64_t r = 0; r < n_rows; ++r) {
    rope_cache_row(p, positions[r], low, high, cs);
    float* xr = x + r * row_stride;
    if (ref) {
      rope_apply_ref(xr, 1, n_heads, head_dim, row_stride, p.n_rot, p.mode, cs);
    } else {
      rope_apply(xr, 1, n_heads, head_dim, row_stride, p.n_rot, p.mode, cs);
    }
  }
}

}  // namespace

void rope_cache(const RopeParams& params, const int32_t* positions, int64_t n_rows, float* cs) {
  check_rope_params(params);
  double low = 0.0, high = 0.0;
  yarn_range(params, &low, &high);
  for (int64_t r = 0; r < n_rows; ++r)
    rope_cache_row(params, positions[r], low, high, cs + r * 2 * params.n_rot);
}

void rope_apply(float* x, int64_t n_rows, int64_t n_heads, int64_t head_dim, int64_t row_stride,
                int64_t n_rot, RopeMode mode, const float* cs) {
  kernel_table().rope_apply(x, n_rows, n_heads, head_dim, row_stride, n_rot, mode, cs);
}

void rope(float* x, int64_t n_rows, int64_t n_heads, int64_t head_dim, int64_t row_stride,
          const int32_t* positions, const RopeParams& params) {
  rope_impl(x, n_rows, n_heads, head_dim, row_stride, positions, params, false);
}

void rope_ref(float* x, int64_t n_rows, int64_t n_heads, int64_t head_dim, int64_t row_stride,
              const int32_t* positions, const RopeParams& params) {
  rope_impl(x, n_rows, n_heads, head_dim, row_stride, positions, params, true);
}

// ---- softmax and element-wise ------------------------------------------------------------

void softmax(float* x, int64_t n_rows, int64_t n, int64_t row_stride, float scale) {
  kernel_table().softmax(x, n_rows, n, row_stride, scale);
}

void silu(const float* x, float* out, int64_t n) { kernel_table().silu(x, out, n); }
void gelu(const float* x, float* out, int64_t n) { kernel_table().gelu(x, out, n); }
void sigmoid(const float* x, float* out, int64_t n) { kernel_table().sigmoid(x, out, n); }
void softplus(const float* x, float* out, int64_t n) { kernel_table().softplus(x, out, n); }
void relu_sq(const float* x, float* out, int64_t n) { kernel_table().relu_sq(x, out, n); }
void vec_exp(const float* x, float* y, int64_t n) { kernel_table().vec_exp(x, y, n); }
void to_f16(const float* x, uint16_t* y, int64_t n) { kernel_table().to_f16(x, y, n); }
void swiglu(const float* gate, const float* up, float* out, int64_t n) {
  kernel_table().swiglu(gate, up, out, n);
}
void geglu(const float* gate, const float* up, float* out, int64_t n) {
  kernel_table().geglu(gate, up, out, n);
}
void add(const float* a, const float* b, float* out, int64_t n) { kernel_table().add(a, b, out, n); }
void mul(const float* a, const float* b, float* out, int64_t n) { kernel_table().mul(a, b, out, n); }

// ---- get_rows ----------------------------------------------------------------------------

void get_rows(DType type, const void* table, size_t row_stride_bytes, int64_t n_table_rows,
              int64_t cols, const int32_t* ids, int64_t n, float* out, int64_t ldo) {
  const KernelTable& k = kernel_table();
  if (k.isa == Isa::kRef) {
    get_rows_ref(type, table, row_stride_bytes, n_table_rows, cols, ids, n, out, ldo);
    return;
  }
  const DTypeInfo& info = dtype_info(type);
  FULGUR_CHECK(info.computable, "get_rows: type ", info.name, " is not computable");
  FULGUR_CHECK(cols > 0 && cols % info.block_size == 0, "get_rows: cols = ", cols,
               " must be a positive multiple of the ", info.name, " block size ",
               info.block_size);
  const auto* base = static_cast<const uint8_t*>(table);
  for (int64_t i = 0; i < n; ++i) {
    FULGUR_CHECK(ids[i] >= 0 && ids[i] < n_table_rows, "get_rows: ids[", i, "] = ", ids[i],
                 " is outside the table's ", n_table_rows, " rows");
    const uint8_t* src = base + static_cast<size_t>(ids[i]) * row_stride_bytes;
    float* dst = out + i * ldo;
    if (!k.get_row(type, src, dst, cols)) dequantize_row(type, src, dst, cols);  // no fast path
  }
}

}  // namespace fulgur::kernels
