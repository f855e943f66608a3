// AVX-512 element-wise kernels and attention: the vector vocabulary for 16 f32 lanes, then the
// shared bodies of simd/ops.inc. Tails use AVX-512 masks (masked-off lanes never fault).
// GCC 12 flags the deliberately undefined pass-through operand (_mm512_undefined_*) inside
// avx512fintrin.h as maybe-uninitialized (or, inlined into the scan's row blocks,
// uninitialized) once those intrinsics are inlined; a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

#include <cstdint>

#include "kernels/simd/entries.h"

namespace fulgur::kernels::avx512 {
namespace {

constexpr int64_t kW = 16;
using V = __m512;
using VI = __m512i;

inline __mmask16 tail_mask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

inline V vzero() { return _mm512_setzero_ps(); }
inline V vset(float x) { return _mm512_set1_ps(x); }
inline V vset2(float x, float y) { return _mm512_maskz_mov_ps(0x3, _mm512_setr4_ps(x, y, 0, 0)); }
inline V vload(const float* p) { return _mm512_loadu_ps(p); }
inline V vload_n(const float* p, int64_t n) { return _mm512_maskz_loadu_ps(tail_mask(n), p); }
inline void vstore(float* p, V v) { _mm512_storeu_ps(p, v); }
inline void vstore_n(float* p, V v, int64_t n) { _mm512_mask_storeu_ps(p, tail_mask(n), v); }
// Non-temporal store of a whole vector to a 64-byte aligned address.
inline void vstream(float* p, V v) { _mm512_stream_ps(p, v); }
// Lanes < n from b, the rest from a.
inline V vblend_n(V a, V b, int64_t n) { return _mm512_mask_mov_ps(a, tail_mask(n), b); }
// Lane i from b where bit i of bits is set, else from a.
inline V vselect_bits(V a, V b, uint32_t bits) {
  return _mm512_mask_mov_ps(a, static_cast<__mmask16>(bits), b);
}
inline V vadd(V a, V b) { return _mm512_add_ps(a, b); }
inline V vsub(V a, V b) { return _mm512_sub_ps(a, b); }
inline V vmul(V a, V b) { return _mm512_mul_ps(a, b); }
inline V vdiv(V a, V b) { return _mm512_div_ps(a, b); }
inline V vmax(V a, V b) { return _mm512_max_ps(a, b); }
inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
inline float vhsum(V v) {
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  x = _mm_add_ss(x, _mm_movehdup_ps(x));
  return _mm_cvtss_f32(x);
}
inline float vhmax(V v) {
  const __m256 h = _mm256_max_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 x = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  x = _mm_max_ps(x, _mm_movehl_ps(x, x));
  x = _mm_max_ss(x, _mm_movehdup_ps(x));
  return _mm_cvtss_f32(x);
}

// Sixteen horizontal sums at once: lane i of the result is the sum of a[i]'s lanes. A fixed
// tree of in-lane and cross-lane shuffles (45 ops instead of 16 separate reductions), so every
// lane's rounding is the same whichever cells sit beside it.
inline V vhsum_lanes(const V* a) {
  V t[8], u[4], w[2];
  for (int i = 0; i < 8; ++i) {
    t[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a[i], a[i + 8], 0x44),
                         _mm512_shuffle_f32x4(a[i], a[i + 8], 0xEE));
  }
  for (int i = 0; i < 4; ++i) {
    u[i] = _mm512_add_ps(_mm512_shuffle_f32x4(t[i], t[i + 4], 0x88),
                         _mm512_shuffle_f32x4(t[i], t[i + 4], 0xDD));
  }
  for (int i = 0; i < 2; ++i) {
    w[i] = _mm512_add_ps(_mm512_shuffle_ps(u[i], u[i + 2], 0x44),
                         _mm512_shuffle_ps(u[i], u[i + 2], 0xEE));
  }
  const V z = _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], 0x88), _mm512_shuffle_ps(w[0], w[1], 0xDD));
  // z holds the sums in the order 0 2 1 3 8 10 9 11 4 6 5 7 12 14 13 15.
  const VI order = _mm512_setr_epi32(0, 2, 1, 3, 8, 10, 9, 11, 4, 6, 5, 7, 12, 14, 13, 15);
  return _mm512_permutexvar_ps(order, z);
}

// e^x: x = n·ln2 + r with |r| <= ln2/2 (ln2 split in two for an exact n·ln2), a degree-7
// polynomial for e^r (Cephes expf coefficients), and 2^n built in the exponent field.
// Inputs are clamped to [−87.34, 88.3] so 2^n stays a normal float; below −87.34 (and for
// −inf) the result is exactly 0.
inline V vexp(V x) {
  const V lo = vset(-87.33654f);
  const V xc = _mm512_min_ps(_mm512_max_ps(x, lo), vset(88.3f));
  const V n = _mm512_roundscale_ps(vmul(xc, vset(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  V r = _mm512_fnmadd_ps(n, vset(0.693359375f), xc);
  r = _mm512_fnmadd_ps(n, vset(-2.12194440e-4f), r);
  V p = vset(1.9875691500e-4f);
  p = vfma(p, r, vset(1.3981999507e-3f));
  p = vfma(p, r, vset(8.3334519073e-3f));
  p = vfma(p, r, vset(4.1665795894e-2f));
  p = vfma(p, r, vset(1.6666665459e-1f));
  p = vfma(p, r, vset(5.0000001201e-1f));
  p = vadd(vfma(p, vmul(r, r), r), vset(1.0f));
  const VI e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  const V res = vmul(p, _mm512_castsi512_ps(e));
  return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, lo, _CMP_GE_OQ), res);
}

inline V vload_f16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline V vload_f16_n(const uint16_t* p, int64_t n) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(tail_mask(n), p));
}
inline void vstore_f16(uint16_t* p, V v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
inline void vstore_f16_n(uint16_t* p, V v, int64_t n) {
  _mm256_mask_storeu_epi16(p, tail_mask(n), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
inline V vload_bf16(const uint16_t* p) {
  const VI w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
// [a0 a1 a2 a3 ...] -> [a1 a0 a3 a2 ...]
inline V vswap_pairs(V v) { return _mm512_permute_ps(v, 0xB1); }

inline VI vload_u8(const uint8_t* p) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline VI vload_i8(const int8_t* p) {
  return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline VI vand_i(VI a, int32_t m) { return _mm512_and_si512(a, _mm512_set1_epi32(m)); }
inline VI vor_i(VI a, VI b) { return _mm512_or_si512(a, b); }
inline VI vsrl_i(VI a, unsigned s) { return _mm512_srli_epi32(a, s); }
inline VI vsll_i(VI a, unsigned s) { return _mm512_slli_epi32(a, s); }
inline VI vsub_i(VI a, int32_t b) { return _mm512_sub_epi32(a, _mm512_set1_epi32(b)); }
inline V vcvt(VI a) { return _mm512_cvtepi32_ps(a); }
inline float f16_scalar(int bits) { return _cvtsh_ss(static_cast<unsigned short>(bits)); }

}  // namespace

#include "kernels/simd/ops.inc"
#include "kernels/simd/recurrent.inc"

}  // namespace fulgur::kernels::avx512
