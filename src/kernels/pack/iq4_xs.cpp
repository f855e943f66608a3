// IQ4_XS in 16-row tiles (WeightLayout::kRows16; why tiles: kernels/packed.h).
//
// A tile holds rows 16t .. 16t + 15 and is a sequence of 2176-byte units (34 cache lines), one
// per 256-column super-block, so decode streams each tile front to back. Unit of super-block b
// (lane i = the tile's row i), the file's bytes of the 16 rows regrouped:
//   [   0,   32)  d[16]         f16, the super-block scale
//   [  32,   64)  scales_h[16]  u16, the high 2 bits of the 8 sub-block scales
//   [  64,  128)  scales_l[16]  4 bytes, the low 4 bits of the 8 sub-block scales (two a byte)
//   [ 128, 2176)  per sub-block j = 0..7 (32 columns), 256 bytes of codes laid out as an IQ4_NL
//                 block's in its tile (kernels/pack/q4_0_iq4_nl.cpp): group k (64 bytes),
//                 lane i = qs[16j + 4k .. 16j + 4k + 3] of row i (low nibbles columns 4k ..,
//                 high nibbles 16 + 4k ..).
// A unit holds exactly the file's 16 * 136 bytes: decode reads as many bytes as the row-major
// kernel. The kernels rebuild the 6-bit scales of 8 rows at once (d * (ls - 32), as blocks.h
// decodes them). Rows past the matrix are all zero (d = 0, codes 0).
#include <cstring>

#include "kernels/pack/isa_entries.h"
#include "kernels/packed.h"
#include "kernels/quant_act.h"
#include "tensor/blocks.h"

namespace fulgur::kernels {

namespace {

constexpr int64_t kUnitBytes = 2176, kCodeOff = 128;
constexpr int64_t kBlockBytes = sizeof(BlockIQ4_XS);
static_assert(kUnitBytes == kPackRows * kBlockBytes);

size_t tile_bytes_iq4_xs(int64_t cols) { return static_cast<size_t>(cols / kQK_K * kUnitBytes); }

void pack_tile_iq4_xs(const WeightView& src, int64_t tile, uint8_t* dst) {
  const int64_t nsb = src.cols / kQK_K;
  std::memset(dst, 0, tile_bytes_iq4_xs(src.cols));
  for (int64_t i = 0; i < kPackRows; ++i) {
    const int64_t row = tile * kPackRows + i;
    if (row >= src.rows) break;
    const uint8_t* r = static_cast<const uint8_t*>(src.data) + row * static_cast<int64_t>(src.row_stride);
    for (int64_t b = 0; b < nsb; ++b) {
      // Byte offsets of BlockIQ4_XS's fields (rows need not be 2-byte aligned).
      const uint8_t* blk = r + b * kBlockBytes;
      uint8_t* u = dst + b * kUnitBytes;
      std::memcpy(u + 2 * i, blk, 2);           // d
      std::memcpy(u + 32 + 2 * i, blk + 2, 2);  // scales_h
      std::memcpy(u + 64 + 4 * i, blk + 4, 4);  // scales_l
      for (int64_t j = 0; j < 8; ++j)
        for (int64_t k = 0; k < 4; ++k) std::memcpy(u + kCodeOff + 256 * j + 64 * k + 4 * i, blk + 8 + 16 * j + 4 * k, 4);
    }
  }
}

}  // namespace

const PackFormat* pack_format_iq4_xs() {
  static const PackFormat f{tile_bytes_iq4_xs, pack_tile_iq4_xs, avx2::pack_tile_iq4_xs, avx512::packed_rect_iq4_xs,
                            avx2::packed_rect_iq4_xs};
  return &f;
}

}  // namespace fulgur::kernels
