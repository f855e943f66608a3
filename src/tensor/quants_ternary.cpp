// The ternary types TQ1_0 (base-3, 5 trits per byte) and TQ2_0 (2 bits per trit): 256 elements
// with one f16 scale, x = d * (trit - 1), trit in 0..2. Dequantizers follow ggml's expressions;
// the quantizers use ggml's scheme (d = max |x|, trit = round(x / d) + 1), which reproduces a
// ternary weight matrix (BitNet-style: every value in {-a, 0, a}) exactly up to a's f16 rounding.
#include <cmath>

#include "core/fp16.h"
#include "tensor/blocks.h"
#include "tensor/quants_impl.h"

namespace fulgur::detail {
namespace {

// Trit n (0 = most significant) of a TQ1_0 byte: the byte is ceil(t * 256 / 243) for the base-3
// number t of its 5 trits, so multiplying by 3^n (mod 256) brings trit n to the top and
// (b * 3) >> 8 reads it.
int tq1_trit(uint8_t b, int n) {
  static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  const auto q = static_cast<uint8_t>(b * kPow3[n]);
  return (q * 3) >> 8;
}

// The byte of trits t[0] (most significant) .. t[k-1], each in 0..2, k <= 5 (fewer trits are
// the top ones of the byte, the rest zero).
uint8_t tq1_pack(const int* t, int k) {
  int q = 0;
  for (int n = 0; n < 5; ++n) q = 3 * q + (n < k ? t[n] : 0);
  return static_cast<uint8_t>((q * 256 + 242) / 243);  // ceiling division
}

float amax_of(const float* x, int n) {
  float amax = 0.0f;
  for (int j = 0; j < n; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  return amax;
}

}  // namespace

void dequantize_tq1_0(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockTQ1_0*>(src);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = f16_to_f32(b[i].d);
    // Bytes 0..31 carry elements 32n + m, bytes 32..47 elements 160 + 16n + m, qh 240 + 4n + j.
    for (int n = 0; n < 5; ++n)
      for (int m = 0; m < 32; ++m) *dst++ = static_cast<float>(tq1_trit(b[i].qs[m], n) - 1) * d;
    for (int n = 0; n < 5; ++n)
      for (int m = 0; m < 16; ++m) *dst++ = static_cast<float>(tq1_trit(b[i].qs[32 + m], n) - 1) * d;
    for (int n = 0; n < 4; ++n)
      for (int j = 0; j < 4; ++j) *dst++ = static_cast<float>(tq1_trit(b[i].qh[j], n) - 1) * d;
  }
}

void dequantize_tq2_0(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockTQ2_0*>(src);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int h = 0; h < 2; ++h)
      for (int l = 0; l < 4; ++l)
        for (int m = 0; m < 32; ++m)
          *dst++ = static_cast<float>(((b[i].qs[32 * h + m] >> (2 * l)) & 3) - 1) * d;
  }
}

void quantize_tq1_0(const float* src, void* dst, int64_t nb) {
  auto* b = static_cast<BlockTQ1_0*>(dst);
  for (int64_t i = 0; i < nb; ++i, src += kQK_K) {
    const float d = amax_of(src, kQK_K);
    const float id = d > 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    auto trit = [&](int e) { return round_clamp(src[e] * id, -1, 1) + 1; };
    int t[5];
    for (int m = 0; m < 32; ++m) {
      for (int n = 0; n < 5; ++n) t[n] = trit(32 * n + m);
      b[i].qs[m] = tq1_pack(t, 5);
    }
    for (int m = 0; m < 16; ++m) {
      for (int n = 0; n < 5; ++n) t[n] = trit(160 + 16 * n + m);
      b[i].qs[32 + m] = tq1_pack(t, 5);
    }
    for (int j = 0; j < 4; ++j) {
      for (int n = 0; n < 4; ++n) t[n] = trit(240 + 4 * n + j);
      b[i].qh[j] = tq1_pack(t, 4);
    }
  }
}

void quantize_tq2_0(const float* src, void* dst, int64_t nb) {
  auto* b = static_cast<BlockTQ2_0*>(dst);
  for (int64_t i = 0; i < nb; ++i, src += kQK_K) {
    const float d = amax_of(src, kQK_K);
    const float id = d > 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    for (int h = 0; h < 2; ++h)
      for (int m = 0; m < 32; ++m) {
        int q = 0;
        for (int l = 0; l < 4; ++l) q |= (round_clamp(src[128 * h + 32 * l + m] * id, -1, 1) + 1) << (2 * l);
        b[i].qs[32 * h + m] = static_cast<uint8_t>(q);
      }
  }
}

}  // namespace fulgur::detail
