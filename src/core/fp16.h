// Scalar conversions between f32 and IEEE binary16 / bfloat16. These are the reference
// semantics (subnormals, inf and NaN included); SIMD paths use F16C / AVX512-BF16 and are
// tested against these.
#pragma once

#include <cstdint>
#include <cstring>

namespace fulgur {

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t man = h & 0x3FFu;
  if (exp == 0x1F) return f32_from_bits(sign | 0x7F800000u | (man << 13));  // inf / NaN
  if (exp != 0) return f32_from_bits(sign | ((exp + 112) << 23) | (man << 13));
  if (man == 0) return f32_from_bits(sign);
  // Subnormal half: value = man * 2^-24; normalise into an f32.
  int e = -1;
  do {
    ++e;
    man <<= 1;
  } while ((man & 0x400u) == 0);
  return f32_from_bits(sign | (static_cast<uint32_t>(112 - e) << 23) | ((man & 0x3FFu) << 13));
}

// Round to nearest even, overflow to inf, NaN stays NaN.
inline uint16_t f32_to_f16(float f) {
  const uint32_t x = f32_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) return sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u);
  if (abs >= 0x477FF000u) return sign | 0x7C00u;  // rounds to >= 65520 -> inf
  if (abs < 0x38800000u) {                        // below the smallest normal half (2^-14)
    if (abs < 0x33000000u) return sign;           // < 2^-25 rounds to zero
    const uint32_t e = abs >> 23;
    const uint32_t man = (abs & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14..24: places the value in units of 2^-24
    uint32_t half = man >> shift;
    const uint32_t rest = man & ((1u << shift) - 1);
    const uint32_t mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1u))) ++half;
    return sign | static_cast<uint16_t>(half);
  }
  uint32_t half = ((abs >> 13) - (112u << 10));
  const uint32_t rest = abs & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return sign | static_cast<uint16_t>(half);
}

inline float bf16_to_f32(uint16_t h) { return f32_from_bits(static_cast<uint32_t>(h) << 16); }

// Round to nearest even; NaN is kept quiet (as ggml does).
inline uint16_t f32_to_bf16(float f) {
  const uint32_t x = f32_bits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace fulgur
