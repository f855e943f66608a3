// AVX2 matmul over Q8_0 weights in 16-row tiles (layout: kernels/pack/q8_0.cpp), with the same
// f32 steps as kernels/avx512/tiles_q8_0.cpp, so the two give the same bits.
//
// A ymm register holds half of one of a block's 8 code registers: 4 consecutive columns of 8
// rows, stored as u = q + 128. maddubs multiplies unsigned by signed bytes, and u * a would
// overflow its int16 pairs, so the codes go back to q (xor 0x80) and the sign trick applies:
// maddubs(|q|, sign(a, q)), pairs of at most 2 * 128 * 127 < 2^15; madd with ones widens them to
// 4-column dots per row. The 8 registers of a block sum to dot(q, a) per row; adding 128 * sum(a)
// (act_panels.h's bias) gives dot(u, a), the integer the AVX-512 kernel's vpdpbusd leaves. Then,
// per block and in this order for every output,
//   inner = da * dot - 128 * S,  acc += dw * inner
// The lanes of the accumulator are 8 of the tile's outputs: no horizontal sums, and the scales
// cost one convert and two FMAs per 8 outputs and block instead of per output (the row-major
// kernel's), which is what a verification batch of 8 rows spends most of its time on there.
//
// With up to 2 rows both halves of a tile go in one sweep; with more, one after the other (the
// accumulators would not fit the 16 ymm registers beside the codes). Every output's f32
// steps are the same whatever R, the grouping or the thread split: row i of a batch is
// bit-identical to that row computed alone.
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

// Activation rows per register tile: R dots, R accumulators, the codes, their absolute values,
// a broadcast and the scales in 16 ymm registers.
constexpr int kMaxRows = 4;
// With more rows, tiles go in groups of about this many bytes, which stay in L2 (512 KiB on
// Zen 1) while every group of rows passes over them.
constexpr int64_t kGroupBytes = 256 * 1024;
// Software prefetch into L2 this far ahead in the tile stream, by the first half's sweep, at
// every row count (as in the AVX-512 kernel; past the matrix's end it never faults). Zen 4 VM
// running this AVX2 code, 0.6b Q8_0, alternating runs: a verification batch of 8 rows took
// 57-60 ms with it and 71 ms without; decode went from 57-59 % to 80 % of the floor at one
// thread and from 55-57 % to 76-77 % at two (~50 GB/s). In earlier sessions, with 2 threads at
// ~33 GB/s, it cost 5-13 % (84-85 % of the floor without, 79-80 % with); but on a Zen 1 the
// row-major kernel's one-row prefetch (avx2/matmul.cpp) took 0.6b Q8_0 decode from 16.4 to
// 21 tok/s, so there too the stream needs more lines in flight than the core asks for by itself.
constexpr int64_t kPrefetch = 8192;
constexpr int64_t kPackRows = 16;  // = kernels/packed.h's
constexpr int64_t kBlock = 32;
constexpr int64_t kCodeBytes = 16 * kBlock;            // one block of a tile: 8 registers of 64
constexpr int64_t kPairBytes = 2 * (kCodeBytes + 32);  // two blocks + their scales

inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// One block (codes: the half's 32 bytes in each of 8 registers of 64; scales: the half's 8 f16)
// into the accumulators of R activation rows.
template <int R>
inline void block_step(const uint8_t* codes, const uint8_t* scales, const int8_t* const* aq,
                       const Q80Coef* const* co, int64_t b, __m256* acc) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80)), ones = _mm256_set1_epi16(1);
  __m256i dot[R];
  for (int r = 0; r < R; ++r) dot[r] = _mm256_set1_epi32(co[r][b].bias);
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) {
    const __m256i q = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + 64 * j)), flip);
    const __m256i qa = _mm256_abs_epi8(q);  // 128 for q = -128: right as an unsigned byte
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m256i p = _mm256_maddubs_epi16(qa, _mm256_sign_epi8(bcast4(aq[r] + kBlock * b + 4 * j), q));
      dot[r] = _mm256_add_epi32(dot[r], _mm256_madd_epi16(p, ones));
      keep_in_register(dot[r]);
    }
  }
  const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales)));
  for (int r = 0; r < R; ++r) {
    const __m256 inner = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[r]), _mm256_set1_ps(co[r][b].da),
                                         _mm256_set1_ps(co[r][b].off));
    acc[r] = _mm256_fmadd_ps(dw, inner, acc[r]);
  }
}

