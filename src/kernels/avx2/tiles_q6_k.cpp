// AVX2 kernel for Q6_K weights in 16-row tiles (layout: kernels/pack/q6_k.cpp), with the integer
// sums and the f32 steps of kernels/avx512/tiles_q6_k.cpp, so the two give the same bits.
//
// A ymm register holds half of one of the tile's 64-byte vectors: 4 consecutive columns of 8
// rows. Per block of 32 columns, half h and activation row r: 8 maddubs (codes 0..63 unsigned,
// times 4 broadcast activation bytes) leave int16 pair sums of at most 2 * 63 * 127 = 16002, so
// two of them add up in int16 before a madd with ones widens them to int32; the int32 dot of each
// 16-column sub-block starts from its offset -32 * sum(a) (act_panels.h's q6_k_panel), which
// makes it exactly sum (q - 32) * a. Then, as in the AVX-512 kernel,
//   isum = sc_0 * dot_0 + sc_1 * dot_1,  acc = fma(float(isum), da, acc)   per block,
//   total = fma(acc, d, total)                                              per super-block.
// Against the row-major AVX2 kernel (kquant.inc) that is one madd per 2 maddubs instead of
// one per maddubs, and the scales cost two multiplies, a convert and an FMA per 8 rows and 32
// columns instead of per row.
//
// With one row both halves of a tile go in one sweep, so the DRAM stream never waits on a pass
// over cached lines; with more, one half after the other (the dot sums of several rows would not
// fit 16 ymm registers beside the codes), the second finding the tile in L1 or L2. Every
// output's steps are the same whatever R, the grouping or the thread split: row i of a batch is
// bit-identical to that row computed alone.
// Everything but the entry point has internal linkage (ODR, see quant_act.h).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/act_panels.h"

namespace fulgur::kernels::avx2 {
namespace {

#include "kernels/simd/tiles_q6_k.inc"
#include "kernels/simd/tile_loops.inc"

constexpr int64_t kPackRows = 16;  // = kernels/packed.h's
constexpr int kMaxRows = 4;
// With more rows than one register tile, tiles go in groups of about this many bytes, which stay
// in L2 (512 KiB on Zen 1) while every group of rows passes over them.
constexpr int64_t kGroupBytes = 256 * 1024;
// Software prefetch, as in the AVX-512 kernel: into L2 kPfFar bytes ahead, kPfLines lines per
// block (a tile has about 6.6), at every row count. Without it the hardware prefetchers read this
// layout slowly: on Zen 4 running this AVX2 code, one row, 2 threads, alternating runs, 2560 x
// 9728 took 1.2-1.9 ms without and 0.5-0.9 ms with it (row-major: 1.0-1.5 ms). A second step
// into L1 4 KiB ahead (with the L2 one 16 KiB ahead) measured alike at one thread and slower at
// two (weights on huge pages, as loaded: 2560 x 9728 at n = 1, 324-477 us with the L2 step alone
// against 373-546 us with both; 1024 x 4096, 60-90 against 74-90 us).
constexpr int64_t kPfFar = 8192;
constexpr int kPfLines = 7;

inline __m256i bcast_i32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}
inline __m256 bcast_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_ps(v);
}
inline __m256i i8x8_to_i32(const uint8_t* p) {
  int64_t v;
  std::memcpy(&v, p, 8);
  return _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(v));
}

// Bits 2j, 2j + 1 of every byte moved to bits 4, 5 (16-bit shifts: the bits the later AND keeps
// come from the byte itself).
template <int J>
inline __m256i high_bits_to_4(__m256i h) {
  if constexpr (J == 0) return _mm256_slli_epi16(h, 4);
  if constexpr (J == 1) return _mm256_slli_epi16(h, 2);
  if constexpr (J == 2) return h;
  if constexpr (J == 3) return _mm256_srli_epi16(h, 2);
}

// Quads J and 4 + J (4 columns of 8 rows each) of the block at p, half h.
template <int J>
inline void decode_pair(const uint8_t* p, __m256i h0, __m256i h1, __m256i* lo, __m256i* hi) {
  const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x30);
  const __m256i n = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * J));
  *lo = _mm256_or_si256(_mm256_and_si256(n, m4), _mm256_and_si256(high_bits_to_4<J>(h0), m2));
  *hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(n, 4), m4),
                        _mm256_and_si256(high_bits_to_4<J>(h1), m2));
}

// Sums, per row, quads J and J + 1 of each sub-block into the int32 dots d0 (sub-block 0) and d1.
template <int R, int J>
inline void quad_pair(const uint8_t* codes, __m256i h0, __m256i h1, const uint8_t* q, __m256i* d0,
                      __m256i* d1) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i a0, a1, b0, b1;  // quads J, J + 1 of sub-block 0 (a) and 1 (b)
  decode_pair<J>(codes, h0, h1, &a0, &b0);
  decode_pair<J + 1>(codes, h0, h1, &a1, &b1);
