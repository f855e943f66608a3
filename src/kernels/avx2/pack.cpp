// The packers of kernels/pack/<type>.cpp with vector shuffles: the same 16-row tiles (their
// layouts are described there), byte for byte (tests/matmul checks every byte). Packing runs
// once per load, on AVX-512 machines, all of which have AVX2; the byte-at-a-time packers spent
// 2.5 s of CPU on a 4b Q8_0 model (these: 1.2 s), most of a load whose pages are in memory.
//
// The shuffle at the heart of all of them: a row contributes a run of 4-byte groups (4 columns),
// and the tile wants group k of rows 0..15 side by side (lane i = row i), so each tile is a
// transpose of 4-byte groups, done 4 or 8 rows at a time with unpack instructions.
// Everything but the entry points has internal linkage (ODR, see quant_act.h).
#include <immintrin.h>

#include <cstring>

#include "kernels/avx2/scales_k4.h"
#include "kernels/pack/pair_tiles.h"
#include "kernels/matmul.h"

namespace fulgur::kernels::avx2 {
namespace {

constexpr int64_t kTileRows = 16;  // packed.h's kPackRows (not included, see tiles_q4_k.cpp)

// The bytes of the tile's 16 rows; nullptr for a row past the matrix.
struct TileRows {
  const uint8_t* row[kTileRows];
  TileRows(const WeightView& src, int64_t tile) {
    for (int64_t i = 0; i < kTileRows; ++i) {
      const int64_t r = tile * kTileRows + i;
      row[i] = r < src.rows ? static_cast<const uint8_t*>(src.data) +
                                  r * static_cast<int64_t>(src.row_stride)
                            : nullptr;
    }
  }
};

inline __m256i load256(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
// The codes go out with non-temporal stores: a tile is written once and read only by later
// matmuls, so fetching its lines first (what a plain store does) would only add reads: repacking
// a 4b model over memory already mapped took 0.57-0.60 s (Q8_0) and 0.50-0.52 s (Q4_K_M) this
// way, against 0.77-0.79 s and 0.60-0.79 s with plain stores.
// They need dst 16/32-byte aligned (tiles are 64-byte aligned, packed.h) and an sfence before
// other threads read the tile (at the end of each packer: NT stores are weakly ordered).
inline void stream128(uint8_t* p, __m128i v) { _mm_stream_si128(reinterpret_cast<__m128i*>(p), v); }
inline void stream256(uint8_t* p, __m256i v) {
  _mm256_stream_si256(reinterpret_cast<__m256i*>(p), v);
}

// v[r] = 4 dwords of row r -> v[k] = dword k of rows 0..3.
inline void transpose4(__m128i* v) {
  const __m128i a0 = _mm_unpacklo_epi32(v[0], v[1]), a1 = _mm_unpackhi_epi32(v[0], v[1]);
  const __m128i b0 = _mm_unpacklo_epi32(v[2], v[3]), b1 = _mm_unpackhi_epi32(v[2], v[3]);
  v[0] = _mm_unpacklo_epi64(a0, b0);
  v[1] = _mm_unpackhi_epi64(a0, b0);
  v[2] = _mm_unpacklo_epi64(a1, b1);
  v[3] = _mm_unpackhi_epi64(a1, b1);
}

// v[r] = 8 dwords of row r -> v[k] = dword k of rows 0..7.
inline void transpose8(__m256i* v) {
  __m256i t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_epi32(v[i], v[i + 1]);      // dwords 0, 1 | 4, 5 of rows i, i + 1
    t[i + 1] = _mm256_unpackhi_epi32(v[i], v[i + 1]);  // dwords 2, 3 | 6, 7
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);  // dword 0 | 4 of rows i .. i + 3
    u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
    u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
    u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int k = 0; k < 4; ++k) {
    v[k] = _mm256_permute2x128_si256(u[k], u[4 + k], 0x20);
    v[4 + k] = _mm256_permute2x128_si256(u[k], u[4 + k], 0x31);
  }
}

// 32 bytes x of 4-bit values as 16 bytes: byte t = x[t] | x[16 + t] << 4, taking the low
// nibbles of x (lo = true) or the high ones. The tiles of Q4_K and Q6_K pair column t of a
// 32-column block with column 16 + t this way.
inline __m128i pair_nibbles(__m256i x, bool lo) {
  const __m128i a = _mm256_castsi256_si128(x), b = _mm256_extracti128_si256(x, 1);
  const __m128i m4 = _mm_set1_epi8(0x0F), h4 = _mm_set1_epi8(static_cast<char>(0xF0));
  if (lo) return _mm_or_si128(_mm_and_si128(a, m4), _mm_and_si128(_mm_slli_epi16(b, 4), h4));
  return _mm_or_si128(_mm_and_si128(_mm_srli_epi16(a, 4), m4), _mm_and_si128(b, h4));
}

// v[i] = 4 dwords of row i < 16 -> the 64 bytes at out + stride * k = dword k of rows 0..15
// (lane i = row i), each such line stored whole before the next (NT stores then combine into
// full lines; stored a quarter at a time, far apart, Q4_K packed 40 % slower than with plain
// stores).
inline void transpose16x4(__m128i* v, uint8_t* out, int64_t stride) {
  for (int g = 0; g < 4; ++g) transpose4(v + 4 * g);
  for (int k = 0; k < 4; ++k)
    for (int g = 0; g < 4; ++g) stream128(out + stride * k + 16 * g, v[4 * g + k]);
}

}  // namespace

