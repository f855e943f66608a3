// Q4_K in 16-row tiles (kernels/packed.h): the layout and the packer (plain C++, run at load).
//
// A tile holds rows 16t .. 16t + 15 and is a sequence of 2368-byte units, one per 256-column
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
#include <cstddef>
#include <cstring>

#include "kernels/packed.h"
#include "kernels/quant_act.h"
#include "tensor/blocks.h"

namespace fulgur::kernels {

namespace avx2 {
void pack_tile_q4_k(const WeightView& src, int64_t tile, uint8_t* dst);
void packed_rect_q4_k(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1);
}  // namespace avx2
namespace avx512 {
void packed_rect_q4_k(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1);
}  // namespace avx512

namespace {

constexpr int64_t kUnitBytes = 2368;  // one super-block of a tile (layout above)
constexpr int64_t kScaleOff = 64, kCodeOff = 320;

size_t tile_bytes(int64_t cols) { return static_cast<size_t>(cols / kQK_K * kUnitBytes); }

void pack_tile(const WeightView& src, int64_t tile, uint8_t* dst) {
  const int64_t nsb = src.cols / kQK_K;
  std::memset(dst, 0, tile_bytes(src.cols));
  const auto* base = static_cast<const uint8_t*>(src.data);
  for (int64_t i = 0; i < kPackRows; ++i) {
    const int64_t o = kPackRows * tile + i;
    if (o >= src.rows) break;
    // Byte offsets of BlockQ4_K's fields (no struct access: rows need not be 2-byte aligned).
    const uint8_t* row = base + o * static_cast<int64_t>(src.row_stride);
    for (int64_t b = 0; b < nsb; ++b) {
      const uint8_t* blk = row + b * static_cast<int64_t>(sizeof(BlockQ4_K));
      const uint8_t* scales = blk + offsetof(BlockQ4_K, scales);
      const uint8_t* qs = blk + offsetof(BlockQ4_K, qs);
      uint8_t* u = dst + b * kUnitBytes;
      std::memcpy(u + 2 * i, blk + offsetof(BlockQ4_K, d), 2);
      std::memcpy(u + 32 + 2 * i, blk + offsetof(BlockQ4_K, dmin), 2);
      uint8_t q[kQK_K];  // the 256 codes in column order (blocks.h: qs[32c + l] holds
                         // column 64c + l in its low nibble and 64c + 32 + l in its high one)
      for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) {
          q[64 * c + l] = qs[32 * c + l] & 0x0F;
          q[64 * c + 32 + l] = qs[32 * c + l] >> 4;
        }
      for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        get_scale_min_k4(j, scales, &sc, &m);
        u[kScaleOff + 32 * j + i] = sc;
        u[kScaleOff + 32 * j + 16 + i] = m;
        for (int k = 0; k < 4; ++k)
          for (int e = 0; e < 4; ++e)
            u[kCodeOff + 256 * j + 64 * k + 4 * i + e] =
                static_cast<uint8_t>(q[32 * j + 4 * k + e] | (q[32 * j + 16 + 4 * k + e] << 4));
      }
    }
  }
}

}  // namespace

const PackFormat* pack_format_q4_k() {
  static const PackFormat format{&tile_bytes, &pack_tile, &avx2::pack_tile_q4_k,
                                 &avx512::packed_rect_q4_k, &avx2::packed_rect_q4_k};
  return &format;
}

}  // namespace fulgur::kernels
