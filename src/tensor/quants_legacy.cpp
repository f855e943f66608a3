// The legacy 32-element block types: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1.
// Dequantizers follow ggml's expressions and evaluation order exactly (so results are bit-equal
// to llama.cpp's); the quantizers reproduce ggml's reference quantizers (max-magnitude or
// min/max scale, rounding by truncating x + 0.5, or roundf for Q8).
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "tensor/blocks.h"
#include "tensor/quants_impl.h"

namespace fulgur::detail {
namespace {

constexpr int kHalf = kQK / 2;

// (int)min(max(v, 0), hi): ggml truncates x + 0.5 (a round-half-up for v >= 0) and clamps to hi;
// the float clamp first keeps NaN and out-of-range inputs defined.
int trunc_clamp(float v, int hi) {
  return static_cast<int>(std::fmin(std::fmax(v, 0.0f), static_cast<float>(hi)));
}

// Round half away from zero (C roundf, what ggml's Q8 quantizers use), clamped to +-127.
int8_t round_q8(float v) {
  return static_cast<int8_t>(std::round(std::fmin(std::fmax(v, -127.0f), 127.0f)));
}

// Signed value with the largest magnitude (the first one on ties).
float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (amax < std::fabs(x[i])) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  return max;
}

void min_max(const float* x, int n, float* lo, float* hi) {
  *lo = x[0];
  *hi = x[0];
  for (int i = 1; i < n; ++i) {
    *lo = std::fmin(*lo, x[i]);
    *hi = std::fmax(*hi, x[i]);
  }
}

}  // namespace

