// Weights repacked at load into 16-row interleaved tiles (WeightLayout::kRows16) for the int8
// tile kernels (AVX-512 VNNI, and AVX2 with the same bits).
//
// Why: in the file's row-major layout one 512-bit register holds 64 columns of ONE weight row, so
// every (weight row, activation row) pair needs its own scale multiply, int->float convert and
// horizontal sum; at 8 activation rows (a verification batch) that bookkeeping, not the integer
// dot products, is the cost. In a 16-row tile, lane i of a register holds 4 consecutive columns
// of row i: a broadcast of 4 activation bytes times one register is a dot step of 16 outputs at
// once, the block scales of the 16 rows form one vector, and the accumulator's lanes ARE the 16
// outputs (no horizontal sum). Decode reads the same bytes as before (the tile holds the same
// codes and scales), so it stays at the memory-bandwidth floor.
//
// Each packable type has a tile layout of its own, described in its kernels/pack/<type>.cpp; all
// of them are lossless (the packed matmul computes the same products as the row-major one, up to
// the f32 summation order).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/cpu.h"
#include "core/page_buffer.h"
#include "core/thread_pool.h"
#include "kernels/matmul.h"

namespace fulgur::kernels {

inline constexpr int64_t kPackRows = 16;

struct MatmulTask;

// One packable type: its tile size, how to build a tile, and the kernel that reads tiles.
struct PackFormat {
  // Bytes of one 16-row tile of `cols` columns (cols a multiple of the type's block size).
  size_t (*tile_bytes)(int64_t cols);
  // Writes tile `tile` (rows 16 * tile .. 16 * tile + 15 of src; rows past src.rows are zero,
  // and must produce zero outputs) to dst, tile_bytes(src.cols) bytes: plain C++, the reference.
  void (*pack_tile)(const WeightView& src, int64_t tile, uint8_t* dst);
  // The same bytes with AVX2 shuffles (kernels/avx2/pack.cpp), what loads use; dst must be
  // 64-byte aligned.
  void (*pack_tile_avx2)(const WeightView& src, int64_t tile, uint8_t* dst);
  // y[r][o] for o in [o0, o1), r in [r0, r1) (quant_act.h's MatmulTask; t.w->layout is
  // kRows16). o0 is a multiple of 16; o1 is a multiple of 16 or t.w->rows. nullptr where the
  // type has no AVX-512 tile kernel: should_pack() is then false there, so AVX-512 hosts keep
  // such matrices row-major.
  void (*rect_avx512)(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1);
  // The same with AVX2 (same bits), or nullptr where the type has no AVX2 tile kernel yet.
  void (*rect_avx2)(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1);
};

// The tile kernel of `type` for `isa` (kAvx512 or kAvx2), or nullptr if there is none.
using PackedRect = void (*)(const MatmulTask&, int64_t, int64_t, int64_t, int64_t);
PackedRect packed_rect(DType type, Isa isa);

// The format of `type`, or nullptr if it has none.
const PackFormat* pack_format(DType type);

// Whether matrices of `type` are read faster repacked: the active ISA has a tile kernel for
// them. (Models may still keep the file's layout: ModelOptions::pack.)
bool should_pack(DType type);

// Bump when any type's tile layout changes: tile caches (model/tile_cache.h) key on it.
inline constexpr int kTileFormatVersion = 1;

// Bytes of src (row-major, of a type with a format) as 16-row tiles.
size_t packed_bytes(const WeightView& src);
// The kRows16 view of src's matrix whose tiles are at `tiles` (packed_bytes(src) bytes).
WeightView packed_view(const WeightView& src, const uint8_t* tiles);

// An owned, 64-byte aligned kRows16 copy of a row-major matrix.
class PackedWeight {
 public:
  PackedWeight() = default;
  // Throws fulgur::Error if src's type has no format or src is not row-major. pool may be null.
  PackedWeight(const WeightView& src, ThreadPool* pool);

  const WeightView& view() const { return view_; }
  size_t bytes() const { return bytes_; }

 private:
  PageBuffer data_;
  size_t bytes_ = 0;
  WeightView view_;
};

}  // namespace fulgur::kernels
