// AVX2 matmul over Q4_0 and IQ4_NL weights in 16-row tiles (layout: kernels/pack/q4_0_iq4_nl.cpp):
// tiles_b32.inc's loops, the Q8_0 tile kernel's, with the 4-bit codes expanded in registers. A
// 32-byte load of a block's code group k gives 8 rows' bytes qs[4k .. 4k + 3]; their low nibbles
// are columns 4k .. 4k + 3 and their high nibbles columns 16 + 4k .. 16 + 4k + 3.
//  - Q4_0 (value = nibble - 8): the nibbles go into maddubs unsigned and the dot starts from
//    -8 sum(a) (tiles_b32.inc), the same integer as the values' dot at half the work.
//  - IQ4_NL (value = kIq4nlValues[nibble], -127 .. 113): one pshufb through the 16 values turns
//    the nibbles into int8 for the sign trick.
// The AVX-512 kernel (avx512/tiles_b4.cpp) reaches the same integers and f32 steps: the same bits.
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
#include "kernels/avx2/nibble_codes.inc"

struct Q4_0Codes {
  static constexpr int64_t kBlockBytes = 16 * kBlock / 2;
  static constexpr bool kUnsigned = true, kOffset = false;
  static int32_t dot_start(const Q80Coef& c) { return -(c.bias / 16); }  // -8 sum(a)
  template <class F>
  void steps(const uint8_t* codes, F&& f) const {
    nibble_steps(codes, f);
  }
};

}  // namespace

void packed_rect_q4_0(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  packed_rect_b32(Q4_0Codes{}, t, o0, o1, r0, r1);
}

void packed_rect_iq4_nl(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  packed_rect_b32(IQ4NLCodes{}, t, o0, o1, r0, r1);
}

}  // namespace fulgur::kernels::avx2
