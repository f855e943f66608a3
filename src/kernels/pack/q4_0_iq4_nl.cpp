// Q4_0 and IQ4_NL in 16-row tiles (WeightLayout::kRows16; why tiles: kernels/packed.h). The two
// types have the same block (an f16 scale, then 16 bytes of 4-bit codes for 32 columns: low
// nibbles columns 0..15, high nibbles 16..31) and differ only in what a code means (Q4_0:
// nibble - 8, IQ4_NL: kIq4nlValues[nibble]), so they share this layout and packer; the kernel
// expands the codes through the type's 16-entry table.
//
// Tile layout, for a matrix of nb = cols / 32 blocks (rows 16t .. 16t + 15 of the matrix), the
// shape of Q8_0's (kernels/pack/q8_0.cpp) with half the code bytes:
//  - Blocks go in pairs (2p, 2p + 1), one pair per 576 bytes = 9 cache lines:
//      [  0, 256)  codes of block 2p
//      [256, 512)  codes of block 2p + 1
//      [512, 544)  f16 scales of block 2p, row i at 2i
//      [544, 576)  f16 scales of block 2p + 1
//    An odd last block stands alone: its 256 bytes of codes, then its 32 bytes of scales.
//  - The codes of one block are 4 groups of 64 bytes: group k, lane i (bytes 4i .. 4i + 3) is
//    qs[4k .. 4k + 3] of row i as the file has them: low nibbles columns 4k .. 4k + 3, high
//    nibbles columns 16 + 4k .. 16 + 4k + 3. One 32-byte load of a group thus gives 8 rows'
//    operands for two 4-column steps (an AND, or a shift and an AND, then the table).
//  - The tile is padded to a multiple of 64 bytes, so every tile and every pair starts on a
//    cache line. Rows past the matrix's last row have codes 0 and scale 0.
// A tile holds exactly the file's 16 * 18 bytes per block, plus that padding (none for an even
// nb): decode reads as many bytes as the row-major kernel does.
#include <cstring>

#include "kernels/pack/pair_tiles.h"
#include "kernels/pack/isa_entries.h"
#include "kernels/packed.h"
#include "kernels/quant_act.h"
#include "tensor/blocks.h"

namespace fulgur::kernels {

namespace {

constexpr int64_t kCodeBytes = 16 * kQK / 2;  // one block of 16 rows
constexpr int64_t kBlockBytes = sizeof(BlockQ4_0);
static_assert(sizeof(BlockIQ4_NL) == sizeof(BlockQ4_0));

size_t tile_bytes_b4(int64_t cols) { return pair_tile_bytes(cols / kQK, kCodeBytes); }

void pack_tile_b4(const WeightView& src, int64_t tile, uint8_t* dst) {
  const int64_t nb = src.cols / kQK;
  pair_tile_pad(dst, nb, kCodeBytes);
  for (int64_t b = 0; b < nb; ++b) {
    const auto [codes, scales] = pair_slot(dst, b, nb, kCodeBytes);
    for (int64_t i = 0; i < kPackRows; ++i) {
      const int64_t row = tile * kPackRows + i;
      uint8_t blk[kBlockBytes] = {};  // a row past the matrix: scale 0, codes 0
      if (row < src.rows)
        std::memcpy(blk, static_cast<const uint8_t*>(src.data) + row * static_cast<int64_t>(src.row_stride) + b * kBlockBytes,
                    kBlockBytes);
      std::memcpy(scales + 2 * i, blk, 2);
      for (int64_t k = 0; k < 4; ++k) std::memcpy(codes + 64 * k + 4 * i, blk + 2 + 4 * k, 4);
    }
  }
}

}  // namespace

const PackFormat* pack_format_q4_0() {
  static const PackFormat f{tile_bytes_b4, pack_tile_b4, avx2::pack_tile_b4, avx512::packed_rect_q4_0,
                            avx2::packed_rect_q4_0};
  return &f;
}

const PackFormat* pack_format_iq4_nl() {
  static const PackFormat f{tile_bytes_b4, pack_tile_b4, avx2::pack_tile_b4, avx512::packed_rect_iq4_nl,
                            avx2::packed_rect_iq4_nl};
  return &f;
}

}  // namespace fulgur::kernels