void dequantize_q4_0(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockQ4_0*>(src);
  for (int64_t i = 0; i < nb; ++i, dst += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kHalf; ++j) {
      dst[j] = static_cast<float>((b[i].qs[j] & 0xF) - 8) * d;
      dst[j + kHalf] = static_cast<float>((b[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_q4_1(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockQ4_1*>(src);
  for (int64_t i = 0; i < nb; ++i, dst += kQK) {
    const float d = f16_to_f32(b[i].d), m = f16_to_f32(b[i].m);
    for (int j = 0; j < kHalf; ++j) {
      dst[j] = static_cast<float>(b[i].qs[j] & 0xF) * d + m;
      dst[j + kHalf] = static_cast<float>(b[i].qs[j] >> 4) * d + m;
    }
  }
}

void dequantize_q5_0(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockQ5_0*>(src);
  for (int64_t i = 0; i < nb; ++i, dst += kQK) {
    const float d = f16_to_f32(b[i].d);
    uint32_t qh;
    std::memcpy(&qh, b[i].qh, 4);
    for (int j = 0; j < kHalf; ++j) {
      const int hi0 = static_cast<int>((qh >> j) & 1u) << 4;
      const int hi1 = static_cast<int>((qh >> (j + kHalf)) & 1u) << 4;
      dst[j] = static_cast<float>(((b[i].qs[j] & 0xF) | hi0) - 16) * d;
      dst[j + kHalf] = static_cast<float>(((b[i].qs[j] >> 4) | hi1) - 16) * d;
    }
  }
}

void dequantize_q5_1(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockQ5_1*>(src);
  for (int64_t i = 0; i < nb; ++i, dst += kQK) {
    const float d = f16_to_f32(b[i].d), m = f16_to_f32(b[i].m);
    uint32_t qh;
    std::memcpy(&qh, b[i].qh, 4);
    for (int j = 0; j < kHalf; ++j) {
      const int hi0 = static_cast<int>((qh >> j) & 1u) << 4;
      const int hi1 = static_cast<int>((qh >> (j + kHalf)) & 1u) << 4;
      dst[j] = static_cast<float>((b[i].qs[j] & 0xF) | hi0) * d + m;
      dst[j + kHalf] = static_cast<float>((b[i].qs[j] >> 4) | hi1) * d + m;
    }
  }
}

void dequantize_q8_0(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < nb; ++i, dst += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK; ++j) dst[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

void dequantize_q8_1(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockQ8_1*>(src);
  for (int64_t i = 0; i < nb; ++i, dst += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK; ++j) dst[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

void quantize_q4_0(const float* src, void* dst, int64_t nb) {
  auto* b = static_cast<BlockQ4_0*>(dst);
  for (int64_t i = 0; i < nb; ++i, src += kQK) {
    // The largest magnitude maps to -8, the level that has no positive twin.
    const float d = signed_absmax(src, kQK) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    for (int j = 0; j < kHalf; ++j) {
      const int q0 = trunc_clamp(src[j] * id + 8.5f, 15);
      const int q1 = trunc_clamp(src[j + kHalf] * id + 8.5f, 15);
      b[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void quantize_q4_1(const float* src, void* dst, int64_t nb) {
  auto* b = static_cast<BlockQ4_1*>(dst);
  for (int64_t i = 0; i < nb; ++i, src += kQK) {
    float lo, hi;
    min_max(src, kQK, &lo, &hi);
    const float d = (hi - lo) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    b[i].m = f32_to_f16(lo);
    for (int j = 0; j < kHalf; ++j) {
      const int q0 = trunc_clamp((src[j] - lo) * id + 0.5f, 15);
      const int q1 = trunc_clamp((src[j + kHalf] - lo) * id + 0.5f, 15);
      b[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void quantize_q5_0(const float* src, void* dst, int64_t nb) {
  auto* b = static_cast<BlockQ5_0*>(dst);
  for (int64_t i = 0; i < nb; ++i, src += kQK) {
    const float d = signed_absmax(src, kQK) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    uint32_t qh = 0;
    for (int j = 0; j < kHalf; ++j) {
      const int q0 = trunc_clamp(src[j] * id + 16.5f, 31);
      const int q1 = trunc_clamp(src[j + kHalf] * id + 16.5f, 31);
      b[i].qs[j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
      qh |= static_cast<uint32_t>(q0 >> 4) << j;
      qh |= static_cast<uint32_t>(q1 >> 4) << (j + kHalf);
    }
    std::memcpy(b[i].qh, &qh, 4);
  }
}

void quantize_q5_1(const float* src, void* dst, int64_t nb) {
  auto* b = static_cast<BlockQ5_1*>(dst);
  for (int64_t i = 0; i < nb; ++i, src += kQK) {
    float lo, hi;
    min_max(src, kQK, &lo, &hi);
    const float d = (hi - lo) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    b[i].m = f32_to_f16(lo);
    uint32_t qh = 0;
    for (int j = 0; j < kHalf; ++j) {
      const int q0 = trunc_clamp((src[j] - lo) * id + 0.5f, 31);
      const int q1 = trunc_clamp((src[j + kHalf] - lo) * id + 0.5f, 31);
      b[i].qs[j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
      qh |= static_cast<uint32_t>(q0 >> 4) << j;
      qh |= static_cast<uint32_t>(q1 >> 4) << (j + kHalf);
    }
    std::memcpy(b[i].qh, &qh, 4);
  }
}

void quantize_q8_0(const float* src, void* dst, int64_t nb) {
  auto* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < nb; ++i, src += kQK) {
    const float d = std::fabs(signed_absmax(src, kQK)) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    for (int j = 0; j < kQK; ++j) b[i].qs[j] = round_q8(src[j] * id);
  }
}

void quantize_q8_1(const float* src, void* dst, int64_t nb) {
  auto* b = static_cast<BlockQ8_1*>(dst);
  for (int64_t i = 0; i < nb; ++i, src += kQK) {
    const float d = std::fabs(signed_absmax(src, kQK)) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      b[i].qs[j] = round_q8(src[j] * id);
      sum += b[i].qs[j];
    }
    b[i].s = f32_to_f16(static_cast<float>(sum) * d);
  }
}

namespace {

// Codes q[32] (already offset to 0..2^bits-1) into a Q4_0/Q4_1 (bits 4) or Q5_0/Q5_1 (bits 5)
// block's qs (and qh).
void pack_codes(const int* q, uint8_t* qs, uint8_t* qh) {
  uint32_t h = 0;
  for (int j = 0; j < kHalf; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 0xF) | ((q[j + kHalf] & 0xF) << 4));
    h |= static_cast<uint32_t>(q[j] >> 4) << j;
    h |= static_cast<uint32_t>(q[j + kHalf] >> 4) << (j + kHalf);
  }
  if (qh != nullptr) std::memcpy(qh, &h, 4);
}

double weighted_sq_error(const float* x, const float* y, const float* w) {
  double e = 0;
  for (int j = 0; j < kQK; ++j) e += static_cast<double>(w[j]) * (x[j] - y[j]) * (x[j] - y[j]);
  return e;
}

// One block of type Block: the reference encoding (already in *out) or the weighted fit,
// whichever has the smaller weighted error. `bits` 4 or 5; `affine` for the _1 types (scale and
// offset) rather than the _0 ones (signed levels).
template <class Block>
void refit_block(const float* x, const float* w, int bits, bool affine, Block* out,
                 void (*dequant)(const void*, float*, int64_t)) {
  if (usable_weights(w, kQK) == nullptr) return;
  Block cand = *out;
  int q[kQK];
  if (affine) {
    const int nmax = (1 << bits) - 1;
    uint8_t L[kQK];
    float mn = 0.0f;
    const float a = fit_scale_min(x, kQK, nmax, L, &mn, w);
    cand.d = f32_to_f16(a);
    if constexpr (requires { cand.m; }) cand.m = f32_to_f16(-mn);
    float m16 = 0.0f;
    if constexpr (requires { cand.m; }) m16 = f16_to_f32(cand.m);
    const float d16 = f16_to_f32(cand.d);
    for (int j = 0; j < kQK; ++j) q[j] = d16 > 0.0f ? round_clamp((x[j] - m16) / d16, 0, nmax) : 0;
  } else {
    const int nneg = 1 << (bits - 1), npos = nneg - 1;
    int8_t L[kQK];
    const float sc = fit_scale_symmetric(x, kQK, nneg, npos, L, w);
    cand.d = f32_to_f16(sc);
    const float d16 = f16_to_f32(cand.d);
    for (int j = 0; j < kQK; ++j) q[j] = (d16 != 0.0f ? round_clamp(x[j] / d16, -nneg, npos) : 0) + nneg;
  }
  if constexpr (requires { cand.qh; }) {
    pack_codes(q, cand.qs, cand.qh);
  } else {
    pack_codes(q, cand.qs, nullptr);
  }
  float y_ref[kQK], y_cand[kQK];
  dequant(out, y_ref, 1);
  dequant(&cand, y_cand, 1);
  if (weighted_sq_error(x, y_cand, w) < weighted_sq_error(x, y_ref, w)) *out = cand;
}

// refit_block for each of the nb blocks at dst, encoded from src (weights w) already.
template <class Block>
void refit_blocks(const float* src, const float* w, int64_t nb, int bits, bool affine, void* dst,
                  void (*dequant)(const void*, float*, int64_t)) {
  auto* b = static_cast<Block*>(dst);
  for (int64_t i = 0; i < nb; ++i) refit_block(src + i * kQK, w + i * kQK, bits, affine, &b[i], dequant);
}

}  // namespace

void quantize_q4_0(const float* src, void* dst, int64_t nb, const float* w) {
  quantize_q4_0(src, dst, nb);
  refit_blocks<BlockQ4_0>(src, w, nb, 4, false, dst, dequantize_q4_0);
}

void quantize_q4_1(const float* src, void* dst, int64_t nb, const float* w) {
  quantize_q4_1(src, dst, nb);
  refit_blocks<BlockQ4_1>(src, w, nb, 4, true, dst, dequantize_q4_1);
}

void quantize_q5_0(const float* src, void* dst, int64_t nb, const float* w) {
  quantize_q5_0(src, dst, nb);
  refit_blocks<BlockQ5_0>(src, w, nb, 5, false, dst, dequantize_q5_0);
}

void quantize_q5_1(const float* src, void* dst, int64_t nb, const float* w) {
  quantize_q5_1(src, dst, nb);
  refit_blocks<BlockQ5_1>(src, w, nb, 5, true, dst, dequantize_q5_1);
}

}  // namespace fulgur::detail
