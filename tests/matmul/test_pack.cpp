// The AVX2 packers against the plain ones (kernels/packed.h PackFormat): every byte of every
// tile, for odd shapes (a partial last tile, an odd count of blocks or super-blocks, one row),
// rows that are not aligned and a row stride wider than the row. The weights are random bytes:
// packing only moves bits, so any bytes are a valid test (and any scale or code misplaced shows).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/cpu.h"
#include "kernels/packed.h"
#include "tensor/dtype.h"

namespace fulgur::kernels {
namespace {

// A buffer at a 64-byte boundary, as tiles are (the AVX2 packers store with alignment).
class Aligned {
 public:
  Aligned(size_t n, uint8_t fill) : bytes_(n + 64, fill) {}
  uint8_t* data() { return bytes_.data() + (64 - reinterpret_cast<uintptr_t>(bytes_.data()) % 64); }
  uint8_t operator[](size_t i) { return data()[i]; }

 private:
  std::vector<uint8_t> bytes_;
};

TEST(PackTile, Avx2MatchesReferenceByteForByte) {
  if (!isa_supported(Isa::kAvx2)) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(7);
  for (DType type : {DType::kQ8_0, DType::kQ4_0, DType::kIQ4_NL, DType::kIQ4_XS, DType::kQ4_K, DType::kQ6_K}) {
    const PackFormat* f = pack_format(type);
    ASSERT_NE(f, nullptr);
    const int64_t block = dtype_info(type).block_size;
    for (int64_t rows : {1, 15, 16, 17, 40}) {
      for (int64_t blocks : {1, 2, 3, 6}) {
        const int64_t cols = blocks * block;
        const size_t stride = row_bytes(type, cols) + 7;  // wider, and odd: rows unaligned
        std::vector<uint8_t> w(stride * static_cast<size_t>(rows) + 1);
        for (uint8_t& b : w) b = static_cast<uint8_t>(rng());
        const WeightView src{.type = type, .data = w.data() + 1, .rows = rows, .cols = cols,
                             .row_stride = stride};
        const size_t bytes = f->tile_bytes(cols);
        for (int64_t t = 0; t < (rows + kPackRows - 1) / kPackRows; ++t) {
          // Different fillers: a byte either packer leaves unwritten shows as a mismatch.
          std::vector<uint8_t> want(bytes, 0xA5);
          Aligned got(bytes, 0x5A);
          f->pack_tile(src, t, want.data());
          f->pack_tile_avx2(src, t, got.data());
          size_t first = 0;
          while (first < bytes && want[first] == got[first]) ++first;
          EXPECT_EQ(first, bytes) << dtype_name(type) << " " << rows << "x" << cols << " tile "
                                  << t << ": first differing byte " << first << " of " << bytes;
        }
      }
    }
  }
}

}  // namespace
}  // namespace fulgur::kernels
