// AVX-512 VNNI kernel for Q4_K and Q5_K weights in 16-row tiles (layouts: kernels/pack/q4_k_q5_k.cpp)
// against the int8 activations of quant_act.h. Q5_K is Q4_K with codes
// 0..31: its fifth bits are added to the unpacked codes (16 under a 64-bit byte mask), and the
// rest is the same loop.
//
// Per tile, sub-block j (32 columns) and activation row r: 8 vpdpbusd (codes 0..15 unsigned,
// times 4 broadcast activation bytes) give the 16 rows' integer dot products in one register;
// then, in f32 and in this order for every output,
//   acc = fma(float(isum) * da_j, d*sc_j, acc)   da_j: the activation block's scale
//   acc = acc - dmin*m_j * S_j                   S_j = s_2j + s_2j+1, its d * sum(q)
// The unpacked codes and the scale vectors of a sub-block serve R <= 8 activation rows. The
// integer part may be grouped freely (exact), but the f32 steps above happen in the same order
// for each output whatever R, the tile blocking, the column passes, the thread split or the
// batch size: row i of a batch gets the bits it gets alone (speculative verification relies on
// that).
//
// Cost: per unit (tile, j, r) 8 vpdpbusd and 3 f32 multiplies share Zen 5's two multiply pipes,
// so the loop runs near 5.5 cycles per unit (16 x 32 x 2 flops) once R = 8; decode (R = 1)
// stays bound by the memory stream.
// Everything but the entry point has internal linkage (ODR, see quant_act.h).
// GCC 12 reports the undefined upper halves inside its own AVX-512 headers as
// maybe-uninitialized (a known false positive; see avx512/matmul.cpp).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/act_panels.h"

namespace fulgur::kernels::avx512 {
namespace {

#include "kernels/simd/tile_loops.inc"

// Activation rows per pass: R accumulators, R integer sums, 8 code registers and 2 scale
// vectors fit the 32 zmm registers.
constexpr int kMaxRows = 8;
// With more activation rows than one pass, tiles are taken in groups of about this many bytes
// (half of Zen 4/5's 1 MiB L2) so every group of activation rows finds them in L2: the weights
// come from DRAM once per call.
constexpr int64_t kL2Block = 512 * 1024;
// Software prefetch into L2, this far ahead in the tile stream, at every row count (past the
// matrix's end it never faults). With 2 or more rows the compute per byte leaves the hardware
// prefetcher idle between bursts (as in tiles_q8_0.cpp; 1024 x 4096 at n = 8 took 2.4x the time
// of 4096 x 1024 without it). (Into L1, 8 KiB ahead: slower than none; into L2 4 KiB ahead
// gained nothing, 16 KiB ahead less than 8.) At one row (decode) it keeps more of the stream in
// flight than the core's own lookahead and the hardware prefetcher do, now that the unrolled
// loop (simd/tiles_q4_k.inc) spends no instructions on addresses: Zen 4, weights from DRAM on huge
// pages, alternating runs, 2560 x 9728 at n = 1 took 598-983 us without and 414-502 us with it
// at one thread, 288-400 vs 228-288 us at two; 0.6b Q4_K_M decode went from 73-78 % to 96-99 %
// of the floor at one thread and from 73-75 % to 92-95 % at two (~58 GB/s). (With the plain
// loop's per-sub-block address arithmetic the same prefetch had measured slower than none.)
constexpr int64_t kPrefetch = 8192;

inline __m512i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);  // a broadcast load
}

