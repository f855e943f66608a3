// AVX2 matmul over Q4_0 and IQ4_NL weights in 16-row tiles (layout: kernels/pack/q4_0_iq4_nl.cpp):
// tiles_b32.inc's loops, the Q8_0 tile kernel's, with the 4-bit codes expanded to int8 in
// registers. A 32-byte load of a block's code group k gives 8 rows' bytes qs[4k .. 4k + 3]; their
// low nibbles are columns 4k .. 4k + 3 and their high nibbles columns 16 + 4k .. 16 + 4k + 3, and
// one pshufb through the type's 16 values turns either into int8 (Q4_0: nibble - 8, IQ4_NL:
// kIq4nlValues). Values of at most 127 in magnitude keep the sign trick's int16 pairs in range.
// No AVX-512 kernel yet (pack/q4_0_iq4_nl.cpp).
// Everything but the entry points has internal linkage (ODR, see quant_act.h).
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

// The 4-bit codes of one type, through its table of 16 values (in both 128-bit lanes).
struct NibbleCodes {
  static constexpr int64_t kBlockBytes = 16 * kBlock / 2;
  static constexpr bool kOffset = false;
  __m256i table;
  explicit NibbleCodes(const int8_t* values)
      : table(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(values)))) {}
  template <class F>
  void steps(const uint8_t* codes, F&& f) const {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + 64 * k));
      f(4 * k, _mm256_shuffle_epi8(table, _mm256_and_si256(v, m4)));
      f(16 + 4 * k, _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4)));
    }
  }
};

constexpr int8_t kQ4_0Values[16] = {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};

}  // namespace

void packed_rect_q4_0(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  packed_rect_b32(NibbleCodes(kQ4_0Values), t, o0, o1, r0, r1);
}

void packed_rect_iq4_nl(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  packed_rect_b32(NibbleCodes(kIq4nlValues), t, o0, o1, r0, r1);
}

}  // namespace fulgur::kernels::avx2
