// AVX-512 VNNI kernel for Q6_K weights in 16-row tiles (layout: kernels/pack/q6_k.cpp).
//
// Per block of 32 columns the tile's six code vectors decode to 8 registers u (4 columns of each
// of the 16 rows, codes 0..63), shared by every activation row. For activation row r and
// sub-block s (16 columns, 4 registers) the integer dot
//     dot_s = -32 * sum(a over s) + sum_k vpdpbusd(u_k, broadcast of 4 bytes of a)
// is exactly sum (q - 32) * a: the offset is the accumulator's start value, an int32 per
// (row, 16-group) computed once per call. The two sub-blocks of a 32-block (one activation
// scale) are combined in integers, isum = sc_0 * dot_0 + sc_1 * dot_1 (|isum| <= 2 * 16 * 32 *
// 127 * 128 < 2^24, so the conversion to f32 is exact), then scaled by the activation block's d
// into an f32 super-block sum, which the 16 rows' d multiplies into the total. The lanes of
// every accumulator are the 16 outputs: no horizontal sums, (masked) stores straight to y.
//
// Cost per block and activation row: 8 vpdpbusd with 8 broadcasts of activation bytes, 2
// broadcasts of offsets, 2 vpmulld, an add, a convert and an FMA; the decode (26 ops) is shared
// by up to 8 rows. On Zen 5 that is about 75 cycles per block and tile at R = 8 (about 3 vector
// ops per cycle). Measured and dropped: signed codes with unsigned activations (no offset
// broadcasts, but the decode grows more than the rows save), offsets as f32 FMAs on the
// activation sums, and embedded {1to16} broadcasts in vpdpbusd (half the throughput of a
// separate vpbroadcastd on Zen 5).
//
// Every output's operations and their order are the same whatever R (activation rows per
// register tile), the tile grouping, the thread split or n: row i of a batch is bit-identical to
// that row computed alone.
// GCC 12 reports the undefined upper half inside its own _mm512_cvtph_ps as maybe-uninitialized
// (a known false positive, as in avx512/matmul.cpp).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/packed.h"
#include "kernels/act_panels.h"

namespace fulgur::kernels::avx512 {
namespace {

#include "kernels/simd/tiles_q6_k.inc"
#include "kernels/simd/tile_loops.inc"

// Activation rows per register tile: 8 code registers, 2 scale vectors, R accumulators, the dot
// chains and the broadcasts (26 zmm at R = 8).
constexpr int kMaxRows = 8;
// With more rows than one register tile, a group of tiles of about this many bytes stays in
// L2 (1 MiB on Zen 5) while every group of kMaxRows activation rows passes over it, so the
// weights come from DRAM once per call. 128 KiB to 640 KiB measured alike.
constexpr int64_t kGroupBytes = 256 * 1024;

// Software prefetch while the weights stream from DRAM: into L2, kPfFar bytes ahead. kPfLines
// lines per 32-column block (a tile has about 6.6) keep pace with the reads. Measured on Zen 5,
// one thread: the hardware prefetchers alone read this layout at about half the row-major
// kernel's rate; L1 prefetches alone, 8 KiB ahead, recovered it for R >= 2 but left R = 1
// (decode) 25 % slower than row-major. Two steps (L2 16 KiB ahead, L1 2 KiB ahead) made every R
// at least as fast as row-major there; on Zen 4 (weights from DRAM on huge pages, as loaded,
// alternating runs) the L2 step alone, 8 KiB ahead, measured alike at one thread and the same or
// faster at two (2560 x 9728: n = 1 664-681 -> 476-617 us, n = 8 907-1006 -> 744-755), and
// still takes about half the row-major kernel's time at one row.
constexpr int64_t kPfFar = 8192;
constexpr int kPfLines = 7;

inline uint32_t ld_u32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Moves bits 2j, 2j + 1 of every byte to bits 4, 5 (16-bit shifts: the bits kept by the later
// AND come from the byte itself).
template <int J>
inline __m512i high_bits_to_4(__m512i h) {
  if constexpr (J == 0) return _mm512_slli_epi16(h, 4);
  if constexpr (J == 1) return _mm512_slli_epi16(h, 2);
  if constexpr (J == 2) return h;
  if constexpr (J == 3) return _mm512_srli_epi16(h, 2);
}

// select(c, a, b) = c ? a : b bitwise, with c = 0x0F in every byte: nibble from a, bits 4-7 from b.
constexpr int kSelect = 0xE4;

template <int J>
inline void decode_pair(const uint8_t* p, __m512i h0, __m512i h1, __m512i* u) {
  const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x30);
  const __m512i n = _mm512_loadu_si512(p + 64 * J);
  const __m512i b0 = _mm512_and_si512(high_bits_to_4<J>(h0), m2);
  const __m512i b1 = _mm512_and_si512(high_bits_to_4<J>(h1), m2);
  u[J] = _mm512_ternarylogic_epi32(n, b0, m4, kSelect);
  u[4 + J] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(n, 4), b1, m4, kSelect);
}

// The 8 code registers of the 32-column block at p (quads 0..7).
inline void decode_block(const uint8_t* p, __m512i* u) {
  const __m512i h0 = _mm512_loadu_si512(p + 256), h1 = _mm512_loadu_si512(p + 320);
  decode_pair<0>(p, h0, h1, u);
  decode_pair<1>(p, h0, h1, u);
  decode_pair<2>(p, h0, h1, u);
  decode_pair<3>(p, h0, h1, u);
}

// The activations of a group of R rows (act_panels.h's q6_k_panel: one pointer with constant
// displacements, as R separate row pointers would not fit the general-purpose registers).
template <int R>
struct PanelBlock {
  static constexpr int64_t kQ = 0, kOff = 32 * R, kD = 40 * R, kBytes = 44 * R;
};

inline __m512i bcast_i32(const uint8_t* p) { return _mm512_set1_epi32(static_cast<int>(ld_u32(p))); }
inline __m512 bcast_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_ps(v);
}

