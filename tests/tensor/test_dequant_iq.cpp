// The codebook types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M) and the ternary
// TQ1_0 / TQ2_0: blocks built byte by byte at the offsets of ggml-common.h, expectations worked
// out by hand from the format's text; the codebooks' documented properties. Bit-exactness
// against ggml's own decoders on random blocks is tests/llama/test_llama_dequant.cpp's.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <vector>

#include "core/error.h"
#include "tensor/dtype.h"
#include "tensor/iq_grids.h"
#include "tensor/quants.h"
#include "tensor/tensor_test_util.h"

namespace fulgur {
namespace {

using test::Bytes;
using test::put_u16;
using test::put_u32;

std::vector<float> dequant(DType type, const Bytes& bytes, int64_t n) {
  EXPECT_EQ(bytes.size(), row_bytes(type, n));
  std::vector<float> out(static_cast<size_t>(n), std::numeric_limits<float>::quiet_NaN());
  dequantize_row(type, bytes.data(), out.data(), n);
  return out;
}

// Every byte of the n-byte-wide entries of `grid` (size entries) lies in `allowed`, and no two
// entries are equal.
template <class T>
void check_grid(const T* grid, int size, const std::set<int>& allowed, bool is_signed, const char* name) {
  std::set<T> seen;
  for (int i = 0; i < size; ++i) {
    EXPECT_TRUE(seen.insert(grid[i]).second) << name << " entry " << i << " repeats";
    for (size_t j = 0; j < sizeof(T); ++j) {
      const auto byte = static_cast<uint8_t>(grid[i] >> (8 * j));
      const int v = is_signed ? static_cast<int8_t>(byte) : byte;
      EXPECT_TRUE(allowed.count(v)) << name << " entry " << i << " byte " << j << " = " << v;
    }
  }
}

TEST(IqGrids, HoldTheDocumentedValues) {
  for (int i = 0; i < 128; ++i) {  // the 7 bits, plus the eighth that makes the parity even
    EXPECT_EQ(kIq2SignBytes[i] & 127, i);
    EXPECT_EQ(std::popcount(static_cast<unsigned>(kIq2SignBytes[i])) % 2, 0) << i;
  }
  check_grid(kIq2xxsGrid, 256, {8, 25, 43}, false, "iq2xxs");
  check_grid(kIq2xsGrid, 512, {8, 25, 43}, false, "iq2xs");
  check_grid(kIq2sGrid, 1024, {8, 25, 43}, false, "iq2s");
  check_grid(kIq3xxsGrid, 256, {4, 12, 20, 28, 36, 44, 52, 62}, false, "iq3xxs");
  check_grid(kIq3sGrid, 512, {1, 3, 5, 7, 9, 11, 13, 15}, false, "iq3s");
  check_grid(kIq1sGrid, 2048, {-1, 0, 1}, true, "iq1s");
  // Entries the hand-built blocks below rely on.
  EXPECT_EQ(kIq2xxsGrid[0], 0x0808080808080808u);
  EXPECT_EQ(kIq1sGrid[0], 0xFFFFFFFFFFFFFFFFu);
  EXPECT_EQ(kIq3xxsGrid[0], 0x04040404u);
}

TEST(DequantIq, Iq2XxsHandBuilt) {
  // d @0; sub-block ib: 4 grid index bytes @2+8ib, then an LE u32 @6+8ib of 4 x 7-bit sign
  // indices and the scale in bits 28-31. All-zero bytes: grid 0 (all 8), scale 0, no signs.
  Bytes b(66, 0);
  put_u16(b, 0, test::kF16One);
  put_u32(b, 6, (3u << 28) | 1u | (2u << 7));  // scale 3; group 0 sign index 1, group 1 index 2
  const auto y = dequant(DType::kIQ2_XXS, b, 256);
  // db = (0.5 + 3) * 0.25 = 0.875; sign byte of index 1 is 0x81 (elements 0 and 7), of 2 0x82.
  EXPECT_EQ(y[0], -7.0f);
  EXPECT_EQ(y[1], 7.0f);
  EXPECT_EQ(y[7], -7.0f);
  EXPECT_EQ(y[8], 7.0f);
  EXPECT_EQ(y[9], -7.0f);
  EXPECT_EQ(y[15], -7.0f);
  EXPECT_EQ(y[31], 7.0f);
  EXPECT_EQ(y[32], 1.0f);  // sub-block 1: db = 0.5 * 0.25 * 8 = 1
  EXPECT_EQ(y[255], 1.0f);
}

TEST(DequantIq, Iq3XxsHandBuilt) {
  // d @0; 64 index bytes @2 (8 per sub-block, 4 elements each); sub-block u32s @66.
  Bytes b(98, 0);
  put_u16(b, 0, test::kF16Half);
  put_u32(b, 66 + 4 * 7, (1u << 28) | 127u);  // sub-block 7: scale 1, group 0 sign index 127
  const auto y = dequant(DType::kIQ3_XXS, b, 256);
  EXPECT_EQ(y[0], 0.5f * 0.5f * 0.5f * 4);  // db = d * (0.5 + 0) * 0.5, grid value 4
  // Sub-block 7: db = 0.5 * 1.5 * 0.5 = 0.375; sign byte of 127 is 0xFF: 8 negatives.
  for (int j = 0; j < 8; ++j) EXPECT_EQ(y[224 + j], -0.375f * 4) << j;
  EXPECT_EQ(y[232], 0.375f * 4);
}

TEST(DequantIq, Iq1SHandBuilt) {
  // d @0, 32 index bytes @2, 8 LE u16 qh @34: index bits 8-10 of group l at 3l, scale at 12-14,
  // bit 15 the sign of the shift. x = d * (2 * scale + 1) * (grid +- 0.125).
  Bytes b(50, 0);
  put_u16(b, 0, test::kF16Two);
  put_u16(b, 34, static_cast<uint16_t>((2u << 12) | 0x8000u));  // sub-block 0: scale 2, negative
  const auto y = dequant(DType::kIQ1_S, b, 256);
  EXPECT_EQ(y[0], 2.0f * 5 * (-1.0f - 0.125f));  // grid 0 is all -1
  EXPECT_EQ(y[31], 2.0f * 5 * (-1.0f - 0.125f));
  EXPECT_EQ(y[32], 2.0f * 1 * (-1.0f + 0.125f));  // sub-block 1: scale 0, positive shift
}

TEST(DequantIq, Tq2_0HandBuilt) {
  // qs[64] @0, d @64; element 128h + 32l + m is bits 2l..2l+1 of qs[32h + m]; x = d * (q - 1).
  Bytes b(66, 0);
  for (int i = 0; i < 64; ++i) b[static_cast<size_t>(i)] = static_cast<uint8_t>(0b10010010 + (i % 2));  // q: 2|3, 0, 1, 2
  put_u16(b, 64, test::kF16Half);
  const auto y = dequant(DType::kTQ2_0, b, 256);
  for (int h = 0; h < 2; ++h)
    for (int m = 0; m < 32; ++m) {
      EXPECT_EQ(y[128 * h + m], 0.5f * (m % 2 ? 2 : 1));
      EXPECT_EQ(y[128 * h + 32 + m], -0.5f);
      EXPECT_EQ(y[128 * h + 64 + m], 0.0f);
      EXPECT_EQ(y[128 * h + 96 + m], 0.5f);
    }
}

// The TQ1_0 byte of trits t (most significant first, k of them, k <= 5): ceil(t * 256 / 243),
// t the base-3 number of the trits followed by 5 - k zeros.
uint8_t tq1_byte(const std::vector<int>& t) {
  int q = 0;
  for (int n = 0; n < 5; ++n) q = 3 * q + (n < static_cast<int>(t.size()) ? t[static_cast<size_t>(n)] : 0);
  return static_cast<uint8_t>((q * 256 + 242) / 243);
}

TEST(DequantIq, Tq1_0HandBuilt) {
  // qs[48] @0, qh[4] @48, d @52. Byte m < 32: elements 32n + m; byte 32 + m: 160 + 16n + m;
  // qh[j]: 240 + 4n + j; trit n = n-th most significant.
  Bytes b(54, 0);
  std::vector<int> want(256);
  for (int m = 0; m < 48; ++m) {
    std::vector<int> t(5);
    for (int n = 0; n < 5; ++n) {
      t[static_cast<size_t>(n)] = (m + 2 * n) % 3;
      want[static_cast<size_t>(m < 32 ? 32 * n + m : 160 + 16 * n + (m - 32))] = t[static_cast<size_t>(n)];
    }
    b[static_cast<size_t>(m)] = tq1_byte(t);
  }
  for (int j = 0; j < 4; ++j) {
    std::vector<int> t(4);
    for (int n = 0; n < 4; ++n) {
      t[static_cast<size_t>(n)] = (j + n + 1) % 3;
      want[static_cast<size_t>(240 + 4 * n + j)] = t[static_cast<size_t>(n)];
    }
    b[static_cast<size_t>(48 + j)] = tq1_byte(t);
  }
  put_u16(b, 52, test::kF16MinusTwo);
  const auto y = dequant(DType::kTQ1_0, b, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[static_cast<size_t>(e)], -2.0f * (want[static_cast<size_t>(e)] - 1)) << e;
}

TEST(QuantTernary, ReproducesTernaryRows) {
  // A BitNet-style row: every value in {-a, 0, a}; a = 0.75 is exact in f16.
  std::vector<float> x(512);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.75f * static_cast<float>(static_cast<int>((i * 7 + i / 5) % 3) - 1);
  for (DType type : {DType::kTQ1_0, DType::kTQ2_0}) {
    ASSERT_TRUE(can_quantize(type));
    std::vector<uint8_t> q(row_bytes(type, 512));
    quantize_row(type, x.data(), q.data(), 512);
    std::vector<float> y(512);
    dequantize_row(type, q.data(), y.data(), 512);
    EXPECT_EQ(y, x) << dtype_name(type);
  }
}

TEST(QuantTernary, RoundsToTheNearestTrit) {
  const std::vector<float> x = test::gaussian(1024, 3);
  for (DType type : {DType::kTQ1_0, DType::kTQ2_0}) {
    std::vector<uint8_t> q(row_bytes(type, 1024));
    quantize_row(type, x.data(), q.data(), 1024);
    std::vector<float> y(1024);
    dequantize_row(type, q.data(), y.data(), 1024);
    for (int b = 0; b < 4; ++b) {
      float amax = 0;
      for (int j = 0; j < 256; ++j) amax = std::fmax(amax, std::fabs(x[static_cast<size_t>(256 * b + j)]));
      for (int j = 0; j < 256; ++j) {
        const size_t i = static_cast<size_t>(256 * b + j);
        const float t = std::fabs(x[i]) < 0.5f * amax ? 0.0f : std::copysign(1.0f, x[i]);
        EXPECT_NEAR(y[i], t * amax, 1e-3f * amax) << dtype_name(type) << " " << i;
      }
    }
  }
}

// The codebook encoders (tensor/quants_iq_encode.cpp). Their error against ggml's own encoders
// is tests/llama/test_llama_dequant.cpp's; here what holds without an oracle.
const DType kEncoded[] = {DType::kIQ3_XXS, DType::kIQ3_S, DType::kIQ2_XXS, DType::kIQ2_XS,
                          DType::kIQ2_S,   DType::kIQ1_S, DType::kIQ1_M};

std::vector<float> round_trip(DType type, const std::vector<float>& x, const float* imp = nullptr) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> q(row_bytes(type, n));
  quantize_row_weighted(type, x.data(), q.data(), n, imp);
  std::vector<float> y(static_cast<size_t>(n));
  dequantize_row(type, q.data(), y.data(), n);
  return y;
}

double rel_rms(const std::vector<float>& x, const std::vector<float>& y) {
  double e = 0, s = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    e += (x[i] - y[i]) * (x[i] - y[i]);
    s += x[i] * x[i];
  }
  return std::sqrt(e / s);
}

