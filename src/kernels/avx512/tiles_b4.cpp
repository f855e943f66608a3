// AVX-512 VNNI matmul over the 4-bit types in 16-row tiles: Q4_0 and IQ4_NL (layout:
// kernels/pack/q4_0_iq4_nl.cpp) and IQ4_XS (kernels/pack/iq4_xs.cpp). Their tiles store a
// 32-column block of 16 rows as 4 lines of 64 bytes, line k lane i holding row i's
// qs[4k .. 4k + 3]: the low nibbles of a line are columns 4k .. 4k + 3 of all 16 rows and the
// high nibbles columns 16 + 4k .. 16 + 4k + 3, each exactly a vpdpbusd operand. So a block is 4
// loads, 8 operands (an AND, or a shift and an AND, then the type's expansion) and, per activation
// row, 8 vpdpbusd leaving row i's integer dot in lane i, as in the Q8_0 tile kernel
// (avx512/tiles_q8_0.cpp). vpdpbusd multiplies unsigned by signed bytes:
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

// Activation rows per register tile: 8 code registers, R dots, R accumulators and the scales
// fit the 32 zmm registers at R = 8 (as in the Q8_0 kernel).
constexpr int kMaxRows = 8;
// With more rows, tiles go in groups of about this many bytes, which stay in L2 while every
// group of rows passes over them (the Q8_0 kernel's figure).
constexpr int64_t kGroupBytes = 384 * 1024;
// Software prefetch into L2 this far ahead in the tile stream (the Q8_0 kernel's distances and
// reasons: without it the hardware prefetcher leaves DRAM idle between the bursts of a
// many-row call; past the matrix's end it never faults).
constexpr int64_t kPrefetch = 8192, kPrefetchOneRow = 4096;
constexpr int64_t kPackRows = 16;  // = kernels/packed.h's
constexpr int64_t kBlock = 32;
constexpr int64_t kCodeBytes = 16 * kBlock / 2;       // one block of a tile: 4 lines
constexpr int64_t kPairBytes = 2 * (kCodeBytes + 32);  // Q4_0 / IQ4_NL: two blocks + their scales
constexpr int64_t kXsUnitBytes = 2176, kXsCodeOff = 128;  // IQ4_XS: one super-block (pack/iq4_xs.cpp)

inline int32_t ld_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline __m512 f16x16(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

struct Q4_0Codes {
  static int32_t dot_start(const Q80Coef& c) { return -(c.bias / 16); }  // -8 sum(a)
  __m512i expand(__m512i nibbles) const { return nibbles; }
};

struct IQ4NLCodes {
  static int32_t dot_start(const Q80Coef& c) { return -c.bias; }  // -128 sum(a)
  __m512i table;
  IQ4NLCodes() {
    uint8_t t[64];  // vpshufb looks up within each 16-byte lane: the table in all four
    for (int i = 0; i < 64; ++i) t[i] = static_cast<uint8_t>(kIq4nlValues[i % 16] + 128);
    table = _mm512_loadu_si512(t);
  }
  __m512i expand(__m512i nibbles) const { return _mm512_shuffle_epi8(table, nibbles); }
};

// The R activation rows from r of one register tile: their int8 codes and block coefficients.
template <int R>
struct RowPointers {
  const int8_t* aq[R];
  const Q80Coef* co[R];
  RowPointers(const Q80Call& c, int64_t r) {
    for (int i = 0; i < R; ++i) {
      aq[i] = c.t->act.q + (r + i) * c.t->act.kp;
      co[i] = c.coef + (r + i - c.r0) * c.nb;
    }
  }
};

// Block b (codes: its 4 lines; dw: the 16 rows' weight scales) into the accumulators of R
// activation rows.
template <class Codes, int R>
inline void block_step(const Codes& codes_of, const uint8_t* codes, __m512 dw, const RowPointers<R>& rows,
                       int64_t b, __m512* acc) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  __m512i w[8];  // w[k]: columns 4k .. 4k + 3, w[4 + k]: columns 16 + 4k .. 16 + 4k + 3
  for (int k = 0; k < 4; ++k) {
    const __m512i v = _mm512_loadu_si512(codes + 64 * k);
    w[k] = codes_of.expand(_mm512_and_si512(v, m4));
    w[4 + k] = codes_of.expand(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
  }
  __m512i dot[R];
  for (int r = 0; r < R; ++r) dot[r] = _mm512_set1_epi32(Codes::dot_start(rows.co[r][b]));
  for (int j = 0; j < 8; ++j) {
    const int col = j < 4 ? 4 * j : 16 + 4 * (j - 4);
    for (int r = 0; r < R; ++r)
      dot[r] = _mm512_dpbusd_epi32(dot[r], w[j], _mm512_set1_epi32(ld_i32(rows.aq[r] + kBlock * b + col)));
  }
  for (int r = 0; r < R; ++r) {
    const __m512 inner = _mm512_mul_ps(_mm512_cvtepi32_ps(dot[r]), _mm512_set1_ps(rows.co[r][b].da));
    acc[r] = _mm512_fmadd_ps(dw, inner, acc[r]);
  }
}

// Prefetches one stretch of the tile stream at p (bytes lines), ahead by the row count's distance.
template <int R>
inline void prefetch(const uint8_t* p, int64_t bytes) {
  constexpr int64_t ahead = R == 1 ? kPrefetchOneRow : kPrefetch;
  for (int64_t l = 0; l < bytes; l += 64)
    _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(p) + ahead + l), _MM_HINT_T1);
}

