// AVX-512 matmul: int8 VNNI (vpdpbusd) for quantized weights against the Q8 activations of
// quant_act.h (maddubs + vpdpwssd for the codebook and ternary types, against simd/iq_units.inc's
// ActK), f32 FMA for F32/F16/BF16 weights. Compiled with -mavx512{f,bw,vl,dq,vnni};
// everything but the two exported entry points has internal linkage (ODR, see quant_act.h).
// GCC 12 reports the deliberately undefined upper halves inside its own AVX-512 intrinsic
// headers (reduce_add_ps, cvtph_ps) as maybe-uninitialized, and where an inlined caller makes it
// certain (the `__m512 __Y = __Y` of _mm512_undefined_ps under inserti64x4 and permutexvar_ps in
// the K-quant and ternary units) as uninitialized; both are a known false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/simd/entries.h"
#include "tensor/blocks.h"
#include "tensor/iq_grids.h"

namespace fulgur::kernels::avx512 {
namespace {

#include "kernels/simd/units.inc"
#include "kernels/simd/iq_units.inc"
#include "kernels/avx512/matmul_units.inc"
#include "kernels/avx512/iq_units.inc"
#include "kernels/simd/tile_loops.inc"

// Activation rows per register tile: 8 accumulators + 4 unpacked chunks (+ their 4 scale
// vectors) fit the 32 zmm registers, and one unpacked weight unit then serves 8 rows.
constexpr int kMaxRows = 8;
// Output rows per cache tile when n > one register tile: the tile's weight bytes (about
// 256 KiB) stay in L2 while each group of activation rows (a few KiB per row, in L1) passes
// over all of them, so weights come from DRAM once per call and activations from L1.
constexpr int64_t kTileBytes = 256 * 1024;

// ---- int8 path -----------------------------------------------------------------------------

// y[r][o] for o in [o0, o1) and the R activation rows from r0. wc: per-thread [kp / 16] group
// coefficients of the current weight row (entries past the row's last unit stay zero).
// Out of line: for_row_tiles would otherwise inline every row count's tile into one function
// (19 KB for AVX-512 Q4_K), which ran 12-15 % slower at 4096 x 1024, n = 8 and 64.
template <class U, int R>
[[gnu::noinline]] void q8_tile(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0,
                                 float* wc) {
  const WeightView& w = *t.w;
  const int64_t kp = t.act.kp, ng = kp / 16;
  const int64_t nunits = (w.cols + U::kElems - 1) / U::kElems;
  const int64_t nblocks = w.cols / 32;  // for Pair<> (odd block counts)
  const int8_t* aq[R];
  const float* ad[R];
  const float* as[R];
  for (int r = 0; r < R; ++r) {
    aq[r] = t.act.q + (r0 + r) * kp;
    ad[r] = t.act.d + (r0 + r) * (kp / 4);
    as[r] = t.act.s + (r0 + r) * ng;
  }
  const __m512 scale = _mm512_set1_ps(w.scale);
  for (int64_t o = o0; o < o1; ++o) {
    const auto* row = static_cast<const uint8_t*>(w.data) + o * static_cast<int64_t>(w.row_stride);
    __m512 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (int64_t u = 0; u < nunits; ++u) {
      __m512i wu[U::kChunks];
      __m512 vdw[U::kChunks];
      U::unpack(row, u, nblocks, wu, vdw, wc + u * (U::kElems / 16));
      for (int c = 0; c < U::kChunks; ++c) {
        const int64_t e = u * U::kElems + 64 * c;
        for (int r = 0; r < R; ++r) {
          const __m512i dot =
              _mm512_dpbusd_epi32(_mm512_setzero_si512(), wu[c], _mm512_loadu_si512(aq[r] + e));
          const __m512 sc = _mm512_mul_ps(vdw[c], _mm512_loadu_ps(ad[r] + e / 4));
          acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), sc, acc[r]);
        }
      }
    }
    // Offsets and mins: sum over 16-groups of wc * (d * sum q).
    const int64_t ngu = (nunits * (U::kElems / 16) + 15) / 16 * 16;
    for (int64_t g = 0; g < ngu; g += 16) {
      const __m512 c = _mm512_loadu_ps(wc + g);
      for (int r = 0; r < R; ++r) acc[r] = _mm512_fmadd_ps(c, _mm512_loadu_ps(as[r] + g), acc[r]);
    }
    for (int r = 0; r < R; ++r)
      t.y[(r0 + r) * t.ldy + o] = _mm512_reduce_add_ps(_mm512_mul_ps(acc[r], scale));
  }
}