#pragma GCC unroll 4
  for (int k = 0; k < R; ++k) {
    const __m256i s0 = _mm256_add_epi16(_mm256_maddubs_epi16(a0, bcast_i32(q + 4 * (J * R + k))),
                                        _mm256_maddubs_epi16(a1, bcast_i32(q + 4 * ((J + 1) * R + k))));
    const __m256i s1 = _mm256_add_epi16(_mm256_maddubs_epi16(b0, bcast_i32(q + 4 * ((4 + J) * R + k))),
                                        _mm256_maddubs_epi16(b1, bcast_i32(q + 4 * ((5 + J) * R + k))));
    d0[k] = _mm256_add_epi32(d0[k], _mm256_madd_epi16(s0, ones));
    d1[k] = _mm256_add_epi32(d1[k], _mm256_madd_epi16(s1, ones));
    keep_in_register(d0[k]);
    keep_in_register(d1[k]);
  }
}

// Halves h0 .. h0 + H - 1 of one tile (half h: outputs 8h .. 8h + 7) against the R activation
// rows of a panel; y: row 0's outputs of this tile, rows ldy apart; o_left: outputs of the tile
// that exist.
template <int R, int H>
void tile_rows(const uint8_t* tile, int64_t nsb, const uint8_t* panel, float* y, int64_t ldy, float scale,
               int64_t o_left, int h0) {
  constexpr int64_t kBlockBytes = 44 * R;  // one block of the panel
  __m256i mask[H];
  for (int i = 0; i < H; ++i)
    mask[i] = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(o_left - 8 * (h0 + i))),
                                 _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256 sv = _mm256_set1_ps(scale);
  for (int64_t sb = 0; sb < nsb; ++sb) {
    const SuperBlock at(tile, sb, nsb);
    const uint8_t* codes = at.codes;
    const uint8_t* scales = at.scales;
    const uint8_t* pb = panel + sb * 8 * kBlockBytes;
    __m256 acc[H][R];
    for (int i = 0; i < H; ++i)
      for (int k = 0; k < R; ++k) acc[i][k] = _mm256_setzero_ps();
    for (int b = 0; b < 8; ++b) {
      if (h0 == 0) {
        // The sweep advances kPfLines lines per block from the tile's start: slightly faster
        // than the reads, so it also covers the start of the next tile.
        const char* pf = reinterpret_cast<const char*>(tile + (sb * 8 + b) * (64 * kPfLines));
        for (int l = 0; l < kPfLines; ++l) _mm_prefetch(pf + kPfFar + 64 * l, _MM_HINT_T1);
      }
      for (int i = 0; i < H; ++i) {
        const int h = h0 + i;
        const uint8_t* c = codes + 32 * h;
        const __m256i hb0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + 256));
        const __m256i hb1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + 320));
        __m256i d0[R], d1[R];
        for (int k = 0; k < R; ++k) {
          d0[k] = bcast_i32(pb + 32 * R + 4 * k);
          d1[k] = bcast_i32(pb + 32 * R + 4 * (R + k));
        }
        quad_pair<R, 0>(c, hb0, hb1, pb, d0, d1);
        quad_pair<R, 2>(c, hb0, hb1, pb, d0, d1);
        const __m256i sc0 = i8x8_to_i32(scales + 8 * h), sc1 = i8x8_to_i32(scales + 16 + 8 * h);
#pragma GCC unroll 4
        for (int k = 0; k < R; ++k) {
          const __m256i is = _mm256_add_epi32(_mm256_mullo_epi32(d0[k], sc0), _mm256_mullo_epi32(d1[k], sc1));
          acc[i][k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is), bcast_f32(pb + 40 * R + 4 * k), acc[i][k]);
        }
      }
      codes += 384;
      scales += 32;
      pb += kBlockBytes;
    }
    for (int i = 0; i < H; ++i) {
      const int h = h0 + i;
      const __m256 dv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(at.d + 16 * h)));
      for (int k = 0; k < R; ++k) {
        float* yk = y + k * ldy + 8 * h;
        const __m256 prev = sb == 0 ? _mm256_setzero_ps() : _mm256_maskload_ps(yk, mask[i]);
        __m256 tot = _mm256_fmadd_ps(acc[i][k], dv, prev);
        if (sb == nsb - 1) tot = _mm256_mul_ps(tot, sv);
        _mm256_maskstore_ps(yk, mask[i], tot);
      }
    }
  }
}

// One tile's halves that exist, for the R rows of a panel.
template <int R>
void tile_fn(const uint8_t* w, int64_t nsb, const uint8_t* panel, float* y, int64_t ldy, float scale,
          int64_t o_left) {
  if constexpr (R == 1) {
    tile_rows<1, 2>(w, nsb, panel, y, ldy, scale, o_left, 0);
  } else {
    tile_rows<R, 1>(w, nsb, panel, y, ldy, scale, o_left, 0);
    if (o_left > 8) tile_rows<R, 1>(w, nsb, panel, y, ldy, scale, o_left, 1);
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
    const uint8_t* panel = panels + (r - r0) / kMaxRows * panel_bytes(kMaxRows, nblk);
    for (int64_t tile = ta; tile < te; ++tile)
      tile_fn<R>(wd + tile * stride, nsb, panel, t.y + r * t.ldy + tile * kPackRows, t.ldy, w.scale,
                 o1 - tile * kPackRows);
  });
}

}  // namespace fulgur::kernels::avx2