void pack_tile_q8_0(const WeightView& src, int64_t tile, uint8_t* dst) {
  constexpr int64_t kBlock = 34, kCodes = 512;  // pack/q8_0.cpp's layout
  const int64_t nb = src.cols / 32;
  pair_tile_pad(dst, nb, kCodes);
  const TileRows rows(src, tile);
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));  // q + 128
  for (int64_t b = 0; b < nb; ++b) {
    const auto [codes, scales] = pair_slot(dst, b, nb, kCodes);
    __m256i v[16];  // row i, then (transposed) dword k of rows 8h .. 8h + 7 at 8h + k
    for (int i = 0; i < kTileRows; ++i) {
      const uint8_t* blk = rows.row[i];
      if (blk == nullptr) {
        v[i] = flip;  // q = 0, scale 0
        std::memset(scales + 2 * i, 0, 2);
        continue;
      }
      blk += b * kBlock;
      v[i] = _mm256_xor_si256(load256(blk + 2), flip);
      std::memcpy(scales + 2 * i, blk, 2);
    }
    transpose8(v);
    transpose8(v + 8);
    for (int k = 0; k < 8; ++k) {  // register k: rows 0-7 in the low half, 8-15 in the high
      stream256(codes + 64 * k, v[k]);
      stream256(codes + 64 * k + 32, v[8 + k]);
    }
  }
  _mm_sfence();
}