template <class U>
void q8_rect(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1, float* wc) {
  // The per-row loop reads wc up to the next multiple of 16 past the last unit: keep it zero.
  for (int64_t g = 0; g < t.act.kp / 16 + 16; ++g) wc[g] = 0.0f;
  for_row_tiles<kMaxRows>(o0, o1, r0, r1, static_cast<int64_t>(t.w->row_stride), kTileBytes,
                          [&](auto R, int64_t oa, int64_t oe, int64_t r) {
                            q8_tile<U, R>(t, oa, oe, r, wc);
                          });
}

#include "kernels/simd/code_rect.inc"

// ---- f32 path (F32 / F16 / BF16 weights, f32 activations) ---------------------------------

struct LF32 {
  static __m512 load(const uint8_t* p, int64_t i) { return _mm512_loadu_ps(p + 4 * i); }
  static __m512 load_mask(const uint8_t* p, int64_t i, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, p + 4 * i);
  }
};
struct LF16 {
  static __m512 load(const uint8_t* p, int64_t i) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * i)));
  }
  static __m512 load_mask(const uint8_t* p, int64_t i, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p + 2 * i));
  }
};
struct LBF16 {  // bf16 -> f32 is exact: the 16 bits become the top half of the word
  static __m512 widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static __m512 load(const uint8_t* p, int64_t i) {
    return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * i)));
  }
  static __m512 load_mask(const uint8_t* p, int64_t i, __mmask16 m) {
    return widen(_mm256_maskz_loadu_epi16(m, p + 2 * i));
  }
};

// Register tile of 4 weight rows x R activation rows: per 16 elements, 4 weight loads and R
// activation loads feed 4R FMAs (one weight row at a time would need one activation load per
// FMA and be load-bound). One accumulator per output, 16 elements per step, masked tail: f_tile
// (the leftover weight rows) accumulates in exactly the same order, so an output's bits do not
// depend on which kernel, tile or thread computed it.
template <class L, int R>
void f_tile4(const MatmulTask& t, int64_t o, int64_t r0) {
  const WeightView& w = *t.w;
  const int64_t k = w.cols;
  const auto* base = static_cast<const uint8_t*>(w.data);
  const int64_t stride = static_cast<int64_t>(w.row_stride);
  const uint8_t* rows[4];
  for (int j = 0; j < 4; ++j) rows[j] = base + (o + j) * stride;
  const float* x[R];
  for (int r = 0; r < R; ++r) x[r] = t.x + (r0 + r) * t.ldx;
  __m512 acc[4][R];
  for (int j = 0; j < 4; ++j)
    for (int r = 0; r < R; ++r) acc[j][r] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    __m512 wv[4];
    for (int j = 0; j < 4; ++j) wv[j] = L::load(rows[j], i);
    for (int r = 0; r < R; ++r) {
      const __m512 xv = _mm512_loadu_ps(x[r] + i);
      for (int j = 0; j < 4; ++j) acc[j][r] = _mm512_fmadd_ps(wv[j], xv, acc[j][r]);
    }
  }
  if (i < k) {
    const auto m = static_cast<__mmask16>((1u << (k - i)) - 1);
    __m512 wv[4];
    for (int j = 0; j < 4; ++j) wv[j] = L::load_mask(rows[j], i, m);
    for (int r = 0; r < R; ++r) {
      const __m512 xv = _mm512_maskz_loadu_ps(m, x[r] + i);
      for (int j = 0; j < 4; ++j) acc[j][r] = _mm512_fmadd_ps(wv[j], xv, acc[j][r]);
    }
  }
  for (int j = 0; j < 4; ++j)
    for (int r = 0; r < R; ++r)
      t.y[(r0 + r) * t.ldy + o + j] = w.scale * _mm512_reduce_add_ps(acc[j][r]);
}

template <class L, int R>
void f_tile(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0) {
  const WeightView& w = *t.w;
  const int64_t k = w.cols;
  const float* x[R];
  for (int r = 0; r < R; ++r) x[r] = t.x + (r0 + r) * t.ldx;
  int64_t o = o0;
  for (; o + 4 <= o1; o += 4) f_tile4<L, R>(t, o, r0);
  for (; o < o1; ++o) {
    const auto* row = static_cast<const uint8_t*>(w.data) + o * static_cast<int64_t>(w.row_stride);
    __m512 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= k; i += 16) {
      const __m512 wv = L::load(row, i);
      for (int r = 0; r < R; ++r) acc[r] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x[r] + i), acc[r]);
    }
    if (i < k) {
      const auto m = static_cast<__mmask16>((1u << (k - i)) - 1);
      const __m512 wv = L::load_mask(row, i, m);
      for (int r = 0; r < R; ++r) acc[r] = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(m, x[r] + i), acc[r]);
    }
    for (int r = 0; r < R; ++r) t.y[(r0 + r) * t.ldy + o] = w.scale * _mm512_reduce_add_ps(acc[r]);
  }
}

