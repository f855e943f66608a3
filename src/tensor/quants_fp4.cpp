// FP4 (E2M1) types with power-of-two (MXFP4, E8M0) or UE4M3 (NVFP4) block scales. ggml keeps the
// E2M1 values doubled in an int8 table, so both scale decoders used here return half the true
// scale; the products are exact either way.
#include <cmath>
#include <limits>

#include "tensor/blocks.h"
#include "tensor/quants_impl.h"

namespace fulgur::detail {

void dequantize_mxfp4(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockMXFP4*>(src);
  for (int64_t i = 0; i < nb; ++i, dst += kQK) {
    const float d = e8m0_to_f32_half(b[i].e);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = static_cast<float>(kMxfp4Values[b[i].qs[j] & 0xF]) * d;
      dst[j + kQK / 2] = static_cast<float>(kMxfp4Values[b[i].qs[j] >> 4]) * d;
    }
  }
}

void dequantize_nvfp4(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockNVFP4*>(src);
  for (int64_t i = 0; i < nb; ++i) {
    for (int s = 0; s < kQK_NVFP4 / 16; ++s, dst += 16) {
      const float d = ue4m3_to_f32_half(b[i].d[s]);
      for (int j = 0; j < 8; ++j) {
        dst[j] = static_cast<float>(kMxfp4Values[b[i].qs[8 * s + j] & 0xF]) * d;
        dst[j + 8] = static_cast<float>(kMxfp4Values[b[i].qs[8 * s + j] >> 4]) * d;
      }
    }
  }
}

namespace {

// Code (0..15) of the doubled E2M1 value nearest to v; ties go to the even mantissa (the smaller
// code within a sign), as IEEE-style rounding does. NaN maps to 0.
int nearest_fp4(float v) {
  // Positive magnitudes of codes 0..7 (doubled): 0 1 2 3 4 6 8 12; midpoints between them.
  constexpr float kMid[7] = {0.5f, 1.5f, 2.5f, 3.5f, 5.0f, 7.0f, 10.0f};
  const float a = std::fabs(v);
  int code = 0;
  for (int k = 0; k < 7; ++k) {
    // Past a midpoint: next code. At a midpoint: keep the even code (codes 0,2,4,6 are even
    // mantissas of E2M1), i.e. move up only if the upper neighbour is even.
    if (a > kMid[k] || (a == kMid[k] && ((k + 1) % 2 == 0))) code = k + 1;
  }
  return (v < 0 && code != 0) ? code | 8 : code;
}

// Squared error of x[0..n) coded with the doubled-value scale `d`; writes the codes to q.
double fp4_error(const float* x, int n, float d, uint8_t* q) {
  const float id = d > 0 ? 1.0f / d : 0.0f;
  double err = 0;
  for (int j = 0; j < n; ++j) {
    q[j] = static_cast<uint8_t>(nearest_fp4(x[j] * id));
    const double diff = static_cast<double>(kMxfp4Values[q[j]]) * d - x[j];
    err += diff * diff;
  }
  return err;
}

float absmax(const float* x, int n) {
  float a = 0.0f;
  for (int j = 0; j < n; ++j) a = std::fmax(a, std::fabs(x[j]));
  return a;
}

}  // namespace

void quantize_mxfp4(const float* src, void* dst, int64_t nb) {
  auto* b = static_cast<BlockMXFP4*>(dst);
  uint8_t q[kQK], best_q[kQK];  // [32] codes
  for (int64_t i = 0; i < nb; ++i, src += kQK) {
    const float amax = absmax(src, kQK);
    int e = 0;
    if (amax > 0 && std::isfinite(amax)) {
      // OCP's rule (floor(log2 amax) - 2) puts amax in [4, 8) units and clips what lies past 6;
      // one exponent higher never clips. Keep whichever codes the block with less error.
      e = static_cast<int>(std::floor(std::log2(amax))) - 2 + 127;
      e = e < 0 ? 0 : (e > 253 ? 253 : e);  // subnormal or huge blocks: nearest usable exponent
    }
    double best_err = std::numeric_limits<double>::infinity();
    int best_e = 0;
    for (int cand = e; cand <= e + 1; ++cand) {
      if (cand < 0 || cand > 254) continue;
      const double err = fp4_error(src, kQK, e8m0_to_f32_half(static_cast<uint8_t>(cand)), q);
      if (err < best_err) {
        best_err = err;
        best_e = cand;
        for (int j = 0; j < kQK; ++j) best_q[j] = q[j];
      }
    }
    if (best_err == std::numeric_limits<double>::infinity()) {  // inf/NaN block: keep it defined
      best_e = 0;
      fp4_error(src, kQK, e8m0_to_f32_half(0), best_q);
    }
    b[i].e = static_cast<uint8_t>(best_e);
    for (int j = 0; j < kQK / 2; ++j)
      b[i].qs[j] = static_cast<uint8_t>(best_q[j] | (best_q[j + kQK / 2] << 4));
  }
}

namespace {

// The largest UE4M3 code whose value does not exceed v (0 if none); codes 0..0x7E are monotone.
int ue4m3_floor_code(float v) {
  int lo = 0, hi = 0x7E;
  if (!(v >= ue4m3_to_f32(1))) return 0;
  if (v >= ue4m3_to_f32(0x7E)) return 0x7E;
  while (hi - lo > 1) {  // invariant: value(lo) <= v < value(hi)
    const int mid = (lo + hi) / 2;
    if (ue4m3_to_f32(static_cast<uint8_t>(mid)) <= v)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

}  // namespace

void quantize_nvfp4(const float* src, void* dst, int64_t nb) {
  auto* b = static_cast<BlockNVFP4*>(dst);
  uint8_t q[16], best_q[16];  // [16] codes of one sub-block
  for (int64_t i = 0; i < nb; ++i) {
    for (int s = 0; s < kQK_NVFP4 / 16; ++s, src += 16) {
      // Ideal scale maps amax to E2M1's 6; the UE4M3 grid is coarse (3 mantissa bits), so score
      // the codes around it. Values past 448 * 6 clip: callers pre-divide by the per-tensor scale.
      const float amax = absmax(src, 16);
      const int base = ue4m3_floor_code(amax / 6.0f);
      double best_err = std::numeric_limits<double>::infinity();
      int best_code = 0;
      for (int code = base - 1; code <= base + 2; ++code) {
        if (code < 0 || code > 0x7E) continue;
        const double err = fp4_error(src, 16, ue4m3_to_f32_half(static_cast<uint8_t>(code)), q);
        if (err < best_err) {
          best_err = err;
          best_code = code;
          for (int j = 0; j < 16; ++j) best_q[j] = q[j];
        }
      }
      if (best_err == std::numeric_limits<double>::infinity()) {
        best_code = 0;
        fp4_error(src, 16, 0.0f, best_q);
      }
      b[i].d[s] = static_cast<uint8_t>(best_code);
      for (int j = 0; j < 8; ++j)
        b[i].qs[8 * s + j] = static_cast<uint8_t>(best_q[j] | (best_q[j + 8] << 4));
    }
  }
}

}  // namespace fulgur::detail
