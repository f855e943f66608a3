// AVX2 matmul: int8 dot products via maddubs(|w|, sign(a, w)) + madd for quantized weights
// against the Q8 activations of quant_act.h (the codebook and ternary types against their own,
// simd/iq_units.inc's ActK), f32 FMA for F32/F16/BF16 weights. Compiled with
// -mavx2 -mfma -mf16c; everything but the exported entry points has internal linkage.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/avx2/scales_k4.h"
#include "kernels/simd/entries.h"
#include "tensor/blocks.h"
#include "tensor/iq_grids.h"

namespace fulgur::kernels::avx2 {
namespace {

#include "kernels/simd/units.inc"
#include "kernels/simd/iq_units.inc"
#include "kernels/avx2/matmul_units.inc"
#include "kernels/simd/tile_loops.inc"

// 16 ymm registers: 4 accumulators (x2 for the f32 path) plus the weight chunk, its absolute
// value, its scales and temporaries.
constexpr int kMaxRows = 4;
constexpr int64_t kTileBytes = 256 * 1024;  // weight bytes per L2 tile when n > kMaxRows
// Software prefetch distance along a weight row in q8_tile: on a Zen 1 host Q8_0 at one row read
// 12-17 % faster with it (min and median of 8 alternating runs); the K-quant tiles, bound by
// their arithmetic there, showed no difference and do without.
constexpr int64_t kPrefetchBytes = 2048;

inline float hsum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

#include "kernels/avx2/kquant.inc"

template <class U, int R>
void q8_tile(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, float* wc) {
  const WeightView& w = *t.w;
  const int64_t nunits = w.cols / U::kElems;
  const ActRows<R> act(t.act, r0);
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t o = o0; o < o1; ++o) {
    const auto* row = static_cast<const uint8_t*>(w.data) + o * static_cast<int64_t>(w.row_stride);
    __m256 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
    for (int64_t u = 0; u < nunits; ++u) {
      __m256i ws[U::kChunks];
      __m256 vdw[U::kChunks];
      const uint8_t* unit = row + u * U::kBytes;
      _mm_prefetch(reinterpret_cast<const char*>(unit) + kPrefetchBytes, _MM_HINT_T0);
      U::unpack(unit, ws, vdw, wc + u * (U::kElems / 16));
      for (int c = 0; c < U::kChunks; ++c) {
        const int64_t e = u * U::kElems + 32 * c;
        const __m256i wabs = _mm256_sign_epi8(ws[c], ws[c]);
        for (int r = 0; r < R; ++r) {
          const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act.q[r] + e));
          const __m256i p16 = _mm256_maddubs_epi16(wabs, _mm256_sign_epi8(a, ws[c]));
          const __m256i p32 = _mm256_madd_epi16(p16, ones);
          const __m256 sc = _mm256_mul_ps(vdw[c], _mm256_loadu_ps(act.d[r] + e / 4));
          acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p32), sc, acc[r]);
        }
      }
    }
    if constexpr (U::kMins) {  // sum over 16-groups of the min times (d * sum q)
      const int64_t ngu = nunits * (U::kElems / 16);
      int64_t g = 0;
      for (; g + 8 <= ngu; g += 8) {
        const __m256 c = _mm256_loadu_ps(wc + g);
        for (int r = 0; r < R; ++r)
          acc[r] = _mm256_fmadd_ps(c, _mm256_loadu_ps(act.s[r] + g), acc[r]);
      }
      for (; g < ngu; g += 2) {  // 32-blocks: an odd block count leaves one pair of groups
        const __m256 c = _mm256_setr_ps(wc[g], wc[g + 1], 0, 0, 0, 0, 0, 0);
        for (int r = 0; r < R; ++r)
          acc[r] = _mm256_fmadd_ps(
              c, _mm256_setr_ps(act.s[r][g], act.s[r][g + 1], 0, 0, 0, 0, 0, 0), acc[r]);
      }
    }
    for (int r = 0; r < R; ++r) t.y[(r0 + r) * t.ldy + o] = w.scale * hsum(acc[r]);
  }
}

