// Dequantization of the codebook types IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S and IQ1_M
// (layouts in blocks.h, codebooks in iq_grids.h). Each type is written as a decoder of one
// 32-element sub-block into small integers v and the two scales of its halves, so that
// x[j] = s[j / 16] * v[j]; the SIMD kernels decode the same way (kernels/simd/iq_units.inc).
//
// The values are bit-equal to ggml's dequantize_row_*: for the IQ2 / IQ3 types ggml computes
// db * grid * (+-1), which is +-(db * grid); for IQ1 it computes dl * (grid +- 0.125), and here
// v = 8 * grid +- 1 with s = dl / 8 (exact: a power of two), the same real product rounded once.
#include <cstring>

#include "core/fp16.h"
#include "tensor/blocks.h"
#include "tensor/iq_grids.h"
#include "tensor/quants_impl.h"

namespace fulgur::detail {
namespace {

uint32_t le_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// 8 magnitudes (bytes of a grid entry) with the signs of the bits of `signs` (bit j: element j).
void signed_group(const uint8_t* magnitudes, int n, uint8_t signs, int8_t* v) {
  for (int j = 0; j < n; ++j) {
    const int m = magnitudes[j];
    v[j] = static_cast<int8_t>((signs >> j) & 1 ? -m : m);
  }
}
void grid8(uint64_t entry, uint8_t signs, int8_t* v) {
  uint8_t b[8];
  std::memcpy(b, &entry, 8);
  signed_group(b, 8, signs, v);
}
// Two 4-wide IQ3 entries make a group of 8; bits 0-3 of signs go to the first, 4-7 the second.
void grid4x2(uint32_t first, uint32_t second, uint8_t signs, int8_t* v) {
  uint8_t b[8];
  std::memcpy(b, &first, 4);
  std::memcpy(b + 4, &second, 4);
  signed_group(b, 8, signs, v);
}

void sub_iq2_xxs(const uint8_t* blk, int ib, int8_t* v, float* s) {
  const auto& b = *reinterpret_cast<const BlockIQ2_XXS*>(blk);
  const auto* q = reinterpret_cast<const uint8_t*>(b.qs + 4 * ib);
  const uint32_t a = le_u32(q + 4);
  s[0] = s[1] = f16_to_f32(b.d) * (0.5f + static_cast<float>(a >> 28)) * 0.25f;
  for (int l = 0; l < 4; ++l) grid8(kIq2xxsGrid[q[l]], kIq2SignBytes[(a >> (7 * l)) & 127], v + 8 * l);
}

void sub_iq2_xs(const uint8_t* blk, int ib, int8_t* v, float* s) {
  const auto& b = *reinterpret_cast<const BlockIQ2_XS*>(blk);
  const float d = f16_to_f32(b.d);
  s[0] = d * (0.5f + static_cast<float>(b.scales[ib] & 0xF)) * 0.25f;
  s[1] = d * (0.5f + static_cast<float>(b.scales[ib] >> 4)) * 0.25f;
  for (int l = 0; l < 4; ++l) {
    const uint16_t q = b.qs[4 * ib + l];
    grid8(kIq2xsGrid[q & 511], kIq2SignBytes[q >> 9], v + 8 * l);
  }
}

void sub_iq2_s(const uint8_t* blk, int ib, int8_t* v, float* s) {
  const auto& b = *reinterpret_cast<const BlockIQ2_S*>(blk);
  const float d = f16_to_f32(b.d);
  s[0] = d * (0.5f + static_cast<float>(b.scales[ib] & 0xF)) * 0.25f;
  s[1] = d * (0.5f + static_cast<float>(b.scales[ib] >> 4)) * 0.25f;
  const uint8_t* signs = b.qs + kQK_K / 8 + 4 * ib;
  for (int l = 0; l < 4; ++l) {
    const int idx = b.qs[4 * ib + l] | (((b.qh[ib] >> (2 * l)) & 3) << 8);
    grid8(kIq2sGrid[idx], signs[l], v + 8 * l);
  }
}

void sub_iq3_xxs(const uint8_t* blk, int ib, int8_t* v, float* s) {
  const auto& b = *reinterpret_cast<const BlockIQ3_XXS*>(blk);
  const uint8_t* q = b.qs + 8 * ib;
  const uint32_t a = le_u32(b.qs + kQK_K / 4 + 4 * ib);
  s[0] = s[1] = f16_to_f32(b.d) * (0.5f + static_cast<float>(a >> 28)) * 0.5f;
  for (int l = 0; l < 4; ++l)
    grid4x2(kIq3xxsGrid[q[2 * l]], kIq3xxsGrid[q[2 * l + 1]], kIq2SignBytes[(a >> (7 * l)) & 127], v + 8 * l);
}

void sub_iq3_s(const uint8_t* blk, int ib, int8_t* v, float* s) {
  const auto& b = *reinterpret_cast<const BlockIQ3_S*>(blk);
  const int sc = (b.scales[ib / 2] >> (4 * (ib % 2))) & 0xF;
  s[0] = s[1] = f16_to_f32(b.d) * static_cast<float>(1 + 2 * sc);
  const uint8_t* q = b.qs + 8 * ib;
  for (int l = 0; l < 4; ++l) {
    const int i0 = q[2 * l] | (((b.qh[ib] >> (2 * l)) & 1) << 8);
    const int i1 = q[2 * l + 1] | (((b.qh[ib] >> (2 * l + 1)) & 1) << 8);
    grid4x2(kIq3sGrid[i0], kIq3sGrid[i1], b.signs[4 * ib + l], v + 8 * l);
  }
}

// One IQ1 group of 8: 8 * grid + (shift negative ? -1 : +1).
void iq1_group(int idx, bool negative, int8_t* v) {
  int8_t g[8];
  std::memcpy(g, &kIq1sGrid[idx], 8);
  for (int j = 0; j < 8; ++j) v[j] = static_cast<int8_t>(8 * g[j] + (negative ? -1 : 1));
}

void sub_iq1_s(const uint8_t* blk, int ib, int8_t* v, float* s) {
  const auto& b = *reinterpret_cast<const BlockIQ1_S*>(blk);
  const uint16_t qh = b.qh[ib];
  const float dl = f16_to_f32(b.d) * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
  s[0] = s[1] = dl * kIq1Shift;
  for (int l = 0; l < 4; ++l) iq1_group(b.qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8), (qh & 0x8000) != 0, v + 8 * l);
}

void sub_iq1_m(const uint8_t* blk, int ib, int8_t* v, float* s) {
  const auto& b = *reinterpret_cast<const BlockIQ1_M*>(blk);
  uint16_t sc[4];
  std::memcpy(sc, b.scales, 8);
  // The f16 super-scale: the top nibble of each of the 4 scale words, lowest word first.
  const uint16_t dbits = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) |
                                               (sc[3] & 0xF000));
  const float d = f16_to_f32(dbits);
  const int shift = 6 * (ib % 2);
  s[0] = d * static_cast<float>(2 * ((sc[ib / 2] >> shift) & 7) + 1) * kIq1Shift;
  s[1] = d * static_cast<float>(2 * ((sc[ib / 2] >> (shift + 3)) & 7) + 1) * kIq1Shift;
  for (int l = 0; l < 4; ++l) {
    const uint8_t h = static_cast<uint8_t>(b.qh[2 * ib + l / 2] >> (4 * (l % 2)));  // this group's nibble
    iq1_group(b.qs[4 * ib + l] | ((h & 7) << 8), (h & 8) != 0, v + 8 * l);
  }
}