TEST(QuantIq, EncodersRoundTripGaussianRowsOfOddLengths) {
  // Relative RMS error bounds: a little above what each type gives on Gaussian rows (3.06 / 3.44,
  // then 2.06 to 2.56 bits per weight; without an importance the search weights by x^2, as
  // ggml's, which favours the large values over the plain error measured here); a broken index,
  // sign or scale packing costs far more (measured 0.22, 0.18, 0.41, 0.39, 0.34 at most; IQ1_S and
  // IQ1_M, 1.56 and 1.75 bits per weight, 0.59 and 0.57).
  const double bound[] = {0.25, 0.21, 0.45, 0.42, 0.38, 0.62, 0.60};
  int t = 0;
  for (DType type : kEncoded) {
    ASSERT_TRUE(can_quantize(type)) << dtype_name(type);
    EXPECT_TRUE(uses_importance(type)) << dtype_name(type);
    for (int64_t n : {256, 768, 1280}) {
      const std::vector<float> x = test::gaussian(static_cast<size_t>(n), static_cast<uint32_t>(n + t), 0.0f, 0.02f);
      const std::vector<float> y = round_trip(type, x);
      const double e = rel_rms(x, y);
      std::printf("[%s n=%lld] relative rms error %.4f\n", std::string(dtype_name(type)).c_str(),
                  static_cast<long long>(n), e);
      EXPECT_LT(e, bound[t]) << dtype_name(type) << " n=" << n;
    }
    ++t;
  }
}