// Q4_K, Q5_K and Q6_K take kquant.inc's path, every other type its unit's.
// Out of line, as avx512/matmul.cpp's q8_tile.
template <class U, int R>
[[gnu::noinline]] void int8_tile(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0,
                                 float* wc) {
  if constexpr (std::is_same_v<U, KQ4> || std::is_same_v<U, KQ5> || std::is_same_v<U, KQ6>) {
    kq_tile<U, R>(t, o0, o1, r0);
  } else {
    q8_tile<U, R>(t, o0, o1, r0, wc);
  }
}

template <class U>
void q8_rect(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1, float* wc) {
  for_row_tiles<kMaxRows>(o0, o1, r0, r1, static_cast<int64_t>(t.w->row_stride), kTileBytes,
                          [&](auto R, int64_t oa, int64_t oe, int64_t r) {
                            int8_tile<U, R>(t, oa, oe, r, wc);
                          });
}

// ---- Codebook and ternary types (simd/iq_units.inc), against their own activations (ActK) -----

// Where code_tile's super-blocks come from, as avx512/iq_units.inc's: decoded as it goes (Direct)
// or read back from a buffer a cache tile of weight rows was decoded into once (Expanded).
// get(o, u, ws, &codes) -> f of super-block u of weight row o, as S::decode.
template <class S>
struct Direct {
  const uint8_t* data;
  int64_t stride;
  float get(int64_t o, int64_t u, __m256i* ws, __m128i* codes) const {
    const uint8_t* unit = data + o * stride + u * S::kBytes;
    _mm_prefetch(reinterpret_cast<const char*>(unit) + kPrefetchBytes, _MM_HINT_T0);
    return S::decode(unit, ws, codes);
  }
};
struct alignas(64) CodeBlock {  // one decoded super-block
  __m256i ws[8];
  __m128i codes;
  float f;
};
struct Expanded {
  const CodeBlock* blocks;  // [rows][nunits] from row o_base
  int64_t o_base, nunits;
  float get(int64_t o, int64_t u, __m256i* ws, __m128i* codes) const {
    const CodeBlock& b = blocks[(o - o_base) * nunits + u];
    for (int c = 0; c < 8; ++c) ws[c] = b.ws[c];
    *codes = b.codes;
    return b.f;
  }
};
template <class S>
void expand_rows(const Direct<S>& src, int64_t o0, int64_t o1, int64_t nunits, CodeBlock* blocks) {
  for (int64_t o = o0; o < o1; ++o)
    for (int64_t u = 0; u < nunits; ++u) {
      CodeBlock& b = blocks[(o - o0) * nunits + u];
      b.f = src.get(o, u, b.ws, &b.codes);
    }
}

// y[r][o] for o in [o0, o1) and the R activation rows from r0 (of a), the super-blocks from src.
// Per 32-element sub-block and row: maddubs(|v|, sign(a, v)) and one madd with the sub-block's
// two codes as int16 (lanes 0-7: its first 16-group, 8-15: its second), added to the super-block's
// integer sum; f times the row's activation scale multiplies it once. |pair sum| <= 2 * 62 * 127, times a code <= 31
// and 8 sub-blocks: far inside int32.
template <class Src, int R>
[[gnu::noinline]] void code_tile(const MatmulTask& t, const Src& src, const ActK& a, int64_t o0, int64_t o1,
                                 int64_t r0) {
  const WeightView& w = *t.w;
  const int64_t nunits = w.cols / 256;
  const int8_t* aq[R];
  const float* ad[R];
  for (int r = 0; r < R; ++r) {
    aq[r] = a.q_row(r0 + r);
    ad[r] = a.d_row(r0 + r);
  }
  for (int64_t o = o0; o < o1; ++o) {
    __m256 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
    for (int64_t u = 0; u < nunits; ++u) {
      __m256i ws[8];
      __m128i codes;
      const float f = src.get(o, u, ws, &codes);
      const __m256i kb = _mm256_broadcastsi128_si256(codes);
      __m256i sum[R];
      for (int r = 0; r < R; ++r) sum[r] = _mm256_setzero_si256();
      for (int c = 0; c < 8; ++c) {
        // Codes 2c and 2c + 1 zero-extended to int16 (a pshufb index with bit 7 set writes 0).
        const short lo = static_cast<short>(0x8000 | (2 * c)), hi = static_cast<short>(0x8000 | (2 * c + 1));
        const __m256i k = _mm256_shuffle_epi8(kb, _mm256_setr_epi16(lo, lo, lo, lo, lo, lo, lo, lo, hi, hi, hi, hi, hi, hi, hi, hi));
        const __m256i wabs = _mm256_sign_epi8(ws[c], ws[c]);
        for (int r = 0; r < R; ++r) {
          const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(aq[r] + 256 * u + 32 * c));
          sum[r] = _mm256_add_epi32(sum[r], _mm256_madd_epi16(_mm256_maddubs_epi16(wabs, _mm256_sign_epi8(av, ws[c])), k));
          keep_in_register(sum[r]);
        }
      }
      for (int r = 0; r < R; ++r)
        acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[r]), _mm256_set1_ps(f * ad[r][u]), acc[r]);
    }
    for (int r = 0; r < R; ++r) t.y[(r0 + r) * t.ldy + o] = w.scale * hsum(acc[r]);
  }
}

