// Q8_0 in 16-row tiles (WeightLayout::kRows16; why tiles: kernels/packed.h).
//
// Tile layout, for a matrix of nb = cols / 32 blocks (rows 16t .. 16t + 15 of the matrix):
//  - Blocks go in pairs (2p, 2p + 1), one pair per 1088 bytes = 17 cache lines:
//      [  0,  512)  codes of block 2p
//      [512, 1024)  codes of block 2p + 1
//      [1024,1056)  f16 scales of block 2p, row i at 2i
//      [1056,1088)  f16 scales of block 2p + 1
//    An odd last block stands alone: its 512 bytes of codes, then its 32 bytes of scales.
//  - The codes of one block are 8 registers of 64 bytes: register j, lane i (bytes 4i .. 4i + 3)
//    holds columns 4j .. 4j + 3 of row i, as u8 = q + 128 (vpdpbusd multiplies u8 by s8 and the
//    activations are the signed side; the kernel removes the offset with the activation sums).
//  - The tile is padded to a multiple of 64 bytes, so every tile and every pair starts on a
//    cache line. Rows past the matrix's last row have codes 128 (q = 0) and scale 0.
// A tile holds exactly the file's 16 * 34 bytes per block, plus that padding (none for an even
// nb): decode reads as many bytes as the row-major kernel does.
#include <cstring>

#include "kernels/pack/pair_tiles.h"
#include "kernels/pack/isa_entries.h"
#include "kernels/packed.h"
#include "kernels/quant_act.h"
#include "tensor/blocks.h"

namespace fulgur::kernels {

namespace {

constexpr int64_t kCodeBytes = 16 * kQK;  // one block of 16 rows
constexpr int64_t kBlockBytes = sizeof(BlockQ8_0);

size_t tile_bytes_q8_0(int64_t cols) { return pair_tile_bytes(cols / kQK, kCodeBytes); }

void pack_tile_q8_0(const WeightView& src, int64_t tile, uint8_t* dst) {
  const int64_t nb = src.cols / kQK;
  pair_tile_pad(dst, nb, kCodeBytes);
  const uint8_t* rows[kPackRows];  // nullptr: a row past the matrix (scale 0, q = 0 as 128)
  for (int64_t i = 0; i < kPackRows; ++i) {
    const int64_t row = tile * kPackRows + i;
    rows[i] = row < src.rows ? static_cast<const uint8_t*>(src.data) + row * static_cast<int64_t>(src.row_stride)
                             : nullptr;
  }
  // Block by block, so the writes stay inside one 544-byte window (writing row by row instead
  // scattered them over the whole tile and made packing a 4b model take seconds).
  for (int64_t b = 0; b < nb; ++b) {
    const auto [codes, scales] = pair_slot(dst, b, nb, kCodeBytes);
    for (int64_t i = 0; i < kPackRows; ++i) {
      BlockQ8_0 blk{};
      if (rows[i] != nullptr) std::memcpy(&blk, rows[i] + b * kBlockBytes, kBlockBytes);
      std::memcpy(scales + 2 * i, &blk.d, 2);
      for (int64_t j = 0; j < kQK / 4; ++j) {
        // 4 codes at once: q + 128 (mod 256) flips the top bit of each byte.
        uint32_t v;
        std::memcpy(&v, blk.qs + 4 * j, 4);
        v ^= 0x80808080u;
        std::memcpy(codes + 64 * j + 4 * i, &v, 4);
      }
    }
  }
}

}  // namespace

const PackFormat* pack_format_q8_0() {
  static const PackFormat f{tile_bytes_q8_0, pack_tile_q8_0, avx2::pack_tile_q8_0,
                            avx512::packed_rect_q8_0, avx2::packed_rect_q8_0};
  return &f;
}

}  // namespace fulgur::kernels