TEST(QuantIq, EncodersKeepSignsUpToOneFlipPerEight) {
  // IQ3_S and IQ2_S store every sign; the others an even count of negatives per 8, so an odd
  // count costs exactly one element its sign (or a zero in its place).
  const std::vector<float> x = test::gaussian(512, 11);
  for (DType type : kEncoded) {
    if (type == DType::kIQ1_S || type == DType::kIQ1_M) continue;  // no signs of their own
    const bool all_signs = type == DType::kIQ3_S || type == DType::kIQ2_S;
    const std::vector<float> y = round_trip(type, x);
    for (int g = 0; g < 64; ++g) {
      int wrong = 0, negatives = 0;
      for (int i = 8 * g; i < 8 * g + 8; ++i) {
        negatives += x[static_cast<size_t>(i)] < 0.0f;
        wrong += y[static_cast<size_t>(i)] != 0.0f && (y[static_cast<size_t>(i)] < 0.0f) != (x[static_cast<size_t>(i)] < 0.0f);
      }
      EXPECT_LE(wrong, all_signs ? 0 : negatives % 2) << dtype_name(type) << " group " << g;
    }
  }
}

TEST(QuantIq, EncodersReproduceTheirOwnDecodedRowsClosely) {
  // A row that is a decoded block of the type (codebook points, signs, scales) re-encodes to much
  // less error than a Gaussian row does.
  const std::vector<float> g = test::gaussian(768, 5);
  for (DType type : kEncoded) {
    const std::vector<float> y = round_trip(type, g);
    const std::vector<float> z = round_trip(type, y);
    EXPECT_LT(rel_rms(y, z), 0.02) << dtype_name(type);
  }
}

