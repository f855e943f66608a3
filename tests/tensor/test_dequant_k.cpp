// Bit-exact dequantization of hand-built K-quant super-blocks. Each test places bytes at the
// offsets of archs-gguf.md §1.7, checks a few elements worked out by hand (covering both branches
// of the 6-bit scale packing, Q6_K's trailing d, Q3_K's scale words and high-bit mask), and then
// a whole random block against the reference text's traversal written out independently.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

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

// §1.7 Q4_K: 6-bit scale and min of sub-block j from the 12 bytes, exactly as the text says.
void doc_scale_min(int j, const uint8_t* s, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// §1.7 Q3_K: the three-word formula, all right-hand sides on the original a2.
void doc_q3_scales(const uint8_t* s, int* out) {
  const uint32_t a0 = test::get_u32(s), a1 = test::get_u32(s + 4), a2 = test::get_u32(s + 8);
  const uint32_t w[4] = {
      (a0 & 0x0F0F0F0Fu) | ((a2 & 0x03030303u) << 4),
      (a1 & 0x0F0F0F0Fu) | (((a2 >> 2) & 0x03030303u) << 4),
      ((a0 >> 4) & 0x0F0F0F0Fu) | (((a2 >> 4) & 0x03030303u) << 4),
      ((a1 >> 4) & 0x0F0F0F0Fu) | (((a2 >> 6) & 0x03030303u) << 4),
  };
  for (int k = 0; k < 16; ++k) out[k] = static_cast<int>((w[k / 4] >> (8 * (k % 4))) & 0xFF) - 32;
}

TEST(DequantK, Q2_K) {
  // Layout: scales[16] @0, qs[64] @16, d @80, dmin @82.
  Bytes b = test::random_bytes(84, 1);
  put_u16(b, 80, test::kF16Half);
  put_u16(b, 82, test::kF16Quarter);
  b[0] = 0x21;       // group 0: sc 1, min 2
  b[2] = 0x13;       // group 2: sc 3, min 1
  b[4] = 0x05;       // group 4: sc 5, min 0
  b[6] = 0xF7;       // group 6: sc 7, min 15
  b[16 + 0] = 0xE4;  // q byte 0 = 11 10 01 00: elements 0, 32, 64, 96 get q = 0, 1, 2, 3
  const auto y = dequant(DType::kQ2_K, b, 256);
  EXPECT_EQ(y[0], -0.5f);   // 0.5*1*0 - 0.25*2
  EXPECT_EQ(y[32], 1.25f);  // 0.5*3*1 - 0.25*1
  EXPECT_EQ(y[64], 5.0f);   // 0.5*5*2 - 0
  EXPECT_EQ(y[96], 6.75f);  // 0.5*7*3 - 0.25*15
  // The text's traversal, element by element.
  std::vector<float> want;
  const uint8_t* q = b.data() + 16;
  int is = 0;
  for (int half = 0; half < 2; ++half, q += 32) {
    for (int shift = 0; shift <= 6; shift += 2) {
      for (int part = 0; part < 2; ++part) {
        const uint8_t sc = b[is++];
        for (int l = 0; l < 16; ++l)
          want.push_back(0.5f * (sc & 0xF) * ((q[l + 16 * part] >> shift) & 3) - 0.25f * (sc >> 4));
      }
    }
  }
  ASSERT_EQ(want.size(), 256u);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], want[e]) << e;
}