#include "kernels/simd/code_rect.inc"

// ---- f32 path ------------------------------------------------------------------------------
struct LF32 {
  static __m256 load(const uint8_t* p, int64_t i) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p) + i);
  }
  static float one(const uint8_t* p, int64_t i) {
    float v;
    std::memcpy(&v, p + 4 * i, 4);
    return v;
  }
};
struct LF16 {
  static __m256 load(const uint8_t* p, int64_t i) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i)));
  }
  static float one(const uint8_t* p, int64_t i) { return ld_f16(p + 2 * i); }
};
struct LBF16 {  // exact: the 16 bits become the top half of the f32
  static __m256 load(const uint8_t* p, int64_t i) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static float one(const uint8_t* p, int64_t i) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    const uint32_t b = static_cast<uint32_t>(h) << 16;
    float v;
    std::memcpy(&v, &b, 4);
    return v;
  }
};

template <class L, int R>
void f_tile(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0) {
  const WeightView& w = *t.w;
  const int64_t k = w.cols;
  const float* x[R];
  for (int r = 0; r < R; ++r) x[r] = t.x + (r0 + r) * t.ldx;
  for (int64_t o = o0; o < o1; ++o) {
    const auto* row = static_cast<const uint8_t*>(w.data) + o * static_cast<int64_t>(w.row_stride);
    __m256 a0[R], a1[R];
    for (int r = 0; r < R; ++r) a0[r] = a1[r] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= k; i += 16) {
      const __m256 w0 = L::load(row, i), w1 = L::load(row, i + 8);
      for (int r = 0; r < R; ++r) {
        a0[r] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x[r] + i), a0[r]);
        a1[r] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x[r] + i + 8), a1[r]);
      }
    }
    float tail[R];
    for (int r = 0; r < R; ++r) tail[r] = 0.0f;
    for (; i < k; ++i) {
      const float wv = L::one(row, i);
      for (int r = 0; r < R; ++r) tail[r] += wv * x[r][i];
    }
    for (int r = 0; r < R; ++r)
      t.y[(r0 + r) * t.ldy + o] = w.scale * (hsum(_mm256_add_ps(a0[r], a1[r])) + tail[r]);
  }
}

template <class L>
void f_rect(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  for_row_tiles<kMaxRows>(o0, o1, r0, r1, static_cast<int64_t>(t.w->row_stride), kTileBytes,
                          [&](auto R, int64_t oa, int64_t oe, int64_t r) {
                            f_tile<L, R>(t, oa, oe, r);
                          });
}

}  // namespace

