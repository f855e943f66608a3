#include "kernels/act_panels.h"

#include <emmintrin.h>

#include <cstring>
#include <vector>

namespace fulgur::kernels {

namespace {

// sum(q) of 16 int8 = sum(q + 128) - 16 * 128, the first by psadbw on the unsigned bytes.
int32_t sum16(const int8_t* q) {
  const __m128i u = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)),
                                  _mm_set1_epi8(static_cast<char>(0x80)));
  const __m128i s = _mm_sad_epu8(u, _mm_setzero_si128());
  return _mm_cvtsi128_si32(s) + _mm_extract_epi16(s, 4) - 16 * 128;
}

}  // namespace

const Q80Coef* q8_0_coefs(const ActQ8& act, int64_t r0, int64_t n, int64_t nb, bool with_bias) {
  thread_local std::vector<Q80Coef> buf;  // grown, never shrunk
  if (buf.size() < static_cast<size_t>(n * nb)) buf.resize(static_cast<size_t>(n * nb));
  Q80Coef* coef = buf.data();
  const int64_t kp = act.kp;
  for (int64_t i = 0; i < n; ++i) {
    const int8_t* q = act.q + (r0 + i) * kp;
    const float* d = act.d + (r0 + i) * (kp / 4);
    const float* s = act.s + (r0 + i) * (kp / 16);
    for (int64_t b = 0; b < nb; ++b)
      coef[i * nb + b] = {d[8 * b], -128.0f * (s[2 * b] + s[2 * b + 1]),
                          with_bias ? 128 * (sum16(q + 32 * b) + sum16(q + 32 * b + 16)) : 0};
  }
  return coef;
}

void q4_k_panel(const ActQ8& a, int64_t r0, int rows, int64_t j0, int64_t j1, uint8_t* out) {
  for (int r = 0; r < rows; ++r) {
    const int8_t* q = a.q + (r0 + r) * a.kp;
    const float* d = a.d + (r0 + r) * (a.kp / 4);
    const float* s = a.s + (r0 + r) * (a.kp / 16);
    for (int64_t j = j0; j < j1; ++j) {
      uint8_t* c = out + (j - j0) * 40 * rows;
      const float da = d[8 * j], sj = s[2 * j] + s[2 * j + 1];
      std::memcpy(c + 32 * r, q + 32 * j, 32);
      std::memcpy(c + 32 * rows + 4 * r, &da, 4);
      std::memcpy(c + 36 * rows + 4 * r, &sj, 4);
    }
  }
}

void q6_k_panel(const ActQ8& a, int64_t r0, int rows, int64_t nblk, uint8_t* out) {
  const int64_t kp = a.kp;
  for (int64_t b = 0; b < nblk; ++b) {
    uint8_t* pb = out + b * 44 * rows;
    for (int k = 0; k < rows; ++k) {
      const int8_t* q = a.q + (r0 + k) * kp + 32 * b;
      for (int j = 0; j < 8; ++j) std::memcpy(pb + 4 * (j * rows + k), q + 4 * j, 4);
      for (int h = 0; h < 2; ++h) {
        const int32_t off = -32 * sum16(q + 16 * h);
        std::memcpy(pb + 32 * rows + 4 * (h * rows + k), &off, 4);
      }
      std::memcpy(pb + 40 * rows + 4 * k, a.d + (r0 + k) * (kp / 4) + 8 * b, 4);
    }
  }
}

}  // namespace fulgur::kernels
