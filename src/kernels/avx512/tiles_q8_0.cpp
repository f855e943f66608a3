// AVX-512 VNNI matmul over Q8_0 weights in 16-row tiles (layout: kernels/pack/q8_0.cpp). The loops
// are avx512/tiles_b32.inc's, shared with Q4_0, IQ4_NL and IQ4_XS; this file says how Q8_0's codes
// are read (8 registers of 64 bytes a block, stored as q + 128: unsigned, as vpdpbusd wants).
//
// Per 32-column block of a tile and per activation row: 8 vpdpbusd, each multiplying one
// register of weight codes (4 columns of all 16 rows) by 4 activation bytes broadcast to every
// lane, leave in lane i the integer dot of row i with the block; then
//   inner = da * dot - 128 * S        (da: the activation block's scale, S: its d-scaled sum;
//                                      removes the +128 of the stored codes)
//   acc  += dw * inner                (dw: the 16 rows' f16 scales as one vector)
// so the accumulator's lanes are the tile's 16 outputs. One set of 8 weight registers serves R
// activation rows (R = 1 .. kMaxRows, a template parameter).
//
// Every output is the same sequence of f32 operations (blocks in order, one fma pair each), no
// matter R, the tile grouping, the thread split or the batch size: row i of a batch is bitwise
// equal to that row computed alone, which speculative verification relies on.
//
// Cost at many rows: 8 vpdpbusd + 1 convert + 2 fma per row and block. On Zen 5 the fmas
// share the two pipes of vpdpbusd, so the ceiling is about 8 / 10 of the vpdpbusd peak; the
// kernel reaches ~85 % of that ceiling (about 550 GFLOP/s per core with the tiles in L2).

// GCC 12 reports the deliberately undefined inputs inside its own AVX-512 intrinsic headers
// (cvtepi32_ps) as maybe-uninitialized: a known false positive, as in avx512/matmul.cpp.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

// Not kernels/packed.h (declares classes with inline members; the ODR rule of quant_act.h
// keeps ISA-flagged files to declarations and plain data): tiles_b32.inc repeats kPackRows.
#include "kernels/act_panels.h"

namespace fulgur::kernels::avx512 {
namespace {

#include "kernels/simd/tile_loops.inc"
#include "kernels/avx512/tiles_b32.inc"

// Register j of a block (64 bytes at 64 j) is columns 4j .. 4j + 3 of the 16 rows.
struct Q8Codes {
  static constexpr int64_t kBlockBytes = 16 * kBlock;
  static constexpr bool kOffset = true, kBias = false;
  static int32_t dot_start(const Q80Coef&) { return 0; }
  void load(const uint8_t* codes, __m512i* w) const {
    for (int j = 0; j < 8; ++j) w[j] = _mm512_loadu_si512(codes + 64 * j);
  }
};

}  // namespace

void packed_rect_q8_0(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  packed_rect_pairs(Q8Codes{}, t, o0, o1, r0, r1);
}

}  // namespace fulgur::kernels::avx512
