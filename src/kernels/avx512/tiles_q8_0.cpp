// AVX-512 VNNI matmul over Q8_0 weights in 16-row tiles (layout: kernels/pack/q8_0.cpp).
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
// keeps ISA-flagged files to declarations and plain data): kPackRows is repeated below.
#include "kernels/act_panels.h"

namespace fulgur::kernels::avx512 {
namespace {

#include "kernels/simd/tile_loops.inc"

// Activation rows per register tile: 8 weight registers + the scale vector + R int32 dots +
// R f32 accumulators + temporaries fit the 32 zmm registers at R = 8.
constexpr int kMaxRows = 8;
// With more than kMaxRows activation rows, the output tiles are taken in groups of about this
// many weight bytes: a group stays in L2 while every group of kMaxRows activation rows passes
// over it, so the weights come from DRAM once per call.
// (Also splitting the columns into chunks, so a row group's activations stay in L1, measured
// no faster at 1024 x 4096.)
constexpr int64_t kGroupBytes = 384 * 1024;

// Software prefetch distance in the tile stream (the tiles of a thread's range are contiguous,
// so it runs on into the next tile). With 2 or more activation rows the compute per byte is
// high enough that the hardware prefetcher alone leaves DRAM idle between bursts (measured on
// one core, weights from DRAM: n = 8 took 1.6x the time of n = 1 without, 1.05x with).
// Into L2, 8 KiB ahead: prefetches into L1 are capped by its few miss buffers, too few lines in
// flight to cover DRAM latency while the core computes. On Zen 4 (2560 x 9728, n = 8 against
// n = 1, weights from DRAM, alternating runs) L1 prefetches 4 KiB ahead left 1.9x at one thread
// and 1.3-1.5x at two; these leave 1.15-1.3x and 0.95-1.1x.
// At one row (decode) the same prefetch, only 4 KiB ahead, helps too, though less. 0.6b Q8_0
// decode, Zen 4 VM, 2 threads, as a share of the floor read on its own weights next to it
// (`fulgur bench --floor`), alternating runs: 81-87 % -> 85-91 % while the host lent ~33 GB/s,
// 63-72 % -> 72 % in stretches when it lent ~60 GB/s. 8 KiB ahead measured the same at ~33 GB/s
// and 60-62 % at ~60 GB/s. (The first version of this kernel found one-row prefetching
// 10 % slower, but into L1, 4 KiB ahead.)
// Prefetches past the matrix's end are harmless (they never fault).
constexpr int64_t kPrefetch = 8192, kPrefetchOneRow = 4096;
constexpr int64_t kPackRows = 16;  // = kernels/packed.h's
constexpr int64_t kBlock = 32;
constexpr int64_t kCodeBytes = 16 * kBlock;            // one block of a tile: 8 registers
constexpr int64_t kPairBytes = 2 * (kCodeBytes + 32);  // two blocks + their scales

// 4 activation bytes as one int32, to broadcast to every lane. (GCC 12 emits a vpbroadcastd per
// product rather than vpdpbusd's embedded {1to16} memory operand; an inline-asm version with
// the embedded broadcast measured no faster, the kernel is not front-end bound.)
inline int32_t ld_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// One block (codes: 512 bytes, scales: 16 f16) into the accumulators of R activation rows.
template <int R>
inline void block_step(const uint8_t* codes, const uint8_t* scales, const int8_t* const* aq,
                       const Q80Coef* const* co, int64_t b, __m512* acc) {
  __m512i w[8];
  for (int j = 0; j < 8; ++j) w[j] = _mm512_loadu_si512(codes + 64 * j);
  const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales)));
  __m512i dot[R];
  for (int r = 0; r < R; ++r) dot[r] = _mm512_setzero_si512();
  for (int j = 0; j < 8; ++j)
    for (int r = 0; r < R; ++r)
      dot[r] =
          _mm512_dpbusd_epi32(dot[r], w[j], _mm512_set1_epi32(ld_i32(aq[r] + kBlock * b + 4 * j)));
  for (int r = 0; r < R; ++r) {
    const __m512 inner = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[r]), _mm512_set1_ps(co[r][b].da),
                                         _mm512_set1_ps(co[r][b].off));
    acc[r] = _mm512_fmadd_ps(dw, inner, acc[r]);
  }
}

// Output tiles [t0, t1) for the R activation rows from r.
template <int R>
void tiles(const Q80Call& c, int64_t t0, int64_t t1, int64_t r) {
  const MatmulTask& t = *c.t;
  const WeightView& w = *t.w;
  const int8_t* aq[R];
  const Q80Coef* co[R];
  float* y[R];
  for (int i = 0; i < R; ++i) {
    aq[i] = t.act.q + (r + i) * t.act.kp;
    co[i] = c.coef + (r + i - c.r0) * c.nb;
    y[i] = t.y + (r + i) * t.ldy;
  }
  const __m512 scale = _mm512_set1_ps(w.scale);
  for (int64_t tt = t0; tt < t1; ++tt) {
    const auto* tile =
        static_cast<const uint8_t*>(w.data) + tt * static_cast<int64_t>(w.row_stride);
    const int64_t o = tt * kPackRows;
    const auto m = static_cast<__mmask16>(c.o1 - o >= kPackRows ? 0xFFFF : (1u << (c.o1 - o)) - 1);
    __m512 acc[R];
    for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= c.nb; b += 2) {
      const uint8_t* p = tile + b / 2 * kPairBytes;
      constexpr int64_t ahead = R == 1 ? kPrefetchOneRow : kPrefetch;
      for (int64_t l = 0; l < kPairBytes; l += 64)
        _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(p) + ahead + l), _MM_HINT_T1);
      block_step<R>(p, p + 2 * kCodeBytes, aq, co, b, acc);
      block_step<R>(p + kCodeBytes, p + 2 * kCodeBytes + 32, aq, co, b + 1, acc);
    }
    if (b < c.nb) {  // an odd last block: codes, then scales
      const uint8_t* p = tile + b / 2 * kPairBytes;
      block_step<R>(p, p + kCodeBytes, aq, co, b, acc);
    }
    for (int i = 0; i < R; ++i) _mm512_mask_storeu_ps(y[i] + o, m, _mm512_mul_ps(acc[i], scale));
  }
}

}  // namespace

void packed_rect_q8_0(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  const WeightView& w = *t.w;
  const int64_t nb = w.cols / kBlock;
  const Q80Call c{&t, q8_0_coefs(t.act, r0, r1 - r0, nb, false), nb, o1, r0};
  const int64_t t0 = o0 / kPackRows, t1 = (o1 + kPackRows - 1) / kPackRows;
  for_row_tiles<kMaxRows>(t0, t1, r0, r1, static_cast<int64_t>(w.row_stride), kGroupBytes,
                          [&](auto R, int64_t ta, int64_t te, int64_t r) { tiles<R>(c, ta, te, r); });
}

}  // namespace fulgur::kernels::avx512
