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

}  // namespace fulgur::detail