TEST(DequantK, Q3_K) {
  // Layout: hmask[32] @0, qs[64] @32, scales[12] @96, d @108.
  Bytes b = test::random_bytes(110, 2);
  put_u16(b, 108, test::kF16Half);
  for (int k = 96; k < 108; ++k) b[k] = 0;
  b[96 + 0] = 0x05;   // scale 0 low nibble 5
  b[96 + 4] = 0x90;   // scale 12 low nibble 9 (high nibble of byte 4)
  b[96 + 8] = 0x42;   // scale 0 high bits 2 (bits 0-1), scale 12 high bits 1 (bits 6-7)
  b[32 + 0] = 0x03;   // element 0: q = 3
  b[32 + 32] = 0x20;  // element 192 (half 1, shift 4): q = 2
  b[0] = 0x40;  // hmask[0]: bit 0 clear (element 0 subtracts 4), bit 6 set (element 192 does not)
  int s[16];
  doc_q3_scales(b.data() + 96, s);
  EXPECT_EQ(s[0], 5);  // (5 | 2<<4) - 32
  EXPECT_EQ(s[4], -32);
  EXPECT_EQ(s[12], -7);  // (9 | 1<<4) - 32
  int8_t unpacked[16];
  unpack_q3_k_scales(b.data() + 96, unpacked);
  for (int k = 0; k < 16; ++k) EXPECT_EQ(unpacked[k], s[k]) << k;
  auto y = dequant(DType::kQ3_K, b, 256);
  EXPECT_EQ(y[0], -2.5f);    // 0.5 * 5 * (3 - 4)
  EXPECT_EQ(y[192], -7.0f);  // 0.5 * -7 * (2 - 0)

  // Whole random blocks (random scale bytes too), through the text's traversal.
  for (uint32_t seed = 10; seed < 14; ++seed) {
    b = test::random_bytes(110, seed);
    put_u16(b, 108, test::kF16Half);
    doc_q3_scales(b.data() + 96, s);
    y = dequant(DType::kQ3_K, b, 256);
    std::vector<float> want;
    const uint8_t* q = b.data() + 32;
    const uint8_t* hm = b.data();
    int is = 0;
    uint8_t m = 1;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift <= 6; shift += 2, m = static_cast<uint8_t>(m << 1)) {
        for (int part = 0; part < 2; ++part) {
          const float dl = 0.5f * static_cast<float>(s[is++]);
          for (int l = 16 * part; l < 16 * part + 16; ++l)
            want.push_back(dl * static_cast<float>(((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4)));
        }
      }
    }
    for (int e = 0; e < 256; ++e) ASSERT_EQ(y[e], want[e]) << "seed " << seed << " e " << e;
  }
}

// Shared by Q4_K and Q5_K: the sub-block (sc, m) checks by hand, both packing branches.
void set_k4_scales(Bytes& b, size_t off) {
  for (int k = 0; k < 12; ++k) b[off + k] = 0;
  b[off + 0] = 0xC5;  // sc0 = 5; top bits 3 -> bits 4-5 of sc4
  b[off + 4] = 0x47;  // m0 = 7; top bits 1 -> bits 4-5 of m4
  b[off + 8] = 0x2A;  // sc4 low = 0xA, m4 low = 2
  b[off + 1] = 0x03;  // sc1 = 3
  b[off + 5] = 0x01;  // m1 = 1
}

TEST(DequantK, ScaleMinK4) {
  Bytes b(12, 0);
  set_k4_scales(b, 0);
  uint8_t sc, m;
  get_scale_min_k4(0, b.data(), &sc, &m);
  EXPECT_EQ(sc, 5);
  EXPECT_EQ(m, 7);
  get_scale_min_k4(4, b.data(), &sc, &m);
  EXPECT_EQ(sc, 58);  // 0xA | 3<<4
  EXPECT_EQ(m, 18);   // 2 | 1<<4
  // Random bytes: the helper agrees with the text, and pack inverts it.
  for (uint32_t seed = 0; seed < 20; ++seed) {
    const Bytes r = test::random_bytes(12, seed);
    uint8_t scs[8], ms[8];
    for (int j = 0; j < 8; ++j) {
      int dsc, dm;
      doc_scale_min(j, r.data(), &dsc, &dm);
      get_scale_min_k4(j, r.data(), &scs[j], &ms[j]);
      EXPECT_EQ(scs[j], dsc);
      EXPECT_EQ(ms[j], dm);
    }
    uint8_t packed[12];
    pack_scale_min_k4(scs, ms, packed);
    for (int j = 0; j < 8; ++j) {
      get_scale_min_k4(j, packed, &sc, &m);
      EXPECT_EQ(sc, scs[j]);
      EXPECT_EQ(m, ms[j]);
    }
    int8_t s3[16];
    for (int k = 0; k < 16; ++k) s3[k] = static_cast<int8_t>(static_cast<int>(r[k % 12] % 64) - 32);
    pack_q3_k_scales(s3, packed);
    int back[16];
    doc_q3_scales(packed, back);
    for (int k = 0; k < 16; ++k) EXPECT_EQ(back[k], s3[k]);
  }
}

