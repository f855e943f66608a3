// AVX2 matmul over IQ4_XS weights in 16-row tiles (layout: kernels/pack/iq4_xs.cpp): the IQ4_NL
// tile kernel's block step (tiles_b32.inc, nibble_codes.inc) on each 32-column sub-block, whose
// weight scales d * (ls - 32) are rebuilt for 8 rows at once from the unit's header instead of
// read as f16. Per sub-block and in this order for every output (as for IQ4_NL),
//   inner = da * dot,  acc += (d * (ls - 32)) * inner
// where d * (ls - 32) is exact in f32 (an 11-bit times a 6-bit significand).
// tiles_b32.inc's outer loops: with up to 2 activation rows both halves of a tile in one sweep, with more
// one after the other; every output's f32 steps are the same whatever R, the grouping or the
// thread split, so row i of a batch is bit-identical to that row computed alone.
// The AVX-512 kernel (avx512/tiles_b4.cpp) reaches the same integers and f32 steps: the same bits.
// Everything but the entry point has internal linkage (ODR, see quant_act.h).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/act_panels.h"
#include "tensor/blocks.h"

namespace fulgur::kernels::avx2 {
namespace {

#include "kernels/simd/tile_loops.inc"
#include "kernels/avx2/tiles_b32.inc"
#include "kernels/avx2/nibble_codes.inc"

constexpr int64_t kUnitBytes = 2176, kCodeOff = 128;  // pack/iq4_xs.cpp

// The half's 8 rows of one unit's header: d as f32, scales_h and scales_l as 32-bit lanes.
struct Header {
  __m256 d;
  __m256i hi, lo;
  Header(const uint8_t* u, int h)
      : d(f16x8(u + 16 * h)),
        hi(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(u + 32 + 16 * h)))),
        lo(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(u + 64 + 32 * h))) {}
  // d * (ls_j - 32), ls_j = nibble j of scales_l | bits 2j, 2j + 1 of scales_h << 4 (blocks.h).
  __m256 scale(int j) const {
    const __m256i l = _mm256_and_si256(_mm256_srli_epi32(lo, 4 * j), _mm256_set1_epi32(0xF));
    const __m256i h = _mm256_and_si256(_mm256_srli_epi32(hi, 2 * j), _mm256_set1_epi32(3));
    const __m256i ls = _mm256_sub_epi32(_mm256_or_si256(l, _mm256_slli_epi32(h, 4)), _mm256_set1_epi32(32));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(ls), d);
  }
};

}  // namespace

void packed_rect_iq4_xs(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  const IQ4NLCodes codes_of;
  const int64_t nsb = t.w->cols / 256;
  packed_rect_tiles(t, o0, o1, r0, r1, [&](auto R, auto H, const uint8_t* tile, int h0, const auto& rows, auto& acc) {
    for (int64_t sb = 0; sb < nsb; ++sb) {
      const uint8_t* u = tile + sb * kUnitBytes;
      if (h0 == 0)  // see kPrefetch
        for (int64_t l = 0; l < kUnitBytes; l += 64)
          _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(u) + kPrefetch + l), _MM_HINT_T1);
      for (int h = 0; h < H; ++h) {
        const Header head(u, h0 + h);
        for (int j = 0; j < 8; ++j)
          block_step<IQ4NLCodes, R>(codes_of, u + kCodeOff + 256 * j + 32 * (h0 + h), head.scale(j), rows.aq,
                                    rows.co, 8 * sb + j, acc[h]);
      }
    }
  });
}

}  // namespace fulgur::kernels::avx2