// Q4_0 and IQ4_NL (one layout, pack/q4_0_iq4_nl.cpp): each block's 16 code bytes per row,
// transposed as 4-byte groups.
void pack_tile_b4(const WeightView& src, int64_t tile, uint8_t* dst) {
  constexpr int64_t kBlock = 18, kCodes = 256;
  const int64_t nb = src.cols / 32;
  pair_tile_pad(dst, nb, kCodes);
  const TileRows rows(src, tile);
  for (int64_t b = 0; b < nb; ++b) {
    const auto [codes, scales] = pair_slot(dst, b, nb, kCodes);
    __m128i v[kTileRows];
    for (int i = 0; i < kTileRows; ++i) {
      const uint8_t* blk = rows.row[i];
      if (blk == nullptr) {  // codes 0, scale 0
        v[i] = _mm_setzero_si128();
        std::memset(scales + 2 * i, 0, 2);
        continue;
      }
      blk += b * kBlock;
      v[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
      std::memcpy(scales + 2 * i, blk, 2);
    }
    transpose16x4(v, codes, 64);
  }
  _mm_sfence();
}

// IQ4_XS (pack/iq4_xs.cpp): per super-block the header fields gathered per row, then each
// sub-block's 16 code bytes per row transposed as 4-byte groups.
void pack_tile_iq4_xs(const WeightView& src, int64_t tile, uint8_t* dst) {
  constexpr int64_t kBlock = 136, kUnit = 2176, kCodeOff = 128;
  const int64_t nsb = src.cols / 256;
  const TileRows rows(src, tile);
  for (int64_t b = 0; b < nsb; ++b) {
    uint8_t* u = dst + b * kUnit;
    for (int i = 0; i < kTileRows; ++i) {
      uint64_t head = 0;  // d, scales_h, scales_l; a row past the matrix: all zero
      if (rows.row[i] != nullptr) std::memcpy(&head, rows.row[i] + b * kBlock, 8);
      std::memcpy(u + 2 * i, &head, 2);
      std::memcpy(u + 32 + 2 * i, reinterpret_cast<uint8_t*>(&head) + 2, 2);
      std::memcpy(u + 64 + 4 * i, reinterpret_cast<uint8_t*>(&head) + 4, 4);
    }
    for (int j = 0; j < 8; ++j) {
      __m128i v[kTileRows];
      for (int i = 0; i < kTileRows; ++i)
        v[i] = rows.row[i] != nullptr
                   ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows.row[i] + b * kBlock + 8 + 16 * j))
                   : _mm_setzero_si128();
      transpose16x4(v, u + kCodeOff + 256 * j, 64);
    }
  }
  _mm_sfence();
}

void pack_tile_q4_k(const WeightView& src, int64_t tile, uint8_t* dst) {
  constexpr int64_t kBlock = 144, kUnit = 2368, kScaleOff = 64, kCodeOff = 320;  // pack/q4_k_q5_k.cpp
  const int64_t nsb = src.cols / 256;
  const TileRows rows(src, tile);
  for (int64_t b = 0; b < nsb; ++b) {
    uint8_t* u = dst + b * kUnit;
    for (int i = 0; i < kTileRows; ++i) {
      uint64_t sc = 0, m = 0;  // a row past the matrix: all zero
      uint16_t d = 0, dmin = 0;
      if (rows.row[i] != nullptr) {
        const uint8_t* blk = rows.row[i] + b * kBlock;
        std::memcpy(&d, blk, 2);
        std::memcpy(&dmin, blk + 2, 2);
        scales_mins_k4(blk + 4, &sc, &m);
      }
      std::memcpy(u + 2 * i, &d, 2);
      std::memcpy(u + 32 + 2 * i, &dmin, 2);
      for (int j = 0; j < 8; ++j) {
        u[kScaleOff + 32 * j + i] = static_cast<uint8_t>(sc >> (8 * j));
        u[kScaleOff + 32 * j + 16 + i] = static_cast<uint8_t>(m >> (8 * j));
      }
    }
    // qs[32c .. 32c + 31]: sub-block 2c in the low nibbles, 2c + 1 in the high ones.
    for (int c = 0; c < 4; ++c) {
      __m256i x[kTileRows];
      for (int i = 0; i < kTileRows; ++i) {
        const uint8_t* blk = rows.row[i];
        x[i] = blk != nullptr ? load256(blk + b * kBlock + 16 + 32 * c) : _mm256_setzero_si256();
      }
      for (int half = 0; half < 2; ++half) {
        __m128i v[kTileRows];
        for (int i = 0; i < kTileRows; ++i) v[i] = pair_nibbles(x[i], half == 0);
        transpose16x4(v, u + kCodeOff + 256 * (2 * c + half), 64);
      }
    }
  }
  _mm_sfence();
}

