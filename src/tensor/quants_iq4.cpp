// The non-uniform 4-bit types: IQ4_NL (32-element blocks, one f16 scale) and IQ4_XS (256-element
// super-blocks, 6-bit sub-block scales). Dequantizers follow ggml's expressions; the quantizers
// search the scale (the codebook is not uniform, so max/127 alone wastes levels).
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "tensor/blocks.h"
#include "tensor/quants_impl.h"

namespace fulgur::detail {
namespace {

// Index of the codebook entry nearest to v (the table is sorted: binary search for the first
// entry >= v, then compare with its left neighbour). NaN maps to the entry nearest 0.
int nearest_iq4nl(float v) {
  if (!(v == v)) return 8;
  int lo = 0, hi = 15;
  if (v <= kIq4nlValues[0]) return 0;
  if (v >= kIq4nlValues[15]) return 15;
  while (hi - lo > 1) {  // invariant: table[lo] < v <= table[hi]
    const int mid = (lo + hi) / 2;
    if (v > kIq4nlValues[mid])
      lo = mid;
    else
      hi = mid;
  }
  return (v - kIq4nlValues[lo] < kIq4nlValues[hi] - v) ? lo : hi;
}

// Scale s minimising sum (x - s * table[code])^2 over n values: inverse scales that put the
// largest magnitude near -127 (the widest end of the codebook) are tried, each with its
// least-squares scale. Returns 0 for an all-zero or non-finite block.
float fit_iq4nl_scale(const float* x, int n, const float* w) {
  w = usable_weights(w, n);
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  if (amax == 0.0f || !std::isfinite(amax)) return 0.0f;
  double best_q = -1;
  float best = 0.0f;
  for (int t = -7; t <= 7; ++t) {
    const float id = (static_cast<float>(kIq4nlValues[0]) + static_cast<float>(t)) / max;
    double sqx = 0, sq2 = 0;
    for (int j = 0; j < n; ++j) {
      const double q = kIq4nlValues[nearest_iq4nl(x[j] * id)];
      const double wj = w != nullptr ? w[j] : 1.0;  // importance (1 each: the plain sums)
      sqx += wj * q * x[j];
      sq2 += wj * q * q;
    }
    // With the refit scale sqx/sq2 the squared error is sum(x^2) - sqx^2/sq2: maximise the latter.
    if (sq2 > 0 && sqx * sqx / sq2 > best_q) {
      best_q = sqx * sqx / sq2;
      best = static_cast<float>(sqx / sq2);
    }
  }
  return best;
}

// Codes of 32 values for scale d in IQ4_NL nibble order (low = 0..15, high = 16..31).
void pack_iq4(const float* x, float d, uint8_t* qs) {
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < kQK / 2; ++j) {
    const int q0 = nearest_iq4nl(x[j] * id);
    const int q1 = nearest_iq4nl(x[j + kQK / 2] * id);
    qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

}  // namespace

void dequantize_iq4_nl(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockIQ4_NL*>(src);
  for (int64_t i = 0; i < nb; ++i, dst += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = d * static_cast<float>(kIq4nlValues[b[i].qs[j] & 0xF]);
      dst[j + kQK / 2] = d * static_cast<float>(kIq4nlValues[b[i].qs[j] >> 4]);
    }
  }
}

void dequantize_iq4_xs(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockIQ4_XS*>(src);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int ib = 0; ib < kQK_K / kQK; ++ib, dst += kQK) {
      const int ls = ((b[i].scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) |
                     (((b[i].scales_h >> (2 * ib)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      const uint8_t* qs = b[i].qs + 16 * ib;
      for (int j = 0; j < kQK / 2; ++j) {
        dst[j] = dl * static_cast<float>(kIq4nlValues[qs[j] & 0xF]);
        dst[j + kQK / 2] = dl * static_cast<float>(kIq4nlValues[qs[j] >> 4]);
      }
    }
  }
}

void quantize_iq4_nl(const float* src, void* dst, int64_t nb, const float* w) {
  auto* b = static_cast<BlockIQ4_NL*>(dst);
  for (int64_t i = 0; i < nb; ++i, src += kQK) {
    b[i].d = f32_to_f16(fit_iq4nl_scale(src, kQK, w != nullptr ? w + i * kQK : nullptr));
    pack_iq4(src, f16_to_f32(b[i].d), b[i].qs);  // codes for the scale as stored
  }
}

void quantize_iq4_xs(const float* src, void* dst, int64_t nb, const float* w) {
  auto* b = static_cast<BlockIQ4_XS*>(dst);
  constexpr int kSub = kQK_K / kQK;  // 8 sub-blocks
  for (int64_t i = 0; i < nb; ++i, src += kQK_K) {
    float scales[kSub];  // [8] fitted sub-block scales (signed)
    float amax = 0.0f, max = 0.0f;
    for (int ib = 0; ib < kSub; ++ib) {
      scales[ib] = fit_iq4nl_scale(src + kQK * ib, kQK, w != nullptr ? w + i * kQK_K + kQK * ib : nullptr);
      if (std::fabs(scales[ib]) > amax) {
        amax = std::fabs(scales[ib]);
        max = scales[ib];
      }
    }
    // The largest scale takes ls - 32 = -32, the end with the extra level.
    const float d = max != 0.0f ? -max / 32.0f : 0.0f;
    b[i].d = f32_to_f16(d);
    const float d16 = f16_to_f32(b[i].d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].scales_h = 0;
    std::memset(b[i].scales_l, 0, sizeof(b[i].scales_l));
    for (int ib = 0; ib < kSub; ++ib) {
      const int l = round_clamp(scales[ib] * id, -32, 31);
      const int ls = l + 32;
      b[i].scales_l[ib / 2] |= static_cast<uint8_t>((ls & 0xF) << (4 * (ib % 2)));
      b[i].scales_h = static_cast<uint16_t>(b[i].scales_h | ((ls >> 4) << (2 * ib)));
      pack_iq4(src + kQK * ib, d16 * static_cast<float>(l), b[i].qs + 16 * ib);
    }
  }
}

}  // namespace fulgur::detail
