// Bit-exact dequantization of hand-built 32/64-element blocks (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1,
// IQ4_NL, MXFP4, NVFP4) and of the element-wise types. Bytes are placed at the offsets of
// archs-gguf.md §1.7 and the expectations are written from that text (with literal spot values
// worked out by hand), with scales that keep every product exact so EXPECT_EQ applies.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "tensor/blocks.h"
#include "tensor/dtype.h"
#include "tensor/quants.h"
#include "tensor/tensor_test_util.h"

namespace fulgur {
namespace {

using test::Bytes;
using test::put_u16;

std::vector<float> dequant(DType type, const Bytes& bytes, int64_t n) {
  EXPECT_EQ(bytes.size(), row_bytes(type, n));
  std::vector<float> out(static_cast<size_t>(n), std::numeric_limits<float>::quiet_NaN());
  dequantize_row(type, bytes.data(), out.data(), n);
  return out;
}

TEST(DequantSmall, Q4_0) {
  // Two blocks; the second checks the per-block advance.
  Bytes b(36, 0);
  put_u16(b, 0, test::kF16Half);
  put_u16(b, 18, test::kF16MinusTwo);
  for (int j = 0; j < 16; ++j) {
    b[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    b[20 + j] = static_cast<uint8_t>(((j * 5) & 15) | (((j * 3) & 15) << 4));
  }
  const auto y = dequant(DType::kQ4_0, b, 64);
  // Low nibbles are elements 0..15, high nibbles 16..31 (not interleaved).
  EXPECT_EQ(y[0], -4.0f);   // 0.5 * (0 - 8)
  EXPECT_EQ(y[1], -3.5f);   // 0.5 * (1 - 8)
  EXPECT_EQ(y[16], 3.5f);   // 0.5 * (15 - 8)
  EXPECT_EQ(y[31], -4.0f);  // 0.5 * (0 - 8)
  EXPECT_EQ(y[32], 16.0f);  // -2 * (0 - 8)
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * static_cast<float>(j - 8));
    EXPECT_EQ(y[j + 16], 0.5f * static_cast<float>(15 - j - 8));
    EXPECT_EQ(y[32 + j], -2.0f * static_cast<float>(((j * 5) & 15) - 8));
    EXPECT_EQ(y[48 + j], -2.0f * static_cast<float>(((j * 3) & 15) - 8));
  }
}

TEST(DequantSmall, Q4_1) {
  Bytes b(20, 0);
  put_u16(b, 0, test::kF16Half);      // d
  put_u16(b, 2, test::kF16MinusTwo);  // m
  for (int j = 0; j < 16; ++j) b[4 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = dequant(DType::kQ4_1, b, 32);
  EXPECT_EQ(y[0], -2.0f);  // 0.5*0 - 2
  EXPECT_EQ(y[15], 5.5f);  // 0.5*15 - 2
  EXPECT_EQ(y[16], 5.5f);  // high nibble of byte 0 = 15
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * j - 2.0f);
    EXPECT_EQ(y[j + 16], 0.5f * (15 - j) - 2.0f);
  }
}

// qh as an LE u32: bit j is bit 4 of element j.
void check_q5(DType type) {
  const bool has_min = type == DType::kQ5_1;
  const size_t qh_off = has_min ? 4 : 2, qs_off = qh_off + 4;
  Bytes b(has_min ? 24 : 22, 0);
  put_u16(b, 0, test::kF16Quarter);
  if (has_min) put_u16(b, 2, test::kF16One);
  const uint32_t qh = 0xCC33F00Fu;  // bytes 0F F0 33 CC
  test::put_u32(b, qh_off, qh);
  for (int j = 0; j < 16; ++j) b[qs_off + j] = static_cast<uint8_t>(j | (((j * 7) & 15) << 4));
  const auto y = dequant(type, b, 32);
  const float off = has_min ? 1.0f : 0.0f;
  const int bias = has_min ? 0 : 16;
  // Element 0: low nibble 0, qh bit 0 = 1 -> q = 16. Element 4: nibble 4, bit 4 = 0 -> q = 4.
  // Element 16: high nibble of byte 0 = 0, qh bit 16 = 1 (0x33) -> q = 16.
  // Element 18: high nibble (14 & 15 = 14), qh bit 18 = 0 -> q = 14. Element 31: bit 31 = 1, nibble
  // (105 & 15 = 9) -> 25.
  EXPECT_EQ(y[0], 0.25f * (16 - bias) + off);
  EXPECT_EQ(y[4], 0.25f * (4 - bias) + off);
  EXPECT_EQ(y[16], 0.25f * (16 - bias) + off);
  EXPECT_EQ(y[18], 0.25f * (14 - bias) + off);
  EXPECT_EQ(y[31], 0.25f * (25 - bias) + off);
  for (int j = 0; j < 16; ++j) {
    const int lo = j | static_cast<int>(((qh >> j) & 1) << 4);
    const int hi = ((j * 7) & 15) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
    EXPECT_EQ(y[j], 0.25f * static_cast<float>(lo - bias) + off) << j;
    EXPECT_EQ(y[j + 16], 0.25f * static_cast<float>(hi - bias) + off) << j;
  }
}

