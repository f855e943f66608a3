// AVX-512 VNNI matmul over the 4-bit types in 16-row tiles: Q4_0 and IQ4_NL (layout:
// kernels/pack/q4_0_iq4_nl.cpp) and IQ4_XS (kernels/pack/iq4_xs.cpp). Their tiles store a
// 32-column block of 16 rows as 4 lines of 64 bytes, line k lane i holding row i's
// qs[4k .. 4k + 3]: the low nibbles of a line are columns 4k .. 4k + 3 of all 16 rows and the
// high nibbles columns 16 + 4k .. 16 + 4k + 3, each exactly a vpdpbusd operand. So a block is 4
// loads, 8 operands (an AND, or a shift and an AND, then the type's expansion) and, per activation
// row, 8 vpdpbusd leaving row i's integer dot in lane i: the Q8_0 tile kernel's loops
// (avx512/tiles_b32.inc). vpdpbusd multiplies unsigned by signed bytes:
//  - Q4_0 (value = nibble - 8): the nibbles go in as they are and the dot starts from
//    -8 sum(a), the same integer as the values' dot;
//  - IQ4_NL and IQ4_XS (value = kIq4nlValues[nibble], -127 .. 113): one vpshufb through the 16
//    values + 128 (1 .. 241) and the dot starts from -128 sum(a) (act_panels.h's bias).
// The integers are those the AVX2 kernels (avx2/tiles_q4_0_iq4_nl.cpp, tiles_iq4_xs.cpp) reach
// by other steps, and the f32 steps are theirs, per block and in this order for every output:
//   inner = da * dot,  acc += dw * inner
// where dw is the 16 rows' f16 scales (Q4_0, IQ4_NL) or d * (ls - 32), exact in f32 (IQ4_XS). So
// the two ISAs give the same bits, and row i of a batch those of that row computed alone,
// whatever R, the tile grouping or the thread split (speculative verification relies on it).
// Everything but the entry points has internal linkage (ODR, see quant_act.h).
// GCC 12 reports the undefined upper halves inside its own AVX-512 headers as
// maybe-uninitialized (a known false positive; see avx512/matmul.cpp).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/act_panels.h"
#include "tensor/blocks.h"

namespace fulgur::kernels::avx512 {
namespace {

#include "kernels/simd/tile_loops.inc"
#include "kernels/avx512/tiles_b32.inc"

constexpr int64_t kXsUnitBytes = 2176, kXsCodeOff = 128;  // IQ4_XS: one super-block (pack/iq4_xs.cpp)

// The 4 code lines of a block: w[k] the low nibbles of line k (columns 4k ..), w[4 + k] its high
// nibbles (columns 16 + 4k ..), through the type's expansion.
template <class Expand>
inline void nibble_load(const uint8_t* codes, __m512i* w, Expand&& expand) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  for (int k = 0; k < 4; ++k) {
    const __m512i v = _mm512_loadu_si512(codes + 64 * k);
    w[k] = expand(_mm512_and_si512(v, m4));
    w[4 + k] = expand(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
  }
}

struct Q4_0Codes {
  static constexpr int64_t kBlockBytes = 16 * kBlock / 2;
  static constexpr bool kOffset = false, kBias = true;
  static int32_t dot_start(const Q80Coef& c) { return -(c.bias / 16); }  // -8 sum(a)
  void load(const uint8_t* codes, __m512i* w) const {
    nibble_load(codes, w, [](__m512i n) { return n; });
  }
};

struct IQ4NLCodes {
  static constexpr int64_t kBlockBytes = 16 * kBlock / 2;
  static constexpr bool kOffset = false, kBias = true;
  static int32_t dot_start(const Q80Coef& c) { return -c.bias; }  // -128 sum(a)
  __m512i table;
  IQ4NLCodes() {
    uint8_t t[64];  // vpshufb looks up within each 16-byte lane: the table in all four
    for (int i = 0; i < 64; ++i) t[i] = static_cast<uint8_t>(kIq4nlValues[i % 16] + 128);
    table = _mm512_loadu_si512(t);
  }
  void load(const uint8_t* codes, __m512i* w) const {
    nibble_load(codes, w, [&](__m512i n) { return _mm512_shuffle_epi8(table, n); });
  }
};

}  // namespace

void packed_rect_q4_0(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  packed_rect_pairs(Q4_0Codes{}, t, o0, o1, r0, r1);
}

void packed_rect_iq4_nl(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  packed_rect_pairs(IQ4NLCodes{}, t, o0, o1, r0, r1);
}

// IQ4_XS: one unit per 256-column super-block, the 16 rows' f16 d, then scales_h (16-bit
// lanes), scales_l (32-bit lanes), then the 8 sub-blocks' codes.
void packed_rect_iq4_xs(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  const IQ4NLCodes codes_of;
  const int64_t nsb = t.w->cols / 256;
  packed_rect_tiles(t, o0, o1, r0, r1, IQ4NLCodes::kBias, [&](auto R, const uint8_t* tile, const auto& rows, __m512* acc) {
    for (int64_t sb = 0; sb < nsb; ++sb) {
      const uint8_t* u = tile + sb * kXsUnitBytes;
      prefetch<R>(u, kXsUnitBytes);
      const __m512 d = f16x16(u);
      const __m512i hi = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(u + 32)));
      const __m512i lo = _mm512_loadu_si512(u + 64);
      for (int j = 0; j < 8; ++j) {
        // d * (ls_j - 32), ls_j = nibble j of scales_l | bits 2j, 2j + 1 of scales_h << 4 (blocks.h).
        const __m512i l = _mm512_and_si512(_mm512_srli_epi32(lo, 4 * j), _mm512_set1_epi32(0xF));
        const __m512i h = _mm512_and_si512(_mm512_srli_epi32(hi, 2 * j), _mm512_set1_epi32(3));
        const __m512i ls = _mm512_sub_epi32(_mm512_or_si512(l, _mm512_slli_epi32(h, 4)), _mm512_set1_epi32(32));
        const __m512 dw = _mm512_mul_ps(_mm512_cvtepi32_ps(ls), d);
        block_step<IQ4NLCodes, R>(codes_of, u + kXsCodeOff + 256 * j, dw, rows, 8 * sb + j, acc);
      }
    }
  });
}

}  // namespace fulgur::kernels::avx512
