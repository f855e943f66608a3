// Q4_K and Q5_K in 16-row tiles (kernels/packed.h): the layouts and one packer for both (plain
// C++, run at load).
//
// Q4_K: a tile holds rows 16t .. 16t + 15 and is a sequence of 2368-byte units, one per 256-column
// super-block, so decode streams each tile front to back. Unit of super-block b (lane i = the
// tile's row i):
//   [   0,   32)  d[16]     f16, the super-block scale of each row
//   [  32,   64)  dmin[16]  f16, the super-block min scale of each row
//   [  64,  320)  per sub-block j = 0..7 (32 columns): sc[16] then m[16], the 6-bit scale and
//                 min of each row unpacked to one byte (x = d*sc*q - dmin*m)
//   [ 320, 2368)  per sub-block j: 256 bytes of codes, four 64-byte groups k = 0..3; byte
//                 4i + e of group k (e < 4) holds, for row i,
//                   low nibble:  q[32j + 4k + e]        (columns 4k .. 4k+3 of the sub-block)
//                   high nibble: q[32j + 16 + 4k + e]   (columns 16+4k .. 16+4k+3)
// So one aligned 64-byte load gives two vpdpbusd operands (one AND; one shift and AND) whose
// lane i is 4 consecutive columns of row i, and the 8 operands of a sub-block share one scale
// vector (sc lanes) and one min vector. The scales could not be pre-multiplied by d without
// rounding, so they stay bytes: 2368 bytes per 16 x 256 weights against the file's 2304
// (+2.8 %, 4.625 bits per weight). Rows past the matrix are all zero (d = 0, codes 0).
//
// Q5_K: Q4_K's tile layout with each sub-block's codes followed by their fifth
// bits, so one tile stays one front-to-back stream. Unit of super-block b (2880 bytes; lane i =
// the tile's row i):
//   [   0,   32)  d[16]     f16, the super-block scale of each row
//   [  32,   64)  dmin[16]  f16, the super-block min scale of each row
//   [  64,  320)  per sub-block j = 0..7: sc[16] then m[16], 6-bit scale and min unpacked to bytes
//   [ 320, 2880)  per sub-block j, 320 bytes:
//     [0, 256)    the low 4 bits of the codes, exactly as Q4_K's 256 code bytes (four 64-byte
//                 groups k; byte 4i + e: low nibble column 4k + e, high nibble column 16 + 4k + e)
//     [256, 320)  eight little-endian 64-bit masks g: bit 4i + e of mask g (g < 4: k = g, the
//                 low nibbles' columns 4k + e; g >= 4: k = g - 4, the high nibbles' columns
//                 16 + 4k + e) is bit 4 of that code of row i.
// A mask bit sits at the index of the byte its code occupies in the unpacked 64-byte operand, so
// AVX-512 adds 16 under the mask (one masked add) and AVX2 expands a 32-bit half to bytes.
// 2880 bytes per 16 x 256 weights against the file's 2816 (+2.3 %). Rows past the matrix are
// all zero (d = 0, codes 0). No AVX2 packer for Q5_K yet: loads use this one.
#include <cstddef>
#include <cstring>

#include "kernels/pack/isa_entries.h"
#include "kernels/packed.h"
#include "kernels/quant_act.h"
#include "tensor/blocks.h"

namespace fulgur::kernels {

namespace {

constexpr int64_t kScaleOff = 64, kCodeOff = 320;

// Block: BlockQ4_K or BlockQ5_K; kFifthBit: Q5_K (each sub-block's 256 code bytes followed by
// its 64 bytes of fifth-bit masks).
template <class Block, bool kFifthBit>
struct K4Tiles {
  static constexpr int64_t kSubBytes = kFifthBit ? 320 : 256, kMaskOff = 256;
  static constexpr int64_t kUnitBytes = kCodeOff + 8 * kSubBytes;  // 2368 / 2880

  static size_t tile_bytes(int64_t cols) { return static_cast<size_t>(cols / kQK_K * kUnitBytes); }

