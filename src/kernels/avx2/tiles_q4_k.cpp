// AVX2 kernel for Q4_K and Q5_K weights in 16-row tiles (layouts: kernels/pack/q4_k_q5_k.cpp)
// against the int8 activations of quant_act.h: the same f32 steps as
// kernels/avx512/tiles_q4_k.cpp, so the two give the same bits.
//
// A ymm register holds half a tile's 64-byte code group: 4 consecutive columns of 8 rows. Per
// sub-block j (32 columns), half h and activation row r, 8 maddubs (codes 0..15 unsigned, times
// 4 broadcast activation bytes) leave int16 pair sums of at most 2 * 15 * 127 = 3810, so all 8
// add up in int16 (30480 < 2^15) and one madd with ones widens them to the sub-block's integer
// dot per row. Then, as in the AVX-512 kernel and in this order for every output,
//   acc = fma(float(isum) * da_j, d*sc_j, acc)
//   acc = acc - dmin*m_j * S_j
// Q5_K's codes go to 31 (its fifth bit, from a 32-bit mask per register, adds 16): pair sums
// reach 2 * 31 * 127 = 7874, so its int16 sums are widened every 4 maddubs (31496 < 2^15) and
// added in int32, the same integer.
// Against the row-major AVX2 kernel (kquant.inc) that is one madd per 8 maddubs instead of
// one per maddubs, and one convert and three f32 operations per 8 rows and 32 columns instead of
// per row: on a core whose one integer-multiply pipe runs both maddubs and madd (Zen 1), half the
// pipe's work.
//
// With up to 2 rows both halves of a tile go in one sweep, so the DRAM stream never waits on a
// pass over cached lines; with more, one half after the other over a pass of columns (the
// accumulators would not fit 16 ymm registers beside the codes), the second finding the tile's
// lines in L1 or L2. Every output's f32 steps are the same whatever R, the passes or the thread split:
// row i of a batch is bit-identical to that row computed alone.
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

// Activation rows per pass: R accumulators, R int16 sums, 2 code operands, a broadcast and the
// scale vectors in 16 ymm registers.
constexpr int kMaxRows = 4;
// With more rows than one pass takes, tiles go in groups of about this many bytes, which stay in
// L2 (512 KiB on Zen 1) while every group of rows passes over them.
constexpr int64_t kL2Block = 256 * 1024;
// Software prefetch into L2 this far ahead in the tile stream, issued by the first half's sweep
// at every row count (as the AVX-512 kernel does; past the matrix's end it never faults). At one
// row it pays as it does there: Zen 4 running this AVX2 code, weights from DRAM, alternating
// runs, 2560 x 9728 at n = 1 took 759-1196 us without and 450-514 us with it at one thread,
// 591-635 vs 268-283 us at two (4 KiB ahead: 528-593 and 315-317); 0.6b Q4_K_M decode from
// 56-57 % to 77-86 % of the floor at one thread, 49-61 % to 68-76 % at two (~54 GB/s). Not yet
// measured on an AVX2-only CPU, where each core's share of the bandwidth is smaller.
constexpr int64_t kPrefetch = 8192;

// Activation rows of a pass (simd/tiles_q4_k.inc) in a 24 KiB stack buffer, in L1 beside the tile's
// lines.
constexpr int64_t kPassBytes = 24 * 1024;
#include "kernels/simd/tiles_q4_k.inc"

inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

inline __m256 bytes_to_f32(const uint8_t* p) {  // 8 bytes
  int64_t v;
  std::memcpy(&v, p, 8);
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(v)));
}

inline __m256 f16x8(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// 16 in byte b where bit b of the 32-bit mask at p is set (Q5_K's fifth bits, kernels/pack/q4_k_q5_k.cpp).
inline __m256i fifth_bits(const uint8_t* p) {
  uint32_t x;
  std::memcpy(&x, p, 4);
  const __m256i v = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(x)),
      _mm256_setr_epi64x(0, 0x0101010101010101LL, 0x0202020202020202LL, 0x0303030303030303LL));
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit), _mm256_set1_epi8(16));
}