TEST(DequantSmall, Q5_0) {
  check_q5(DType::kQ5_0);
}
TEST(DequantSmall, Q5_1) {
  check_q5(DType::kQ5_1);
}

TEST(DequantSmall, Q8_0AndQ8_1) {
  Bytes b0(34, 0), b1(36, 0);
  put_u16(b0, 0, test::kF16Half);
  put_u16(b1, 0, test::kF16Half);
  put_u16(b1, 2, 0x7BFF);  // s: ignored by dequantization
  for (int j = 0; j < 32; ++j) {
    const auto q = static_cast<int8_t>(j * 8 - 127);
    b0[2 + j] = static_cast<uint8_t>(q);
    b1[4 + j] = static_cast<uint8_t>(q);
  }
  const auto y0 = dequant(DType::kQ8_0, b0, 32);
  const auto y1 = dequant(DType::kQ8_1, b1, 32);
  EXPECT_EQ(y0[0], -63.5f);  // 0.5 * -127
  EXPECT_EQ(y0[31], 60.5f);  // 0.5 * (248 - 127)
  for (int j = 0; j < 32; ++j) {
    EXPECT_EQ(y0[j], 0.5f * static_cast<float>(j * 8 - 127));
    EXPECT_EQ(y1[j], y0[j]);
  }
}

TEST(DequantSmall, Iq4Nl) {
  Bytes b(18, 0);
  put_u16(b, 0, test::kF16Two);
  for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = dequant(DType::kIQ4_NL, b, 32);
  const int table[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  EXPECT_EQ(y[0], -254.0f);
  EXPECT_EQ(y[8], 2.0f);
  EXPECT_EQ(y[16], 226.0f);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 2.0f * table[j]);
    EXPECT_EQ(y[j + 16], 2.0f * table[15 - j]);
  }
}

// The true E2M1 values of codes 0..15.
const float kFp4[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};