// One tile (16 outputs, masked by m) against the R activation rows of a panel; y: row 0's
// outputs of this tile, rows ldy apart.
template <int R, bool kPrefetch>
void tile_rows(const uint8_t* tile, int64_t nsb, const uint8_t* panel, float* y, int64_t ldy,
               float scale, __mmask16 m) {
  using P = PanelBlock<R>;
  const __m512 sv = _mm512_set1_ps(scale);
  for (int64_t sb = 0; sb < nsb; ++sb) {
    const SuperBlock at(tile, sb, nsb);
    const uint8_t* codes = at.codes;
    const uint8_t* scales = at.scales;
    __m512 acc[R];
#pragma GCC unroll 8
    for (int k = 0; k < R; ++k) acc[k] = _mm512_setzero_ps();
    for (int b = 0; b < 8; ++b) {
      if constexpr (kPrefetch) {
        // The sweep advances kPfLines lines per block from the tile's start: slightly faster
        // than the reads, so it also covers the start of the next tile.
        const uint8_t* pf = tile + (sb * 8 + b) * (64 * kPfLines);
#pragma GCC unroll 8
        for (int l = 0; l < kPfLines; ++l) {
          _mm_prefetch(reinterpret_cast<const char*>(pf + kPfFar + 64 * l), _MM_HINT_T1);
        }
      }
      __m512i u[8];
      decode_block(codes, u);
      const __m512i sc0 = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales)));
      const __m512i sc1 = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 16)));
#pragma GCC unroll 8
      for (int k = 0; k < R; ++k) {
        __m512i d0 = bcast_i32(panel + P::kOff + 4 * k);
        __m512i d1 = bcast_i32(panel + P::kOff + 4 * (R + k));
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          d0 = _mm512_dpbusd_epi32(d0, u[j], bcast_i32(panel + P::kQ + 4 * (j * R + k)));
          d1 = _mm512_dpbusd_epi32(d1, u[4 + j], bcast_i32(panel + P::kQ + 4 * ((4 + j) * R + k)));
        }
        const __m512i is = _mm512_add_epi32(_mm512_mullo_epi32(d0, sc0), _mm512_mullo_epi32(d1, sc1));
        acc[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is), bcast_f32(panel + P::kD + 4 * k), acc[k]);
      }
      codes += 384;
      scales += 32;
      panel += P::kBytes;
    }
    const __m512 dv = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(at.d)));
    // The running total lives in y (lanes past the tile's last row masked off): 8 fewer
    // registers, which the block loop's allocation needs at R = 8.
#pragma GCC unroll 8
    for (int k = 0; k < R; ++k) {
      const __m512 prev = sb == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m, y + k * ldy);
      __m512 tot = _mm512_fmadd_ps(acc[k], dv, prev);
      if (sb == nsb - 1) tot = _mm512_mul_ps(tot, sv);
      _mm512_mask_storeu_ps(y + k * ldy, m, tot);
    }
  }
}

}  // namespace

void packed_rect_q6_k(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  const WeightView& w = *t.w;
  const int64_t nsb = w.cols / kSuper, nblk = w.cols / 32;
  const uint8_t* panels = build_panels<kMaxRows>(t.act, r0, r1, nblk);
  const auto* wd = static_cast<const uint8_t*>(w.data);
  const auto stride = static_cast<int64_t>(w.row_stride);
  const int64_t t0 = o0 / kPackRows, t1 = (o1 + kPackRows - 1) / kPackRows;
  for_row_tiles<kMaxRows>(t0, t1, r0, r1, stride, kGroupBytes, [&](auto R, int64_t ta, int64_t te, int64_t r) {
    // The first group of rows prefetches: the others find the group of tiles in L2.
    const bool first = r == r0;
    const uint8_t* panel = panels + (r - r0) / kMaxRows * panel_bytes(kMaxRows, nblk);
    for (int64_t tile = ta; tile < te; ++tile) {
      const int64_t left = o1 - tile * kPackRows;
      const auto m = left >= kPackRows ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
      (first ? tile_rows<R, true> : tile_rows<R, false>)(wd + tile * stride, nsb, panel,
                                                         t.y + r * t.ldy + tile * kPackRows, t.ldy, w.scale, m);
    }
  });
}

}  // namespace fulgur::kernels::avx512