// Output tiles [t0, t1) for the R activation rows from r. H = 2: both halves of a tile in one
// sweep over its blocks, so the DRAM stream never waits on a pass over cached lines (decode:
// with one half per sweep the one-row matmul ran 20-35 % slower than row-major); H = 1: one half
// per sweep, the second from L1 or L2, which leaves registers for 4 rows.
template <int R, int H>
void tiles(const Q80Call& c, int64_t t0, int64_t t1, int64_t r) {
  const MatmulTask& t = *c.t;
  const WeightView& w = *t.w;
  const int8_t* aq[R];
  const Q80Coef* co[R];
  for (int i = 0; i < R; ++i) {
    aq[i] = t.act.q + (r + i) * t.act.kp;
    co[i] = c.coef + (r + i - c.r0) * c.nb;
  }
  const __m256 scale = _mm256_set1_ps(w.scale);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t tt = t0; tt < t1; ++tt) {
    const auto* tile = static_cast<const uint8_t*>(w.data) + tt * static_cast<int64_t>(w.row_stride);
    for (int h0 = 0; h0 < 2; h0 += H) {
      if (tt * kPackRows + 8 * h0 >= c.o1) break;
      __m256 acc[H][R];
      for (int h = 0; h < H; ++h)
        for (int i = 0; i < R; ++i) acc[h][i] = _mm256_setzero_ps();
      int64_t b = 0;
      for (; b + 2 <= c.nb; b += 2) {
        const uint8_t* p = tile + b / 2 * kPairBytes;
        if (h0 == 0)
          for (int64_t l = 0; l < kPairBytes; l += 64)
            _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(p) + kPrefetch + l), _MM_HINT_T1);
        // Half h: 32 h bytes into each code register, 16 h into the block's 32 bytes of scales.
        for (int h = 0; h < H; ++h) {
          const int hh = h0 + h;
          block_step<R>(p + 32 * hh, p + 2 * kCodeBytes + 16 * hh, aq, co, b, acc[h]);
          block_step<R>(p + kCodeBytes + 32 * hh, p + 2 * kCodeBytes + 32 + 16 * hh, aq, co, b + 1, acc[h]);
        }
      }
      if (b < c.nb) {  // an odd last block: codes, then scales
        const uint8_t* p = tile + b / 2 * kPairBytes;
        for (int h = 0; h < H; ++h)
          block_step<R>(p + 32 * (h0 + h), p + kCodeBytes + 16 * (h0 + h), aq, co, b, acc[h]);
      }
      for (int h = 0; h < H; ++h) {
        const int64_t o = tt * kPackRows + 8 * (h0 + h);
        if (o >= c.o1) break;
        const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(c.o1 - o)), lane);
        for (int i = 0; i < R; ++i)
          _mm256_maskstore_ps(t.y + (r + i) * t.ldy + o, mask, _mm256_mul_ps(acc[h][i], scale));
      }
    }
  }
}

}  // namespace

void packed_rect_q8_0(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  const WeightView& w = *t.w;
  const int64_t nb = w.cols / kBlock;
  const Q80Call c{&t, q8_0_coefs(t.act, r0, r1 - r0, nb, true), nb, o1, r0};
  const int64_t t0 = o0 / kPackRows, t1 = (o1 + kPackRows - 1) / kPackRows;
  for_row_tiles<kMaxRows>(t0, t1, r0, r1, static_cast<int64_t>(w.row_stride), kGroupBytes,
                          [&](auto R, int64_t ta, int64_t te, int64_t r) {
                            if constexpr (R <= 2)
                              tiles<R, 2>(c, ta, te, r);
                            else
                              tiles<R, 1>(c, ta, te, r);
                          });
}

}  // namespace fulgur::kernels::avx2
