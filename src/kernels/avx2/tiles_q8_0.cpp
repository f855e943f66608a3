// AVX2 matmul over Q8_0 weights in 16-row tiles (layout: kernels/pack/q8_0.cpp), with the same
// f32 steps as kernels/avx512/tiles_q8_0.cpp, so the two give the same bits. The loops are
// tiles_b32.inc's, shared with Q4_0 and IQ4_NL; this file says how Q8_0's codes are read.
//
// A ymm register holds half of one of a block's 8 code registers: 4 consecutive columns of 8
// rows, stored as u = q + 128. maddubs multiplies unsigned by signed bytes, and u * a would
// overflow its int16 pairs, so the codes go back to q (xor 0x80) and the sign trick applies
// (tiles_b32.inc). The 8 registers of a block sum to dot(q, a) per row; adding 128 * sum(a)
// (act_panels.h's bias) gives dot(u, a), the integer the AVX-512 kernel's vpdpbusd leaves. Then,
// per block and in this order for every output,
//   inner = da * dot - 128 * S,  acc += dw * inner
// as the AVX-512 kernel does.
// Everything but the entry point has internal linkage (ODR, see quant_act.h).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/act_panels.h"

namespace fulgur::kernels::avx2 {
namespace {

#include "kernels/simd/tile_loops.inc"
#include "kernels/avx2/tiles_b32.inc"

// Register j of a block (64 bytes at 64 j, this half's 32 of them) is columns 4j .. 4j + 3.
struct Q8Codes {
  static constexpr int64_t kBlockBytes = 16 * kBlock;
  static constexpr bool kUnsigned = false, kOffset = true;
  static int32_t dot_start(const Q80Coef& c) { return c.bias; }  // dot(q + 128, a)
  template <class F>
  void steps(const uint8_t* codes, F&& f) const {
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j)
      f(4 * j, _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + 64 * j)), flip));
  }
};

}  // namespace

void packed_rect_q8_0(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  packed_rect_b32(Q8Codes{}, t, o0, o1, r0, r1);
}

}  // namespace fulgur::kernels::avx2