inline __m512 bytes_to_f32(const uint8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

// The pass buffer lives on the stack. 48 KiB (4864 columns at R = 8): passes cut each tile's
// stream into strided runs, which measured slower (1024 x 4096, n = 8: 113 us with 20 KiB
// passes, 93 us with one) than activations spilling from L1 to L2.
constexpr int64_t kPassBytes = 48 * 1024;
#include "kernels/simd/tiles_q4_k.inc"

// Accumulates sub-blocks [j0, j1) of one tile into y[r0 + r][o .. o + 15], r < R: starting from
// zero when j0 == 0, else from the partial sums a previous pass left in y; the last pass
// (j1 == all) applies the output scale. keep masks the rows past the matrix. act: the pass's
// rows (q4_k_panel). Storing and reloading a partial sum is exact, so the f32 steps of an
// output are the same whatever the pass length.
template <class Fmt, int R>
void tile_rows(const MatmulTask& t, const uint8_t* tile, int64_t o, __mmask16 keep, int64_t r0,
               int64_t j0, int64_t j1, const uint8_t* act) {
  __m512 acc[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
    acc[r] = j0 == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(keep, t.y + (r0 + r) * t.ldy + o);
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  __m512 d = _mm512_setzero_ps(), dmin = d;  // of the current super-block
  const auto load_d = [&](const uint8_t* u) {
    d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(u)));
    dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(u + 32)));
  };
  // Sub-block js of the super-block at u (act: its activations; advanced past them).
  const auto sub_block = [&](const uint8_t* u, int64_t js) {
    prefetch_ahead<Fmt>(u, js);  // see kPrefetch
    // d * sc and dmin * m are exact in f32 (11-bit times 6-bit significands).
    const __m512 dsc = _mm512_mul_ps(bytes_to_f32(u + kScaleOff + 32 * js), d);
    const __m512 dm = _mm512_mul_ps(bytes_to_f32(u + kScaleOff + 32 * js + 16), dmin);
    const uint8_t* qs = u + kCodeOff + Fmt::kSubBytes * js;
    // With one or two rows the high nibbles stay in place (16 times their value: one andnot
    // instead of a shift and an and per register) and their chain's sum is shifted back once
    // per row: the same integer, as every term is a multiple of 16. Zen 4, weights in cache, one
    // row, medians of alternating runs: 2-3 % less time at 1 and 2 threads.
    // (Not for Q5_K, whose fifth bit would sit above the byte.)
    constexpr bool kHighInPlace = R <= 2 && !Fmt::kFifthBit;
    __m512i wq[8];  // wq[k]: columns 4k..4k+3, wq[4 + k]: columns 16+4k..16+4k+3
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m512i v = _mm512_loadu_si512(qs + 64 * k);
      wq[k] = _mm512_and_si512(v, m4);
      wq[4 + k] = kHighInPlace ? _mm512_andnot_si512(m4, v) : _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
    }
    if constexpr (Fmt::kFifthBit) {  // mask g: the bytes of wq[g] whose code has bit 4 set
      const __m512i sixteen = _mm512_set1_epi8(16);
#pragma GCC unroll 8
      for (int g = 0; g < 8; ++g) {
        uint64_t bits;
        std::memcpy(&bits, qs + 256 + 8 * g, 8);
        wq[g] = _mm512_mask_add_epi8(wq[g], _cvtu64_mask64(bits), wq[g], sixteen);
      }
    }
    const auto* aq = reinterpret_cast<const int8_t*>(act);
    // The integer sums, rows interleaved so consecutive vpdpbusd are independent: with few
    // rows each row gets two chains (low and high nibbles), summed exactly afterwards.
    constexpr int kChains = R <= 5 ? 2 : 1;
    __m512i is[kChains][R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      is[0][r] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq[0], bcast4(aq + 32 * r));
      if constexpr (kChains == 2)
        is[1][r] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq[4], bcast4(aq + 32 * r + 16));
    }
#pragma GCC unroll 8
    for (int k = 1; k < 8; ++k) {
      if (kChains == 2 && k == 4) continue;
      const int c = kChains == 2 && k > 4 ? 1 : 0;
      const int off = k < 4 ? 4 * k : 16 + 4 * (k - 4);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
        is[c][r] = _mm512_dpbusd_epi32(is[c][r], wq[k], bcast4(aq + 32 * r + off));
    }
    const auto* da = reinterpret_cast<const float*>(act + 32 * R);
    const auto* sj = reinterpret_cast<const float*>(act + 36 * R);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      __m512i sum = is[0][r];
      if constexpr (kHighInPlace) sum = _mm512_add_epi32(sum, _mm512_srai_epi32(is[1][r], 4));
      else if constexpr (kChains == 2) sum = _mm512_add_epi32(sum, is[1][r]);
      const __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(sum), _mm512_set1_ps(da[r]));
      acc[r] = _mm512_fmadd_ps(f, dsc, acc[r]);
      acc[r] = _mm512_fnmadd_ps(dm, _mm512_set1_ps(sj[r]), acc[r]);
    }
    act += chunk_bytes(R);
  };
  // Unrolled at one row only (at 2 rows that form measured 10-27 % slower), and not for Q5_K:
  // with its fifth-bit masks the unrolled unit ran at half the speed of the plain loop (Zen 5,
  // one row, alternating: 2560 x 9728 from DRAM 857 -> 488 us at one thread, 832 -> 398 us at
  // two; 1024 x 1024 in cache 39.6 -> 21.3 us, when 8 rows took 38.4). On that Zen 5 the plain
  // loop was faster for Q4_K too (0.6b Q4_K_M decode, 2 threads, 3 alternating rounds: 93-95 %
  // of the floor against 83-89 %), where Zen 4 had measured the unrolled one far ahead (see
  // kPrefetch): kept until one build is measured on both.
  for_sub_blocks<Fmt, R == 1 && !Fmt::kFifthBit>(tile, j0, j1, load_d, sub_block);
  const __m512 scale = _mm512_set1_ps(j1 == t.w->cols / 32 ? t.w->scale : 1.0f);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const __m512 v = j1 == t.w->cols / 32 ? _mm512_mul_ps(acc[r], scale) : acc[r];
    _mm512_mask_storeu_ps(t.y + (r0 + r) * t.ldy + o, keep, v);
  }
}

// Tiles [ta, te) for the R activation rows from r0; outputs stop at o1.
template <class Fmt, int R>
void tiles_rows(const MatmulTask& t, int64_t ta, int64_t te, int64_t o1, int64_t r0) {
  q4_k_passes<R>(t, ta, te, r0, [&](const uint8_t* tile, int64_t i, int64_t j0, int64_t j1, const uint8_t* act) {
    const int64_t o = i * kTileRows;
    const auto keep = static_cast<__mmask16>(o1 - o >= 16 ? 0xFFFFu : (1u << (o1 - o)) - 1u);
    tile_rows<Fmt, R>(t, tile, o, keep, r0, j0, j1, act);
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

}  // namespace fulgur::kernels::avx512
