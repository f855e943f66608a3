// Q5_K in 16-row tiles (kernels/packed.h): the layout and the packer (plain C++, run at load).
//
// Q4_K's tile layout (kernels/pack/q4_k.cpp) with each sub-block's codes followed by their fifth
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
// all zero (d = 0, codes 0). No AVX2 packer yet: loads use this one (pack_tile_avx2 = pack_tile).
#include <cstddef>
#include <cstring>

#include "kernels/packed.h"
#include "kernels/quant_act.h"
#include "tensor/blocks.h"

namespace fulgur::kernels {

namespace avx2 {
void packed_rect_q5_k(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1);
}  // namespace avx2
namespace avx512 {
void packed_rect_q5_k(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1);
}  // namespace avx512

namespace {

constexpr int64_t kUnitBytes = 2880;  // one super-block of a tile (layout above)
constexpr int64_t kScaleOff = 64, kCodeOff = 320, kSubBytes = 320, kMaskOff = 256;

size_t tile_bytes(int64_t cols) { return static_cast<size_t>(cols / kQK_K * kUnitBytes); }

void pack_tile(const WeightView& src, int64_t tile, uint8_t* dst) {
  const int64_t nsb = src.cols / kQK_K;
  std::memset(dst, 0, tile_bytes(src.cols));
  const auto* base = static_cast<const uint8_t*>(src.data);
  for (int64_t i = 0; i < kPackRows; ++i) {
    const int64_t o = kPackRows * tile + i;
    if (o >= src.rows) break;
    // Byte offsets of BlockQ5_K's fields (no struct access: rows need not be 2-byte aligned).
    const uint8_t* row = base + o * static_cast<int64_t>(src.row_stride);
    for (int64_t b = 0; b < nsb; ++b) {
      const uint8_t* blk = row + b * static_cast<int64_t>(sizeof(BlockQ5_K));
      const uint8_t* scales = blk + offsetof(BlockQ5_K, scales);
      const uint8_t* qh = blk + offsetof(BlockQ5_K, qh);
      const uint8_t* qs = blk + offsetof(BlockQ5_K, qs);
      uint8_t* u = dst + b * kUnitBytes;
      std::memcpy(u + 2 * i, blk + offsetof(BlockQ5_K, d), 2);
      std::memcpy(u + 32 + 2 * i, blk + offsetof(BlockQ5_K, dmin), 2);
      uint8_t q[kQK_K];  // the 256 codes (0..31) in column order: qs[32c + l] holds column
                         // 64c + l in its low nibble and 64c + 32 + l in its high one, with bit
                         // 2c and 2c + 1 of qh[l] on top (blocks.h)
      for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) {
          q[64 * c + l] = static_cast<uint8_t>((qs[32 * c + l] & 0x0F) | (((qh[l] >> (2 * c)) & 1) << 4));
          q[64 * c + 32 + l] = static_cast<uint8_t>((qs[32 * c + l] >> 4) | (((qh[l] >> (2 * c + 1)) & 1) << 4));
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
            const int bit = 4 * static_cast<int>(i) + e;  // 0..63 within a mask
            sub[kMaskOff + 8 * k + bit / 8] |= static_cast<uint8_t>(((lo >> 4) & 1) << (bit % 8));
            sub[kMaskOff + 8 * (4 + k) + bit / 8] |= static_cast<uint8_t>(((hi >> 4) & 1) << (bit % 8));
          }
      }
    }
  }
}

}  // namespace

const PackFormat* pack_format_q5_k() {
  static const PackFormat format{&tile_bytes, &pack_tile, &pack_tile, &avx512::packed_rect_q5_k,
                                 &avx2::packed_rect_q5_k};
  return &format;
}

}  // namespace fulgur::kernels