// Sub-blocks [j0, j1) of halves h0 .. h0 + H - 1 of one tile (half h: its rows 8h .. 8h + 7) into
// y[r][o + 8h ..], r < R: from zero when j0 == 0, else from the partial sums an earlier pass left
// in y; the last pass applies the output scale. o1: the end of the output rows. Storing and
// reloading a partial sum is exact, so an output's f32 steps do not depend on the passes.
template <class Fmt, int R, int H>
void halves_rows(const MatmulTask& t, const uint8_t* tile, int h0, float* y, int64_t o, int64_t o1,
                 int64_t j0, int64_t j1, const uint8_t* act) {
  __m256i mask[H];
  for (int h = 0; h < H; ++h)
    mask[h] = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(o1 - o - 8 * (h0 + h))),
                                 _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  __m256 acc[H][R];
  for (int h = 0; h < H; ++h)
    for (int r = 0; r < R; ++r)
      acc[h][r] = j0 == 0 ? _mm256_setzero_ps() : _mm256_maskload_ps(y + r * t.ldy + 8 * (h0 + h), mask[h]);
  const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  __m256 d[H], dmin[H];  // of the current super-block, halves h0 ..
  for (int h = 0; h < H; ++h) d[h] = dmin[h] = _mm256_setzero_ps();
  const auto load_d = [&](const uint8_t* u) {
    for (int hi = 0; hi < H; ++hi) {
      d[hi] = f16x8(u + 16 * (h0 + hi));
      dmin[hi] = f16x8(u + 32 + 16 * (h0 + hi));
    }
  };
  // Sub-block js of the super-block at u (act: its activations; advanced past them).
  const auto sub_block = [&](const uint8_t* u, int64_t js) {
    if (h0 == 0) prefetch_ahead<Fmt>(u, js);  // see kPrefetch
    const auto* aq = reinterpret_cast<const int8_t*>(act);
    const auto* da = reinterpret_cast<const float*>(act + 32 * R);
    const auto* sj = reinterpret_cast<const float*>(act + 36 * R);
    for (int hi = 0; hi < H; ++hi) {
      const int h = h0 + hi;
      // d * sc and dmin * m are exact in f32 (11-bit times 6-bit significands).
      const __m256 dsc = _mm256_mul_ps(bytes_to_f32(u + kScaleOff + 32 * js + 8 * h), d[hi]);
      const __m256 dm = _mm256_mul_ps(bytes_to_f32(u + kScaleOff + 32 * js + 16 + 8 * h), dmin[hi]);
      const uint8_t* sub = u + kCodeOff + Fmt::kSubBytes * js;
      const uint8_t* qs = sub + 32 * h;
      __m256i sum16[R], sum32[R];
      for (int r = 0; r < R; ++r) sum16[r] = sum32[r] = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 64 * k));
        __m256i lo = _mm256_and_si256(v, m4);                         // columns 4k ..
        __m256i hi4 = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);  // columns 16 + 4k ..
        if constexpr (Fmt::kFifthBit) {  // masks k and 4 + k, this half's 32 bits of each
          lo = _mm256_or_si256(lo, fifth_bits(sub + 256 + 8 * k + 4 * h));
          hi4 = _mm256_or_si256(hi4, fifth_bits(sub + 256 + 8 * (4 + k) + 4 * h));
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          sum16[r] = _mm256_add_epi16(sum16[r], _mm256_maddubs_epi16(lo, bcast4(aq + 32 * r + 4 * k)));
          sum16[r] = _mm256_add_epi16(sum16[r], _mm256_maddubs_epi16(hi4, bcast4(aq + 32 * r + 16 + 4 * k)));
          keep_in_register(sum16[r]);
          if (Fmt::kFifthBit && k % 2 == 1) {  // 4 maddubs of 5-bit codes: widen (see the header)
            sum32[r] = _mm256_add_epi32(sum32[r], _mm256_madd_epi16(sum16[r], ones));
            sum16[r] = _mm256_setzero_si256();
          }
        }
      }
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const __m256i isum = Fmt::kFifthBit ? sum32[r] : _mm256_madd_epi16(sum16[r], ones);
        const __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(da[r]));
        acc[hi][r] = _mm256_fmadd_ps(f, dsc, acc[hi][r]);
        acc[hi][r] = _mm256_fnmadd_ps(dm, _mm256_set1_ps(sj[r]), acc[hi][r]);
      }
    }
    act += chunk_bytes(R);
  };
  // Unrolled at 1-2 rows. Zen 4 running this code, one thread, weights from DRAM on huge
  // pages: 2560 x 9728 at n = 1 650-652 -> 577-626 us, n = 2 888-889 -> 830-831; at 3-4 rows the
  // unrolled form measured ~5 % slower.
  for_sub_blocks<Fmt, R <= 2>(tile, j0, j1, load_d, sub_block);
  const bool last = j1 == t.w->cols / 32;
  const __m256 scale = _mm256_set1_ps(t.w->scale);
  for (int h = 0; h < H; ++h)
    for (int r = 0; r < R; ++r)
      _mm256_maskstore_ps(y + r * t.ldy + 8 * (h0 + h), mask[h], last ? _mm256_mul_ps(acc[h][r], scale) : acc[h][r]);
}

// Tiles [ta, te) for the R activation rows from r0; outputs stop at o1.
template <class Fmt, int R>
void tiles_rows(const MatmulTask& t, int64_t ta, int64_t te, int64_t o1, int64_t r0) {
  q4_k_passes<R>(t, ta, te, r0, [&](const uint8_t* tile, int64_t i, int64_t j0, int64_t j1, const uint8_t* act) {
    const int64_t o = i * kTileRows;
    float* y = t.y + r0 * t.ldy + o;
    if constexpr (R <= 2) {  // both halves in one sweep (see the header)
      halves_rows<Fmt, R, 2>(t, tile, 0, y, o, o1, j0, j1, act);
    } else {
      halves_rows<Fmt, R, 1>(t, tile, 0, y, o, o1, j0, j1, act);
      if (o + 8 < o1) halves_rows<Fmt, R, 1>(t, tile, 1, y, o, o1, j0, j1, act);
    }
  });
}

template <class Fmt>
void packed_rect(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  const int64_t t0 = o0 / kTileRows, t1 = (o1 + kTileRows - 1) / kTileRows;
  for_row_tiles<kMaxRows>(t0, t1, r0, r1, static_cast<int64_t>(t.w->row_stride), kL2Block,
                          [&](auto R, int64_t ta, int64_t te, int64_t r) { tiles_rows<Fmt, R>(t, ta, te, o1, r); });
}

}  // namespace

void packed_rect_q4_k(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  packed_rect<Q4KTiles>(t, o0, o1, r0, r1);
}

void packed_rect_q5_k(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  packed_rect<Q5KTiles>(t, o0, o1, r0, r1);
}

}  // namespace fulgur::kernels::avx2
