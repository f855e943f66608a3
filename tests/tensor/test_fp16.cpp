// core/fp16.h conversions: exhaustive f16 -> f32 against an independent formula, f32 -> f16 and
// f32 -> bf16 against explicit cases (ties, subnormals, overflow, NaN) and a nearest-value property
// on random inputs, plus the F16/BF16 row paths of quantize_row/dequantize_row.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "core/fp16.h"
#include "tensor/quants.h"

namespace fulgur {
namespace {

// binary16 value from its fields, computed in double by the textbook formula.
double f16_formula(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
  double v;
  if (exp == 31)
    v = man ? std::numeric_limits<double>::quiet_NaN() : INFINITY;
  else if (exp == 0)
    v = std::ldexp(man, -24);
  else
    v = std::ldexp(1024 + man, exp - 25);
  return sign ? -v : v;
}

TEST(Fp16, DecodeAllHalfValues) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    const double want = f16_formula(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;
    } else {
      ASSERT_EQ(static_cast<double>(f), want) << std::hex << h;
      ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;  // -0 stays -0
    }
  }
}

TEST(Fp16, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t back = f32_to_f16(f16_to_f32(static_cast<uint16_t>(h)));
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) {
      ASSERT_EQ(back & 0x7C00, 0x7C00) << std::hex << h;  // NaN stays NaN
      ASSERT_NE(back & 0x3FF, 0) << std::hex << h;
    } else {
      ASSERT_EQ(back, h) << std::hex << h;
    }
  }
}

TEST(Fp16, EncodeSpecialCases) {
  struct Case {
    float in;
    uint16_t want;
  };
  const Case cases[] = {
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {1.0f, 0x3C00},
      {-2.0f, 0xC000},
      {65504.0f, 0x7BFF},   // largest finite
      {65519.99f, 0x7BFF},  // just below the overflow midpoint
      {65520.0f, 0x7C00},   // the midpoint ties to "even" = inf
      {1e10f, 0x7C00},
      {-1e10f, 0xFC00},
      {INFINITY, 0x7C00},
      {-INFINITY, 0xFC00},
      {std::ldexp(1.0f, -14), 0x0400},               // smallest normal
      {std::ldexp(1023.0f, -24), 0x03FF},            // largest subnormal
      {std::ldexp(2047.0f, -25), 0x0400},            // tie between 0x3FF and 0x400 -> even (0x400)
      {std::ldexp(1.0f, -24), 0x0001},               // smallest subnormal
      {std::ldexp(1.0f, -25), 0x0000},               // tie between 0 and 1 -> even (0)
      {std::ldexp(1.0f, -25) * 1.0000001f, 0x0001},  // just above the tie
      {std::ldexp(3.0f, -25), 0x0002},               // tie between 1 and 2 -> 2
      {std::ldexp(5.0f, -25), 0x0002},               // tie between 2 and 3 -> 2
      {std::ldexp(1.0f, -30), 0x0000},
      {-std::ldexp(1.0f, -30), 0x8000},
      {1.0f + std::ldexp(1.0f, -11), 0x3C00},  // tie -> even mantissa
      {1.0f + std::ldexp(3.0f, -11), 0x3C02},  // tie -> even mantissa (up)
      {1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20), 0x3C01},
      {std::ldexp(1.0f, -149), 0x0000},  // f32 subnormal input
  };
  for (const Case& c : cases) EXPECT_EQ(f32_to_f16(c.in), c.want) << c.in;
  const uint16_t nan = f32_to_f16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x3FF, 0);
  const uint16_t snan = f32_to_f16(f32_from_bits(0x7F800001u));  // payload only in low bits
  EXPECT_EQ(snan & 0x7C00, 0x7C00);
  EXPECT_NE(snan & 0x3FF, 0) << "a NaN must not become inf";
}