// Activation rows per f32 register tile: 4 x 4 accumulators + 4 weight vectors.
constexpr int kMaxRowsF = 4;

// Groups of at least 4 weight rows, so f_tile4 runs on whole groups.
template <class L>
void f_rect(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  for_row_tiles<kMaxRowsF, 4>(o0, o1, r0, r1, static_cast<int64_t>(t.w->row_stride), kTileBytes,
                              [&](auto R, int64_t oa, int64_t oe, int64_t r) {
                                f_tile<L, R>(t, oa, oe, r);
                              });
}

}  // namespace

void quantize_act_row(const float* x, int64_t cols, int8_t* q, float* d, float* s) {
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  int64_t i = 0;
  for (; i + 32 <= cols; i += 32) {
    const __m512 v0 = _mm512_loadu_ps(x + i), v1 = _mm512_loadu_ps(x + i + 16);
    const float amax = _mm512_reduce_max_ps(
        _mm512_max_ps(_mm512_and_ps(v0, abs_mask), _mm512_and_ps(v1, abs_mask)));
    const float dd = amax / 127.0f;
    const __m512 id = _mm512_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
    // Round to nearest even (MXCSR default), as the scalar reference quantizers do.
    const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, id));
    const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, id));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), _mm512_cvtsepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i + 16), _mm512_cvtsepi32_epi8(q1));
    s[i / 16] = dd * static_cast<float>(_mm512_reduce_add_epi32(q0));
    s[i / 16 + 1] = dd * static_cast<float>(_mm512_reduce_add_epi32(q1));
    _mm256_storeu_ps(d + i / 4, _mm256_set1_ps(dd));
  }
}

void matmul_rect(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1,
                 float* scratch) {
  switch (t.w->type) {
    case DType::kF32: return f_rect<LF32>(t, o0, o1, r0, r1);
    case DType::kF16: return f_rect<LF16>(t, o0, o1, r0, r1);
    case DType::kBF16: return f_rect<LBF16>(t, o0, o1, r0, r1);
    case DType::kQ8_0: return q8_rect<Pair<BQ8_0>>(t, o0, o1, r0, r1, scratch);
    case DType::kQ4_0: return q8_rect<Pair<BQ4_0>>(t, o0, o1, r0, r1, scratch);
    case DType::kQ4_1: return q8_rect<Pair<BQ4_1>>(t, o0, o1, r0, r1, scratch);
    case DType::kQ5_0: return q8_rect<Pair<BQ5_0>>(t, o0, o1, r0, r1, scratch);
    case DType::kQ5_1: return q8_rect<Pair<BQ5_1>>(t, o0, o1, r0, r1, scratch);
    case DType::kIQ4_NL: return q8_rect<Pair<BIQ4_NL>>(t, o0, o1, r0, r1, scratch);
    case DType::kIQ4_XS: return q8_rect<UIQ4_XS>(t, o0, o1, r0, r1, scratch);
    case DType::kMXFP4: return q8_rect<Pair<BMXFP4>>(t, o0, o1, r0, r1, scratch);
    case DType::kNVFP4: return q8_rect<UNVFP4>(t, o0, o1, r0, r1, scratch);
    case DType::kQ2_K: return q8_rect<UQ2_K>(t, o0, o1, r0, r1, scratch);
    case DType::kQ3_K: return q8_rect<UQ3_K>(t, o0, o1, r0, r1, scratch);
    case DType::kQ4_K: return q8_rect<UQ4_K>(t, o0, o1, r0, r1, scratch);
    case DType::kQ5_K: return q8_rect<UQ5_K>(t, o0, o1, r0, r1, scratch);
    case DType::kQ6_K: return q8_rect<UQ6_K>(t, o0, o1, r0, r1, scratch);
    case DType::kIQ2_XXS: return code_rect<CIq2Xxs>(t, o0, o1, r0, r1);
    case DType::kIQ2_XS: return code_rect<CIq2Xs>(t, o0, o1, r0, r1);
    case DType::kIQ2_S: return code_rect<CIq2S>(t, o0, o1, r0, r1);
    case DType::kIQ3_XXS: return code_rect<CIq3Xxs>(t, o0, o1, r0, r1);
    case DType::kIQ3_S: return code_rect<CIq3S>(t, o0, o1, r0, r1);
    case DType::kIQ1_S: return code_rect<CIq1S>(t, o0, o1, r0, r1);
    case DType::kIQ1_M: return code_rect<CIq1M>(t, o0, o1, r0, r1);
    case DType::kTQ1_0: return code_rect<CTq1>(t, o0, o1, r0, r1);
    case DType::kTQ2_0: return code_rect<CTq2>(t, o0, o1, r0, r1);
    default: return;  // matmul.cpp validates the type before any kernel runs
  }
}

}  // namespace fulgur::kernels::avx512
