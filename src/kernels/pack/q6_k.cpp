// Q6_K in 16-row interleaved tiles (packed.h): the layout and the packer; the kernel that reads
// it is kernels/avx512/tiles_q6_k.cpp.
//
// A Q6_K weight is x = d * sc_j * (q - 32), q in 0..63 a 6-bit code, sc_j an int8 scale per
// 16-element sub-block j and d an f16 per 256-element super-block (blocks.h BlockQ6_K). The tile
// keeps exactly those codes and scales, only rearranged. Per super-block (256 columns) of the
// 16 rows there are
//
//   codes   8 blocks * 384 bytes   one block = 32 columns of the 16 rows, six 64-byte vectors
//   scales  256 bytes              [16 sub-blocks][16 rows] int8
//   d       32 bytes               [16 rows] f16
//
// 3360 bytes, 52.5 cache lines, so super-blocks go in pairs: a unit of two is codes A, codes B,
// scales A, scales B, d A, d B (6720 bytes, 105 lines); an odd last super-block is a unit of its
// own, padded by 32 bytes. Every code vector is cache-line aligned, and a tile (units in column
// order) is one forward stream: the scales and d a block needs lie at most 6.2 KiB past its
// codes, within the kernel's L2 prefetch distance. (With all of a tile's scales after all of its
// codes, 48 KiB apart at 4096 columns, their lines came late and decode fell behind row-major.)
//
// A block of columns c0 .. c0 + 31 is, with "quad" k the 4 columns c0 + 4k .. c0 + 4k + 3 (quads
// 0-3 are sub-block 2b, quads 4-7 sub-block 2b + 1) and byte 4i + m of a vector belonging to row
// i and column m of the quad (so lane i of a zmm is row i, the lanes being the 16 outputs):
//
//   N0..N3  (bytes 0..255)    low nibble: bits 0-3 of the code of quad j; high nibble: of quad 4+j
//   H0      (bytes 256..319)  bits 2j, 2j+1: bits 4-5 of the code of quad j      (j = 0..3)
//   H1      (bytes 320..383)  bits 2j, 2j+1: bits 4-5 of the code of quad 4 + j  (j = 0..3)
//
// So one 64-byte load of the 4-bit plane gives two quads (AND; shift + AND) and one load of the
// 2-bit plane the high bits of four; the codes stay unsigned (vpdpbusd takes u8 x s8) and the
// -32 is undone with the activation group sums. Bytes per weight: 3360 / 256 per row-super-block,
// the file's 6.5625 bits, plus 32 bytes of padding per tile when cols / 256 is odd. Rows past
// src.rows are all zero (codes, scales and d), so their outputs are 0.
#include <cstring>

#include "kernels/pack/isa_entries.h"
#include "kernels/packed.h"
#include "kernels/quant_act.h"
#include "tensor/blocks.h"

namespace fulgur::kernels {

namespace {

constexpr int64_t kSuper = 256;
constexpr int64_t kCodeBytes = 8 * 384;  // per super-block of a tile
constexpr int64_t kScaleBytes = 256;
constexpr int64_t kDBytes = 32;
constexpr int64_t kPairBytes = 2 * (kCodeBytes + kScaleBytes + kDBytes);

// Where super-block sb's codes, scales and d start in a tile of nsb super-blocks (the same
// arithmetic as the kernel's SuperBlock in avx512/tiles_q6_k.cpp).
struct SuperBlockAt {
  int64_t codes, scales, d;
  SuperBlockAt(int64_t sb, int64_t nsb) {
    const int64_t unit = sb / 2, h = sb % 2, nu = nsb - 2 * unit < 2 ? 1 : 2;
    const int64_t base = unit * kPairBytes;
    codes = base + h * kCodeBytes;
    scales = base + nu * kCodeBytes + h * kScaleBytes;
    d = base + nu * (kCodeBytes + kScaleBytes) + h * kDBytes;
  }
};

size_t tile_bytes_q6_k(int64_t cols) {
  const auto nsb = static_cast<size_t>(cols / kSuper);
  return (nsb * static_cast<size_t>(kCodeBytes + kScaleBytes + kDBytes) + 63) / 64 * 64;
}

// The 256 6-bit codes of a super-block in element order (dequantize_q6_k's: element
// 128h + 32k + l, l < 32, takes nibble k / 2 of ql[64h + 32(k % 2) + l] and bits 2k, 2k + 1
// of qh[32h + l]).
void codes_of(const BlockQ6_K& b, uint8_t* q) {
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      const int lo = b.ql[64 * h + l], hi = b.ql[64 * h + 32 + l], qh = b.qh[32 * h + l];
      uint8_t* e = q + 128 * h + l;
      e[0] = static_cast<uint8_t>((lo & 0xF) | ((qh & 3) << 4));
      e[32] = static_cast<uint8_t>((hi & 0xF) | (((qh >> 2) & 3) << 4));
      e[64] = static_cast<uint8_t>((lo >> 4) | (((qh >> 4) & 3) << 4));
      e[96] = static_cast<uint8_t>((hi >> 4) | (((qh >> 6) & 3) << 4));
    }
}

void pack_tile_q6_k(const WeightView& src, int64_t tile, uint8_t* dst) {
  const int64_t nsb = src.cols / kSuper;
  std::memset(dst, 0, tile_bytes_q6_k(src.cols));
  for (int64_t i = 0; i < kPackRows; ++i) {
    const int64_t row = tile * kPackRows + i;
    if (row >= src.rows) break;  // padding rows stay zero
    const uint8_t* blocks = static_cast<const uint8_t*>(src.data) +
                            row * static_cast<int64_t>(src.row_stride);
    for (int64_t sb = 0; sb < nsb; ++sb) {
      BlockQ6_K b;
      std::memcpy(&b, blocks + sb * sizeof b, sizeof b);  // rows need not be aligned
      uint8_t q[kSuper];
      codes_of(b, q);
      const SuperBlockAt at(sb, nsb);
      for (int blk = 0; blk < 8; ++blk) {
        const uint8_t* c = q + 32 * blk;  // quad j: c[4j .. 4j + 3]
        uint8_t* out = dst + at.codes + blk * 384 + 4 * i;
        for (int m = 0; m < 4; ++m) {
          int h0 = 0, h1 = 0;
          for (int j = 0; j < 4; ++j) {
            const int lo = c[4 * j + m], hi = c[16 + 4 * j + m];
            out[64 * j + m] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
            h0 |= (lo >> 4) << (2 * j);
            h1 |= (hi >> 4) << (2 * j);
          }
          out[256 + m] = static_cast<uint8_t>(h0);
          out[320 + m] = static_cast<uint8_t>(h1);
        }
      }
      for (int s = 0; s < 16; ++s) dst[at.scales + 16 * s + i] = static_cast<uint8_t>(b.scales[s]);
      std::memcpy(dst + at.d + 2 * i, &b.d, 2);
    }
  }
}

}  // namespace

const PackFormat* pack_format_q6_k() {
  static const PackFormat f{tile_bytes_q6_k, pack_tile_q6_k, avx2::pack_tile_q6_k,
                            avx512::packed_rect_q6_k, avx2::packed_rect_q6_k};
  return &f;
}

}  // namespace fulgur::kernels
