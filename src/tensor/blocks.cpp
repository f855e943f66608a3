#include "tensor/blocks.h"

#include <cmath>

#include "core/fp16.h"

namespace fulgur {

void get_scale_min_k4(int j, const uint8_t* scales, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    // Sub-blocks 4..7 keep their low 4 bits in bytes 8..11 and their top 2 bits in the spare
    // top bits of bytes 0..7.
    *sc = static_cast<uint8_t>((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

void pack_scale_min_k4(const uint8_t* sc, const uint8_t* m, uint8_t* scales) {
  for (int j = 0; j < kKScaleBytes; ++j) scales[j] = 0;
  for (int j = 0; j < 8; ++j) {
    const uint8_t s = sc[j] & 63, mm = m[j] & 63;
    if (j < 4) {
      scales[j] |= s;
      scales[j + 4] |= mm;
    } else {
      scales[j + 4] = static_cast<uint8_t>((s & 0xF) | ((mm & 0xF) << 4));
      scales[j - 4] |= static_cast<uint8_t>((s >> 4) << 6);
      scales[j] |= static_cast<uint8_t>((mm >> 4) << 6);
    }
  }
}

void unpack_q3_k_scales(const uint8_t* scales, int8_t* out) {
  // Bytes 0..7 hold the low nibbles (scale k in byte k%8, nibble k/8); byte 8 + k%4 holds the
  // two high bits of scale k at bit position 2*(k/4).
  for (int k = 0; k < 16; ++k) {
    const int lo = (scales[k % 8] >> (4 * (k / 8))) & 0xF;
    const int hi = (scales[8 + k % 4] >> (2 * (k / 4))) & 3;
    out[k] = static_cast<int8_t>((lo | (hi << 4)) - 32);
  }
}

void pack_q3_k_scales(const int8_t* in, uint8_t* scales) {
  for (int j = 0; j < kKScaleBytes; ++j) scales[j] = 0;
  for (int k = 0; k < 16; ++k) {
    const int v = (in[k] + 32) & 63;
    scales[k % 8] |= static_cast<uint8_t>((v & 0xF) << (4 * (k / 8)));
    scales[8 + k % 4] |= static_cast<uint8_t>((v >> 4) << (2 * (k / 4)));
  }
}

float e8m0_to_f32(uint8_t e) {
  // e = 0 would be exponent field 0 (zero); 2^-127 is the subnormal with the top mantissa bit.
  const uint32_t bits = e == 0 ? 0x00400000u : static_cast<uint32_t>(e) << 23;
  return f32_from_bits(bits);
}

float e8m0_to_f32_half(uint8_t e) {
  // 2^(e-128): for e < 2 the result is subnormal (2^-128, 2^-127).
  const uint32_t bits = e < 2 ? (0x00200000u << e) : static_cast<uint32_t>(e - 1) << 23;
  return f32_from_bits(bits);
}

float ue4m3_to_f32(uint8_t x) {
  if (x == 0 || x == 0x7F) return 0.0f;  // 0x7F is E4M3's NaN; ggml maps it to 0
  const int exp = (x >> 3) & 0xF;
  const int man = x & 0x7;
  if (exp == 0) return std::ldexp(static_cast<float>(man), -9);
  return std::ldexp(1.0f + static_cast<float>(man) / 8.0f, exp - 7);
}

float ue4m3_to_f32_half(uint8_t x) {
  return ue4m3_to_f32(x) * 0.5f;
}

}  // namespace fulgur
