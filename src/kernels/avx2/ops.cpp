// AVX2 + FMA + F16C element-wise kernels and attention: the vector vocabulary for 8 f32 lanes,
// then the shared bodies of simd/ops.inc. Tails use vmaskmov (masked-off lanes never fault).
#include <immintrin.h>

#include <cstdint>

#include "kernels/simd/entries.h"

namespace fulgur::kernels::avx2 {
namespace {

constexpr int64_t kW = 8;
using V = __m256;
using VI = __m256i;

inline __m256i tail_mask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

inline V vzero() { return _mm256_setzero_ps(); }
inline V vset(float x) { return _mm256_set1_ps(x); }
inline V vset2(float x, float y) { return _mm256_setr_ps(x, y, 0, 0, 0, 0, 0, 0); }
inline V vload(const float* p) { return _mm256_loadu_ps(p); }
inline V vload_n(const float* p, int64_t n) { return _mm256_maskload_ps(p, tail_mask(n)); }
inline void vstore(float* p, V v) { _mm256_storeu_ps(p, v); }
inline void vstore_n(float* p, V v, int64_t n) { _mm256_maskstore_ps(p, tail_mask(n), v); }
// Non-temporal store of a whole vector to a 32-byte aligned address.
inline void vstream(float* p, V v) { _mm256_stream_ps(p, v); }
// Lanes < n from b, the rest from a.
inline V vblend_n(V a, V b, int64_t n) {
  return _mm256_blendv_ps(a, b, _mm256_castsi256_ps(tail_mask(n)));
}
// Lane i from b where bit i of bits is set, else from a.
inline V vselect_bits(V a, V b, uint32_t bits) {
  const __m256i lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  const __m256i on = _mm256_and_si256(_mm256_set1_epi32(static_cast<int32_t>(bits)), lane_bit);
  return _mm256_blendv_ps(a, b, _mm256_castsi256_ps(_mm256_cmpeq_epi32(on, lane_bit)));
}
inline V vadd(V a, V b) { return _mm256_add_ps(a, b); }
inline V vsub(V a, V b) { return _mm256_sub_ps(a, b); }
inline V vmul(V a, V b) { return _mm256_mul_ps(a, b); }
inline V vdiv(V a, V b) { return _mm256_div_ps(a, b); }
inline V vmax(V a, V b) { return _mm256_max_ps(a, b); }
inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline float vhsum(V v) {
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  x = _mm_add_ss(x, _mm_movehdup_ps(x));
  return _mm_cvtss_f32(x);
}
// Eight horizontal sums at once: lane i of the result is the sum of a[i]'s lanes (a fixed
// tree, so every lane's rounding is the same whichever cells sit beside it).
inline V vhsum_lanes(const V* a) {
  const V s0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
  const V s1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(s0, s1, 0x20), _mm256_permute2f128_ps(s0, s1, 0x31));
}
inline float vhmax(V v) {
  __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_max_ps(x, _mm_movehl_ps(x, x));
  x = _mm_max_ss(x, _mm_movehdup_ps(x));
  return _mm_cvtss_f32(x);
}

// e^x, same scheme and constants as the AVX-512 version (see there).
inline V vexp(V x) {
  const V lo = vset(-87.33654f);
  const V xc = _mm256_min_ps(_mm256_max_ps(x, lo), vset(88.3f));
  const V n = _mm256_round_ps(vmul(xc, vset(1.44269504088896341f)),
                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  V r = _mm256_fnmadd_ps(n, vset(0.693359375f), xc);
  r = _mm256_fnmadd_ps(n, vset(-2.12194440e-4f), r);
  V p = vset(1.9875691500e-4f);
  p = vfma(p, r, vset(1.3981999507e-3f));
  p = vfma(p, r, vset(8.3334519073e-3f));
  p = vfma(p, r, vset(4.1665795894e-2f));
  p = vfma(p, r, vset(1.6666665459e-1f));
  p = vfma(p, r, vset(5.0000001201e-1f));
  p = vadd(vfma(p, vmul(r, r), r), vset(1.0f));
  const VI e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const V res = vmul(p, _mm256_castsi256_ps(e));
  return _mm256_and_ps(res, _mm256_cmp_ps(x, lo, _CMP_GE_OQ));
}

inline V vload_f16(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline V vload_f16_n(const uint16_t* p, int64_t n) {
  alignas(16) uint16_t buf[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  __builtin_memcpy(buf, p, static_cast<size_t>(n) * 2);
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(buf)));
}
inline void vstore_f16(uint16_t* p, V v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
inline void vstore_f16_n(uint16_t* p, V v, int64_t n) {
  alignas(16) uint16_t buf[8];
  _mm_store_si128(reinterpret_cast<__m128i*>(buf), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  __builtin_memcpy(p, buf, static_cast<size_t>(n) * 2);
}
inline V vload_bf16(const uint16_t* p) {
  const VI w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
// [a0 a1 a2 a3 ...] -> [a1 a0 a3 a2 ...]
inline V vswap_pairs(V v) { return _mm256_permute_ps(v, 0xB1); }

inline VI vload_u8(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
inline VI vload_i8(const int8_t* p) {
  return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
inline VI vand_i(VI a, int32_t m) { return _mm256_and_si256(a, _mm256_set1_epi32(m)); }
inline VI vor_i(VI a, VI b) { return _mm256_or_si256(a, b); }
inline VI vsrl_i(VI a, int s) { return _mm256_srli_epi32(a, s); }
inline VI vsll_i(VI a, int s) { return _mm256_slli_epi32(a, s); }
inline VI vsub_i(VI a, int32_t b) { return _mm256_sub_epi32(a, _mm256_set1_epi32(b)); }
inline V vcvt(VI a) { return _mm256_cvtepi32_ps(a); }
inline float f16_scalar(int bits) { return _cvtsh_ss(static_cast<unsigned short>(bits)); }

}  // namespace

#include "kernels/simd/ops.inc"
#include "kernels/simd/recurrent.inc"

}  // namespace fulgur::kernels::avx2