TEST(DequantK, Q4_K) {
  // Layout: d @0, dmin @2, scales[12] @4, qs[128] @16.
  Bytes b = test::random_bytes(144, 3);
  put_u16(b, 0, test::kF16Half);
  put_u16(b, 2, test::kF16Quarter);
  set_k4_scales(b, 4);
  b[16 + 0] = 0x3C;   // element 0: q = 12 (sub-block 0); element 32: q = 3 (sub-block 1)
  b[16 + 64] = 0x0F;  // element 128: q = 15 (sub-block 4, low nibble of chunk 2)
  auto y = dequant(DType::kQ4_K, b, 256);
  EXPECT_EQ(y[0], 28.25f);    // 0.5*5*12 - 0.25*7
  EXPECT_EQ(y[32], 4.25f);    // 0.5*3*3 - 0.25*1
  EXPECT_EQ(y[128], 430.5f);  // 0.5*58*15 - 0.25*18
  for (uint32_t seed = 20; seed < 24; ++seed) {
    b = test::random_bytes(144, seed);
    put_u16(b, 0, test::kF16Half);
    put_u16(b, 2, test::kF16Quarter);
    y = dequant(DType::kQ4_K, b, 256);
    for (int c = 0; c < 4; ++c) {
      int sc0, m0, sc1, m1;
      doc_scale_min(2 * c, b.data() + 4, &sc0, &m0);
      doc_scale_min(2 * c + 1, b.data() + 4, &sc1, &m1);
      for (int l = 0; l < 32; ++l) {
        const uint8_t q = b[16 + 32 * c + l];
        ASSERT_EQ(y[64 * c + l], 0.5f * sc0 * (q & 0xF) - 0.25f * m0);
        ASSERT_EQ(y[64 * c + 32 + l], 0.5f * sc1 * (q >> 4) - 0.25f * m1);
      }
    }
  }
}

TEST(DequantK, Q5_K) {
  // Layout: d @0, dmin @2, scales[12] @4, qh[32] @16, qs[128] @48.
  Bytes b = test::random_bytes(176, 4);
  put_u16(b, 0, test::kF16Half);
  put_u16(b, 2, test::kF16Quarter);
  set_k4_scales(b, 4);
  b[16 + 0] = 0x11;   // qh[0]: bit 0 (element 0) and bit 4 (element 128, chunk 2 low) set
  b[48 + 0] = 0x3C;   // element 0: 12 + 16; element 32: 3 (qh bit 1 clear)
  b[48 + 64] = 0x0F;  // element 128: 15 + 16
  auto y = dequant(DType::kQ5_K, b, 256);
  EXPECT_EQ(y[0], 68.25f);    // 0.5*5*28 - 0.25*7
  EXPECT_EQ(y[32], 4.25f);    // 0.5*3*3 - 0.25*1
  EXPECT_EQ(y[128], 894.5f);  // 0.5*58*31 - 0.25*18
  for (uint32_t seed = 30; seed < 34; ++seed) {
    b = test::random_bytes(176, seed);
    put_u16(b, 0, test::kF16Half);
    put_u16(b, 2, test::kF16Quarter);
    y = dequant(DType::kQ5_K, b, 256);
    for (int c = 0; c < 4; ++c) {
      int sc0, m0, sc1, m1;
      doc_scale_min(2 * c, b.data() + 4, &sc0, &m0);
      doc_scale_min(2 * c + 1, b.data() + 4, &sc1, &m1);
      for (int l = 0; l < 32; ++l) {
        const uint8_t q = b[48 + 32 * c + l], h = b[16 + l];
        const int lo = (q & 0xF) + (((h >> (2 * c)) & 1) ? 16 : 0);
        const int hi = (q >> 4) + (((h >> (2 * c + 1)) & 1) ? 16 : 0);
        ASSERT_EQ(y[64 * c + l], 0.5f * sc0 * lo - 0.25f * m0);
        ASSERT_EQ(y[64 * c + 32 + l], 0.5f * sc1 * hi - 0.25f * m1);
      }
    }
  }
}