TEST(DequantSmall, Mxfp4) {
  // Block value = E2M1 value * 2^(e - 127); e < 2 gives subnormal scales.
  for (int e : {0, 1, 2, 100, 127, 130, 254}) {
    Bytes b(17, 0);
    b[0] = static_cast<uint8_t>(e);
    for (int j = 0; j < 16; ++j) b[1 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    const auto y = dequant(DType::kMXFP4, b, 32);
    for (int j = 0; j < 16; ++j) {
      EXPECT_EQ(y[j], std::ldexp(kFp4[j], e - 127)) << "e=" << e << " j=" << j;
      EXPECT_EQ(y[j + 16], std::ldexp(kFp4[15 - j], e - 127)) << "e=" << e << " j=" << j;
    }
  }
  Bytes b(17, 0);
  b[0] = 127;
  b[1] = 0x7F;  // element 0: code 15 = -6, element 16: code 7 = 6
  const auto y = dequant(DType::kMXFP4, b, 32);
  EXPECT_EQ(y[0], -6.0f);
  EXPECT_EQ(y[16], 6.0f);
  b[0] = 0;
  b[1] = 0x01;  // element 0: 0.5 * 2^-127 = 2^-128, a subnormal float
  EXPECT_EQ(dequant(DType::kMXFP4, b, 32)[0], std::ldexp(1.0f, -128));
  EXPECT_GT(dequant(DType::kMXFP4, b, 32)[0], 0.0f);
}

TEST(DequantSmall, Nvfp4) {
  Bytes b(36, 0);
  // Sub-block scales (UE4M3): 0x38 = 1.0, 0x05 = subnormal 5 * 2^-9, 0x7F -> 0 (NaN code), 0x7E =
  // 448.
  const uint8_t scales[4] = {0x38, 0x05, 0x7F, 0x7E};
  const float scale_values[4] = {1.0f, 5.0f / 512.0f, 0.0f, 448.0f};
  for (int s = 0; s < 4; ++s) b[s] = scales[s];
  for (int k = 0; k < 32; ++k)
    b[4 + k] = static_cast<uint8_t>(((k + 3) & 15) | (((k * 5) & 15) << 4));
  const auto y = dequant(DType::kNVFP4, b, 64);
  // Sub-block s covers elements 16s..16s+15: bytes 8s..8s+7, low nibbles first, then high.
  EXPECT_EQ(y[0], 1.5f);  // code 3 * 1.0
  EXPECT_EQ(y[8], 0.0f);  // code 0
  EXPECT_EQ(y[9], 3.0f);  // byte 1 high nibble = (1*5)&15 = 5 -> code 5 = 3.0
  for (int s = 0; s < 4; ++s) {
    for (int j = 0; j < 8; ++j) {
      const int k = 8 * s + j;
      EXPECT_EQ(y[16 * s + j], kFp4[(k + 3) & 15] * scale_values[s]) << s << " " << j;
      EXPECT_EQ(y[16 * s + j + 8], kFp4[(k * 5) & 15] * scale_values[s]) << s << " " << j;
    }
  }
  // 0x00 is zero as well.
  b[0] = 0x00;
  EXPECT_EQ(dequant(DType::kNVFP4, b, 64)[0], 0.0f);
}

TEST(DequantSmall, FloatAndIntegerTypes) {
  const float f[3] = {1.5f, -0.0f, std::ldexp(1.0f, -140)};
  float out[3];
  dequantize_row(DType::kF32, f, out, 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(f32_bits(out[i]), f32_bits(f[i]));
  const double dv[2] = {0.1, -3.0};
  dequantize_row(DType::kF64, dv, out, 2);
  EXPECT_EQ(out[0], 0.1f);
  EXPECT_EQ(out[1], -3.0f);
  const int8_t i8[3] = {-128, 0, 127};
  dequantize_row(DType::kI8, i8, out, 3);
  EXPECT_EQ(out[0], -128.0f);
  EXPECT_EQ(out[2], 127.0f);
  const int16_t i16[2] = {-32768, 1234};
  dequantize_row(DType::kI16, i16, out, 2);
  EXPECT_EQ(out[0], -32768.0f);
  EXPECT_EQ(out[1], 1234.0f);
  const int32_t i32[2] = {-16777216, 7};
  dequantize_row(DType::kI32, i32, out, 2);
  EXPECT_EQ(out[0], -16777216.0f);
  const int64_t i64[2] = {int64_t{1} << 40, -5};
  dequantize_row(DType::kI64, i64, out, 2);
  EXPECT_EQ(out[0], std::ldexp(1.0f, 40));
  EXPECT_EQ(out[1], -5.0f);
  // Unaligned source rows are fine (GGUF gives no alignment promise for these).
  Bytes raw(9, 0);
  const int64_t v = -123456789;
  std::memcpy(raw.data() + 1, &v, 8);
  dequantize_row(DType::kI64, raw.data() + 1, out, 1);
  EXPECT_EQ(out[0], -123456789.0f);
}

TEST(BlockHelpers, E8m0) {
  EXPECT_EQ(e8m0_to_f32(0), std::ldexp(1.0f, -127));
  EXPECT_EQ(e8m0_to_f32(1), std::ldexp(1.0f, -126));
  EXPECT_EQ(e8m0_to_f32(127), 1.0f);
  EXPECT_EQ(e8m0_to_f32(254), std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isinf(e8m0_to_f32(255)));
  EXPECT_EQ(e8m0_to_f32_half(0), std::ldexp(1.0f, -128));
  EXPECT_EQ(e8m0_to_f32_half(1), std::ldexp(1.0f, -127));
  EXPECT_EQ(e8m0_to_f32_half(2), std::ldexp(1.0f, -126));
  EXPECT_EQ(e8m0_to_f32_half(128), 1.0f);
  EXPECT_EQ(e8m0_to_f32_half(255), std::ldexp(1.0f, 127));
  for (int e = 0; e < 255; ++e)
    EXPECT_EQ(e8m0_to_f32_half(static_cast<uint8_t>(e)), std::ldexp(1.0f, e - 128));
}

TEST(BlockHelpers, Ue4m3) {
  EXPECT_EQ(ue4m3_to_f32(0x00), 0.0f);
  EXPECT_EQ(ue4m3_to_f32(0x7F), 0.0f);
  EXPECT_EQ(ue4m3_to_f32(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(ue4m3_to_f32(0x07), std::ldexp(7.0f, -9));  // largest subnormal
  EXPECT_EQ(ue4m3_to_f32(0x08), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(ue4m3_to_f32(0x38), 1.0f);
  EXPECT_EQ(ue4m3_to_f32(0x3C), 1.5f);
  EXPECT_EQ(ue4m3_to_f32(0x7E), 448.0f);
  EXPECT_EQ(ue4m3_to_f32(0xB8), 1.0f);  // bit 7 ignored
  EXPECT_EQ(ue4m3_to_f32_half(0x38), 0.5f);
  EXPECT_EQ(ue4m3_to_f32_half(0x01), std::ldexp(1.0f, -10));
  // Monotone over the usable codes (the quantizer's binary search relies on it).
  for (int c = 1; c <= 0x7E; ++c)
    EXPECT_LT(ue4m3_to_f32(static_cast<uint8_t>(c - 1)), ue4m3_to_f32(static_cast<uint8_t>(c)));
}

TEST(Quants, RejectsBadLengthsAndTypes) {
  std::vector<float> f(512, 0.0f);
  std::vector<uint8_t> b(1024, 0);
  EXPECT_THROW(dequantize_row(DType::kQ4_0, b.data(), f.data(), 33), Error);
  EXPECT_THROW(dequantize_row(DType::kQ4_K, b.data(), f.data(), 128), Error);
  EXPECT_THROW(dequantize_row(DType::kNVFP4, b.data(), f.data(), 32), Error);
  EXPECT_THROW(dequantize_row(DType::kQ8_0, b.data(), f.data(), -32), Error);
  EXPECT_THROW(quantize_row(DType::kQ6_K, f.data(), b.data(), 100), Error);
  EXPECT_THROW(quantize_row(DType::kMXFP4, f.data(), b.data(), 16), Error);
  EXPECT_THROW(dequantize_row(DType::kIQ2_XXS, b.data(), f.data(), 100), Error);
  EXPECT_THROW(quantize_row(DType::kIQ2_XXS, f.data(), b.data(), 100), Error);
  EXPECT_THROW(quantize_row(DType::kIQ1_S, f.data(), b.data(), 100), Error);
  EXPECT_THROW(dequantize_row(static_cast<DType>(4), b.data(), f.data(), 32), Error);
  try {
    quantize_row(DType::kQ4_K, f.data(), b.data(), 100);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("100"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("q4_K"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(can_quantize(DType::kQ4_K));
  EXPECT_TRUE(can_quantize(DType::kNVFP4));
  EXPECT_TRUE(can_quantize(DType::kIQ2_XXS));
  EXPECT_TRUE(can_quantize(DType::kIQ4_XS));
  EXPECT_TRUE(can_quantize(DType::kTQ1_0));
  EXPECT_TRUE(can_quantize(DType::kIQ1_S));
  EXPECT_FALSE(can_quantize(static_cast<DType>(4)));
  // n = 0 is a valid empty row.
  dequantize_row(DType::kQ4_K, b.data(), f.data(), 0);
  quantize_row(DType::kQ4_K, f.data(), b.data(), 0);
}

}  // namespace
}  // namespace fulgur