// Nearest-value property: no neighbouring half is closer, and exact ties pick the even one.
TEST(Fp16, EncodeIsRoundToNearestEven) {
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    // Random bit patterns over the whole finite half range and a little beyond.
    const float x = f32_from_bits((rng() & 0x80000000u) | (0x30000000u + rng() % 0x17800000u));
    const uint16_t h = f32_to_f16(x);
    const double v = static_cast<double>(x);
    if ((h & 0x7FFF) == 0x7C00) {  // overflowed: must be at or past the midpoint 65520
      ASSERT_GE(std::fabs(v), 65520.0) << x;
      continue;
    }
    const double err = std::fabs(f16_formula(h) - v);
    for (int delta : {-1, 1}) {
      const int nb = (h & 0x7FFF) + delta;
      if (nb < 0 || nb > 0x7BFF) continue;
      const double nerr = std::fabs(f16_formula(static_cast<uint16_t>((h & 0x8000) | nb)) - v);
      ASSERT_LE(err, nerr) << x;
      if (err == nerr) {
        ASSERT_EQ(h & 1, 0) << "tie must go to even: " << x;
      }
    }
  }
}

TEST(Bf16, EncodeDecode) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16(-1.0f), 0xBF80);
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);  // tie -> even
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(3.0f, -8)), 0x3F82);  // tie -> even (up)
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3F81);
  EXPECT_EQ(f32_to_bf16(INFINITY), 0x7F80);
  EXPECT_EQ(f32_to_bf16(-INFINITY), 0xFF80);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7F80);  // rounds past the max
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0x00000001u)), 0x0000);         // subnormal f32
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0x00008000u)), 0x0000);         // subnormal tie -> even
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0x00018000u)), 0x0002);         // subnormal tie -> even
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
  for (uint32_t nan_bits : {0x7FC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu}) {
    const uint16_t h = f32_to_bf16(f32_from_bits(nan_bits));
    EXPECT_EQ(h & 0x7F80, 0x7F80) << std::hex << nan_bits;
    EXPECT_NE(h & 0x7F, 0) << "NaN must stay NaN: " << std::hex << nan_bits;
    EXPECT_EQ(h & 0x8000, (nan_bits >> 16) & 0x8000);
  }
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_f32(static_cast<uint16_t>(h));
    ASSERT_EQ(f32_bits(f), h << 16);
    if (!std::isnan(f)) {
      ASSERT_EQ(f32_to_bf16(f), h);
    }
  }
}

TEST(Bf16, EncodeIsRoundToNearestEven) {
  std::mt19937 rng(11);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t bits = rng() & 0xFF7FFFFFu;  // finite (exponent below 0xFF)
    const float x = f32_from_bits(bits);
    const uint16_t h = f32_to_bf16(x);
    if ((h & 0x7FFF) == 0x7F80) {  // overflowed: x must be at or past max + half an ulp
      ASSERT_GE(bits & 0x7FFFFFFFu, 0x7F7F8000u) << std::hex << bits;
      continue;
    }
    const double v = x;
    const double err = std::fabs(static_cast<double>(bf16_to_f32(h)) - v);
    for (int delta : {-1, 1}) {
      const int nb = (h & 0x7FFF) + delta;
      if (nb < 0 || nb > 0x7F7F) continue;
      const double nerr =
          std::fabs(static_cast<double>(bf16_to_f32(static_cast<uint16_t>((h & 0x8000) | nb))) - v);
      ASSERT_LE(err, nerr) << std::hex << bits;
      if (err == nerr) {
        ASSERT_EQ(h & 1, 0) << std::hex << bits;
      }
    }
  }
}

TEST(Fp16, RowConversionsUseTheScalarRules) {
  const float in[6] = {1.0f,  1.0f + std::ldexp(1.0f, -11), std::ldexp(1.0f, -24), 65520.0f,
                       -0.0f, 1.0f + std::ldexp(1.0f, -8)};
  uint16_t h[6], b[6];
  quantize_row(DType::kF16, in, h, 6);
  quantize_row(DType::kBF16, in, b, 6);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(h[i], f32_to_f16(in[i]));
    EXPECT_EQ(b[i], f32_to_bf16(in[i]));
  }
  float back[6];
  dequantize_row(DType::kF16, h, back, 6);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f32_bits(back[i]), f32_bits(f16_to_f32(h[i])));
  dequantize_row(DType::kBF16, b, back, 6);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f32_bits(back[i]), static_cast<uint32_t>(b[i]) << 16);
}

}  // namespace
}  // namespace fulgur