template <void (*Sub)(const uint8_t*, int, int8_t*, float*), size_t kBytes>
void dequantize_grid(const void* src, float* dst, int64_t nb) {
  const auto* p = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < nb; ++i, p += kBytes) {
    for (int ib = 0; ib < kQK_K / 32; ++ib, dst += 32) {
      int8_t v[32];
      float s[2];
      Sub(p, ib, v, s);
      for (int j = 0; j < 32; ++j) dst[j] = s[j / 16] * static_cast<float>(v[j]);
    }
  }
}

}  // namespace

void dequantize_iq2_xxs(const void* src, float* dst, int64_t nb) {
  dequantize_grid<sub_iq2_xxs, sizeof(BlockIQ2_XXS)>(src, dst, nb);
}
void dequantize_iq2_xs(const void* src, float* dst, int64_t nb) {
  dequantize_grid<sub_iq2_xs, sizeof(BlockIQ2_XS)>(src, dst, nb);
}
void dequantize_iq2_s(const void* src, float* dst, int64_t nb) {
  dequantize_grid<sub_iq2_s, sizeof(BlockIQ2_S)>(src, dst, nb);
}
void dequantize_iq3_xxs(const void* src, float* dst, int64_t nb) {
  dequantize_grid<sub_iq3_xxs, sizeof(BlockIQ3_XXS)>(src, dst, nb);
}
void dequantize_iq3_s(const void* src, float* dst, int64_t nb) {
  dequantize_grid<sub_iq3_s, sizeof(BlockIQ3_S)>(src, dst, nb);
}
void dequantize_iq1_s(const void* src, float* dst, int64_t nb) {
  dequantize_grid<sub_iq1_s, sizeof(BlockIQ1_S)>(src, dst, nb);
}
void dequantize_iq1_m(const void* src, float* dst, int64_t nb) {
  dequantize_grid<sub_iq1_m, sizeof(BlockIQ1_M)>(src, dst, nb);
}

}  // namespace fulgur::detail