void pack_tile_q6_k(const WeightView& src, int64_t tile, uint8_t* dst) {
  // pack/q6_k.cpp's layout: per super-block codes (8 blocks of 384 bytes), scales, d; in pairs.
  constexpr int64_t kBlock = 210, kCodes = 8 * 384, kScales = 256, kD = 32;
  constexpr int64_t kQl = 0, kQh = 128, kSc = 192, kDOff = 208;  // BlockQ6_K's fields
  const int64_t nsb = src.cols / 256, used = nsb * (kCodes + kScales + kD);
  std::memset(dst + used, 0, static_cast<size_t>((used + 63) / 64 * 64 - used));
  const TileRows rows(src, tile);
  for (int64_t sb = 0; sb < nsb; ++sb) {
    const int64_t unit = sb / 2, h = sb % 2, nu = nsb - 2 * unit < 2 ? 1 : 2;
    uint8_t* base = dst + unit * 2 * (kCodes + kScales + kD);
    uint8_t* codes = base + h * kCodes;
    uint8_t* scales = base + nu * kCodes + h * kScales;
    uint8_t* d = base + nu * (kCodes + kScales) + h * kD;
    for (int i = 0; i < kTileRows; ++i) {
      uint8_t sc[16] = {}, di[2] = {};  // a row past the matrix: all zero
      if (rows.row[i] != nullptr) {
        std::memcpy(sc, rows.row[i] + sb * kBlock + kSc, 16);
        std::memcpy(di, rows.row[i] + sb * kBlock + kDOff, 2);
      }
      for (int s = 0; s < 16; ++s) scales[16 * s + i] = sc[s];
      std::memcpy(d + 2 * i, di, 2);
    }
    // Elements 128p + 32k + l (l < 32) form block 4p + k: the low bits are nibble k / 2 of
    // ql[64p + 32(k % 2) + l], the high two bits 2k, 2k + 1 of qh[32p + l].
    const __m256i m2 = _mm256_set1_epi8(3);
    const auto planes = [](const __m128i* q) {  // H0 / H1: bits 2j, 2j + 1 from q[j]
      return _mm_or_si128(_mm_or_si128(q[0], _mm_slli_epi32(q[1], 2)),
                          _mm_or_si128(_mm_slli_epi32(q[2], 4), _mm_slli_epi32(q[3], 6)));
    };
    for (int p = 0; p < 2; ++p) {
      for (int k = 0; k < 4; ++k) {
        __m128i n[kTileRows], h0[kTileRows], h1[kTileRows];
        for (int i = 0; i < kTileRows; ++i) {
          const uint8_t* blk = rows.row[i];
          const __m256i z = _mm256_setzero_si256();
          blk = blk != nullptr ? blk + sb * kBlock : nullptr;
          const __m256i ql = blk != nullptr ? load256(blk + kQl + 64 * p + 32 * (k % 2)) : z;
          const __m256i qh = blk != nullptr ? load256(blk + kQh + 32 * p) : z;
          n[i] = pair_nibbles(ql, k < 2);
          const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), m2);
          h0[i] = _mm256_castsi256_si128(hi);  // columns 0..15 of the block: quads 0..3
          h1[i] = _mm256_extracti128_si256(hi, 1);
        }
        uint8_t* out = codes + (4 * p + k) * 384;
        transpose16x4(n, out, 64);
        for (int g = 0; g < 4; ++g) {
          transpose4(h0 + 4 * g);
          transpose4(h1 + 4 * g);
        }
        for (int g = 0; g < 4; ++g) stream128(out + 256 + 16 * g, planes(h0 + 4 * g));
        for (int g = 0; g < 4; ++g) stream128(out + 320 + 16 * g, planes(h1 + 4 * g));
      }
    }
  }
  _mm_sfence();
}

}  // namespace fulgur::kernels::avx2