TEST(DequantK, Q6_K) {
  // Layout: ql[128] @0, qh[64] @128, scales[16] (int8) @192, d @208 (last).
  Bytes b = test::random_bytes(210, 5);
  put_u16(b, 208, test::kF16Half);
  b[0] = 0x21;        // element 0 low 4 bits 1, element 64 low 4 bits 2
  b[32] = 0x07;       // element 32 low 4 bits 7, element 96 low 4 bits 0
  b[128] = 0xE4;      // qh[0] = 11 10 01 00: elements 0, 32, 64, 96 get high bits 0, 1, 2, 3
  b[192 + 0] = 0xFD;  // scale 0 = -3
  b[192 + 2] = 4;     // scale 2
  b[192 + 4] = 5;     // scale 4
  b[192 + 6] = 1;     // scale 6
  auto y = dequant(DType::kQ6_K, b, 256);
  EXPECT_EQ(y[0], 46.5f);    // 0.5 * -3 * (1 - 32)
  EXPECT_EQ(y[32], -18.0f);  // 0.5 * 4 * ((7 | 16) - 32)
  EXPECT_EQ(y[64], 5.0f);    // 0.5 * 5 * ((2 | 32) - 32)
  EXPECT_EQ(y[96], 8.0f);    // 0.5 * 1 * ((0 | 48) - 32)
  for (uint32_t seed = 40; seed < 44; ++seed) {
    b = test::random_bytes(210, seed);
    put_u16(b, 208, test::kF16Half);
    y = dequant(DType::kQ6_K, b, 256);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = b.data() + 64 * half;
      const uint8_t* qh = b.data() + 128 + 32 * half;
      const auto* sc = reinterpret_cast<const int8_t*>(b.data() + 192 + 8 * half);
      float* out = y.data() + 128 * half;
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        ASSERT_EQ(out[l], 0.5f * sc[is + 0] * (((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32));
        ASSERT_EQ(out[l + 32],
                  0.5f * sc[is + 2] * (((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32));
        ASSERT_EQ(out[l + 64],
                  0.5f * sc[is + 4] * (((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32));
        ASSERT_EQ(out[l + 96],
                  0.5f * sc[is + 6] * (((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32));
      }
    }
  }
}

TEST(DequantK, Q8_K) {
  // Layout: float d @0, int8 qs[256] @4, int16 bsums[16] @260.
  Bytes b = test::random_bytes(292, 6);
  const float d = 0.25f;
  std::memcpy(b.data(), &d, 4);
  const auto y = dequant(DType::kQ8_K, b, 256);
  for (int j = 0; j < 256; ++j) EXPECT_EQ(y[j], 0.25f * static_cast<int8_t>(b[4 + j]));
}

TEST(DequantK, Iq4Xs) {
  // Layout: d @0, scales_h (u16) @2, scales_l[4] @4, qs[128] @8.
  const int table[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  Bytes b = test::random_bytes(136, 7);
  put_u16(b, 0, test::kF16Half);
  put_u16(b, 2, 0x8002);  // scales_h: sub-block 0 high bits 2, sub-block 7 high bits 2
  b[4] = 0x35;            // sub-block 0 low 5, sub-block 1 low 3 (high bits 0)
  b[7] = 0xF0;            // sub-block 6 low 0, sub-block 7 low 15
  b[8 + 0] = 0xF0;        // element 0: code 0, element 16: code 15
  b[8 + 16] = 0x08;       // element 32 (sub-block 1): code 8
  b[8 + 112] = 0x01;      // element 224 (sub-block 7): code 1
  auto y = dequant(DType::kIQ4_XS, b, 256);
  EXPECT_EQ(y[0], 0.5f * 5 * -127);  // ls = 5 | 2<<4 = 37 -> 5
  EXPECT_EQ(y[16], 0.5f * 5 * 113);
  EXPECT_EQ(y[32], 0.5f * -29 * 1);     // ls = 3 -> -29
  EXPECT_EQ(y[224], 0.5f * 15 * -104);  // ls = 15 | 2<<4 = 47 -> 15
  for (uint32_t seed = 50; seed < 54; ++seed) {
    b = test::random_bytes(136, seed);
    put_u16(b, 0, test::kF16Half);
    y = dequant(DType::kIQ4_XS, b, 256);
    const int sh = b[2] | (b[3] << 8);
    for (int ib = 0; ib < 8; ++ib) {
      const int ls = ((b[4 + ib / 2] >> (4 * (ib % 2))) & 0xF) | (((sh >> (2 * ib)) & 3) << 4);
      for (int j = 0; j < 16; ++j) {
        const uint8_t q = b[8 + 16 * ib + j];
        ASSERT_EQ(y[32 * ib + j], 0.5f * (ls - 32) * table[q & 0xF]);
        ASSERT_EQ(y[32 * ib + j + 16], 0.5f * (ls - 32) * table[q >> 4]);
      }
    }
  }
}

}  // namespace
}  // namespace fulgur