TEST(QuantIq, EncodersHandleZeroTinyAndNonFiniteBlocks) {
  for (DType type : kEncoded) {
    std::vector<float> x(768, 0.0f);
    EXPECT_EQ(round_trip(type, x), x) << dtype_name(type) << ": zeros stay zeros";
    // Block 1 tiny, block 2 with a NaN and an infinity: block 0 is encoded as on its own (blocks
    // are independent) and nothing crashes.
    const std::vector<float> g = test::gaussian(256, 9);
    std::copy(g.begin(), g.end(), x.begin());
    for (int j = 256; j < 512; ++j) x[static_cast<size_t>(j)] = 1e-30f * g[static_cast<size_t>(j - 256)];
    x[600] = std::numeric_limits<float>::quiet_NaN();
    x[601] = std::numeric_limits<float>::infinity();
    const std::vector<float> y = round_trip(type, x);
    const std::vector<float> y0(y.begin(), y.begin() + 256);
    EXPECT_EQ(y0, round_trip(type, g)) << dtype_name(type);
    EXPECT_LT(rel_rms(g, y0), 0.65) << dtype_name(type);
    for (int j = 256; j < 512; ++j) EXPECT_TRUE(std::isfinite(y[static_cast<size_t>(j)])) << dtype_name(type);
  }
}

TEST(QuantIq, EncodersRejectRowsOfPartialBlocks) {
  std::vector<float> x(300, 1.0f);
  std::vector<uint8_t> q(1024);
  for (DType type : kEncoded) EXPECT_THROW(quantize_row(type, x.data(), q.data(), 300), Error) << dtype_name(type);
}

}  // namespace
}  // namespace fulgur