  static void pack_tile(const WeightView& src, int64_t tile, uint8_t* dst) {
    const int64_t nsb = src.cols / kQK_K;
    std::memset(dst, 0, tile_bytes(src.cols));
    const auto* base = static_cast<const uint8_t*>(src.data);
    for (int64_t i = 0; i < kPackRows; ++i) {
      const int64_t o = kPackRows * tile + i;
      if (o >= src.rows) break;
      // Byte offsets of the block's fields (no struct access: rows need not be 2-byte aligned).
      const uint8_t* row = base + o * static_cast<int64_t>(src.row_stride);
      for (int64_t b = 0; b < nsb; ++b) {
        const uint8_t* blk = row + b * static_cast<int64_t>(sizeof(Block));
        const uint8_t* scales = blk + offsetof(Block, scales);
        const uint8_t* qs = blk + offsetof(Block, qs);
        uint8_t* u = dst + b * kUnitBytes;
        std::memcpy(u + 2 * i, blk + offsetof(Block, d), 2);
        std::memcpy(u + 32 + 2 * i, blk + offsetof(Block, dmin), 2);
        uint8_t q[kQK_K];  // the 256 codes in column order (blocks.h): qs[32c + l] holds column
                           // 64c + l in its low nibble and 64c + 32 + l in its high one; Q5_K's
                           // bits 2c and 2c + 1 of qh[l] go on top
        for (int c = 0; c < 4; ++c)
          for (int l = 0; l < 32; ++l) {
            q[64 * c + l] = qs[32 * c + l] & 0x0F;
            q[64 * c + 32 + l] = qs[32 * c + l] >> 4;
            if constexpr (kFifthBit) {
              const uint8_t* qh = blk + offsetof(Block, qh);
              q[64 * c + l] |= static_cast<uint8_t>(((qh[l] >> (2 * c)) & 1) << 4);
              q[64 * c + 32 + l] |= static_cast<uint8_t>(((qh[l] >> (2 * c + 1)) & 1) << 4);
            }
          }
        for (int j = 0; j < 8; ++j) {
          uint8_t sc, m;
          get_scale_min_k4(j, scales, &sc, &m);
          u[kScaleOff + 32 * j + i] = sc;
          u[kScaleOff + 32 * j + 16 + i] = m;
          uint8_t* sub = u + kCodeOff + kSubBytes * j;
          for (int k = 0; k < 4; ++k)
            for (int e = 0; e < 4; ++e) {
              const int lo = q[32 * j + 4 * k + e], hi = q[32 * j + 16 + 4 * k + e];
              sub[64 * k + 4 * i + e] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
              if constexpr (kFifthBit) {
                const int bit = 4 * static_cast<int>(i) + e;  // 0..63 within a mask
                sub[kMaskOff + 8 * k + bit / 8] |= static_cast<uint8_t>(((lo >> 4) & 1) << (bit % 8));
                sub[kMaskOff + 8 * (4 + k) + bit / 8] |= static_cast<uint8_t>(((hi >> 4) & 1) << (bit % 8));
              }
            }
        }
      }
    }
  }
};

using Q4KTiles = K4Tiles<BlockQ4_K, false>;
using Q5KTiles = K4Tiles<BlockQ5_K, true>;

}  // namespace

const PackFormat* pack_format_q4_k() {
  static const PackFormat format{&Q4KTiles::tile_bytes, &Q4KTiles::pack_tile, &avx2::pack_tile_q4_k,
                                 &avx512::packed_rect_q4_k, &avx2::packed_rect_q4_k};
  return &format;
}

const PackFormat* pack_format_q5_k() {
  static const PackFormat format{&Q5KTiles::tile_bytes, &Q5KTiles::pack_tile, &Q5KTiles::pack_tile,
                                 &avx512::packed_rect_q5_k, &avx2::packed_rect_q5_k};
  return &format;
}

}  // namespace fulgur::kernels