void quantize_act_row(const float* x, int64_t cols, int8_t* q, float* d, float* s) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  int64_t i = 0;
  for (; i + 32 <= cols; i += 32) {
    __m256 v[4];
    __m256 m = _mm256_setzero_ps();
    for (int j = 0; j < 4; ++j) {
      v[j] = _mm256_loadu_ps(x + i + 8 * j);
      m = _mm256_max_ps(m, _mm256_and_ps(v[j], abs_mask));
    }
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    const float dd = amax / 127.0f;
    const __m256 id = _mm256_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
    __m256i qi[4];
    for (int j = 0; j < 4; ++j) qi[j] = _mm256_cvtps_epi32(_mm256_mul_ps(v[j], id));  // nearest even
    // packs interleave 128-bit lanes; the permute restores element order.
    const __m256i p16a = _mm256_packs_epi32(qi[0], qi[1]), p16b = _mm256_packs_epi32(qi[2], qi[3]);
    const __m256i p8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(p16a, p16b),
                                                   _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i), p8);
    for (int h = 0; h < 2; ++h) {
      const __m256i sum8 = _mm256_add_epi32(qi[2 * h], qi[2 * h + 1]);
      __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum8), _mm256_extracti128_si256(sum8, 1));
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(1, 0, 3, 2)));
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(2, 3, 0, 1)));
      s[i / 16 + h] = dd * static_cast<float>(_mm_cvtsi128_si32(s4));
    }
    _mm256_storeu_ps(d + i / 4, _mm256_set1_ps(dd));
  }
}

void matmul_rect(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1,
                 float* scratch) {
  switch (t.w->type) {
    case DType::kF32: return f_rect<LF32>(t, o0, o1, r0, r1);
    case DType::kF16: return f_rect<LF16>(t, o0, o1, r0, r1);
    case DType::kBF16: return f_rect<LBF16>(t, o0, o1, r0, r1);
    case DType::kQ8_0: return q8_rect<UQ8_0>(t, o0, o1, r0, r1, scratch);
    case DType::kQ4_0: return q8_rect<UQ4_0>(t, o0, o1, r0, r1, scratch);
    case DType::kQ4_1: return q8_rect<UQ4_1>(t, o0, o1, r0, r1, scratch);
    case DType::kQ5_0: return q8_rect<UQ5_0>(t, o0, o1, r0, r1, scratch);
    case DType::kQ5_1: return q8_rect<UQ5_1>(t, o0, o1, r0, r1, scratch);
    case DType::kIQ4_NL: return q8_rect<UIQ4_NL>(t, o0, o1, r0, r1, scratch);
    case DType::kIQ4_XS: return q8_rect<UIQ4_XS>(t, o0, o1, r0, r1, scratch);
    case DType::kMXFP4: return q8_rect<UMXFP4>(t, o0, o1, r0, r1, scratch);
    case DType::kNVFP4: return q8_rect<UNVFP4>(t, o0, o1, r0, r1, scratch);
    case DType::kQ2_K: return q8_rect<UQ2_K>(t, o0, o1, r0, r1, scratch);
    case DType::kQ3_K: return q8_rect<UQ3_K>(t, o0, o1, r0, r1, scratch);
    case DType::kQ4_K: return q8_rect<KQ4>(t, o0, o1, r0, r1, scratch);
    case DType::kQ5_K: return q8_rect<KQ5>(t, o0, o1, r0, r1, scratch);
    case DType::kQ6_K: return q8_rect<KQ6>(t, o0, o1, r0, r1, scratch);
    case DType::kIQ2_XXS: return code_rect<SIq2Xxs>(t, o0, o1, r0, r1);
    case DType::kIQ2_XS: return code_rect<SIq2Xs>(t, o0, o1, r0, r1);
    case DType::kIQ2_S: return code_rect<SIq2S>(t, o0, o1, r0, r1);
    case DType::kIQ3_XXS: return code_rect<SIq3Xxs>(t, o0, o1, r0, r1);
    case DType::kIQ3_S: return code_rect<SIq3S>(t, o0, o1, r0, r1);
    case DType::kIQ1_S: return code_rect<SIq1S>(t, o0, o1, r0, r1);
    case DType::kIQ1_M: return code_rect<SIq1M>(t, o0, o1, r0, r1);
    case DType::kTQ1_0: return code_rect<STq1>(t, o0, o1, r0, r1);
    case DType::kTQ2_0: return code_rect<STq2>(t, o0, o1, r0, r1);
    default: return;  // matmul.cpp validates the type before any kernel runs
  }
}

}  // namespace fulgur::kernels::avx2