// Outputs [o0, o1) for activation rows [r0, r1): sweep(R, tile, rows, acc) adds every block of
// the tile at `tile` into acc[R] (the layout's block loop).
template <class Sweep>
void packed_rect_tiles(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1, Sweep&& sweep) {
  const WeightView& w = *t.w;
  const int64_t nb = w.cols / kBlock;
  const Q80Call c{&t, q8_0_coefs(t.act, r0, r1 - r0, nb, true), nb, o1, r0};
  const int64_t t0 = o0 / kPackRows, t1 = (o1 + kPackRows - 1) / kPackRows;
  const __m512 scale = _mm512_set1_ps(w.scale);
  for_row_tiles<kMaxRows>(t0, t1, r0, r1, static_cast<int64_t>(w.row_stride), kGroupBytes,
                          [&](auto R, int64_t ta, int64_t te, int64_t r) {
                            const RowPointers<R> rows(c, r);
                            for (int64_t tt = ta; tt < te; ++tt) {
                              const auto* tile = static_cast<const uint8_t*>(w.data) + tt * static_cast<int64_t>(w.row_stride);
                              const int64_t o = tt * kPackRows;
                              const auto m = static_cast<__mmask16>(o1 - o >= kPackRows ? 0xFFFF : (1u << (o1 - o)) - 1);
                              __m512 acc[R];
                              for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
                              sweep(R, tile, rows, acc);
                              for (int i = 0; i < R; ++i)
                                _mm512_mask_storeu_ps(t.y + (r + i) * t.ldy + o, m, _mm512_mul_ps(acc[i], scale));
                            }
                          });
}

// Q4_0 and IQ4_NL: blocks in pairs, each pair's two blocks of codes then their two 32-byte
// vectors of 16 f16 scales; an odd last block is its codes, then its scales.
template <class Codes>
void packed_rect_pairs(const Codes& codes_of, const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  const int64_t nb = t.w->cols / kBlock;
  packed_rect_tiles(t, o0, o1, r0, r1, [&](auto R, const uint8_t* tile, const auto& rows, __m512* acc) {
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
      const uint8_t* p = tile + b / 2 * kPairBytes;
      prefetch<R>(p, kPairBytes);
      block_step<Codes, R>(codes_of, p, f16x16(p + 2 * kCodeBytes), rows, b, acc);
      block_step<Codes, R>(codes_of, p + kCodeBytes, f16x16(p + 2 * kCodeBytes + 32), rows, b + 1, acc);
    }
    if (b < nb) {
      const uint8_t* p = tile + b / 2 * kPairBytes;
      block_step<Codes, R>(codes_of, p, f16x16(p + kCodeBytes), rows, b, acc);
    }
  });
}

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
  packed_rect_tiles(t, o0, o1, r0, r1, [&](auto R, const uint8_t* tile, const auto& rows, __m512* acc) {
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
