#include "kernels/packed.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "core/error.h"
#include "kernels/dispatch.h"

namespace fulgur::kernels {

// Each defined in its kernels/pack_<type>.cpp; nullptr while a type has no packed kernels.
const PackFormat* pack_format_q8_0();
const PackFormat* pack_format_q4_k();
const PackFormat* pack_format_q6_k();

const PackFormat* pack_format(DType type) {
  switch (type) {
    case DType::kQ8_0: return pack_format_q8_0();
    case DType::kQ4_K: return pack_format_q4_k();
    case DType::kQ6_K: return pack_format_q6_k();
    default: return nullptr;
  }
}

bool should_pack(DType type) {
  static const bool disabled = [] {
    const char* v = std::getenv("FULGUR_PACK");
    return v != nullptr && std::string_view(v) == "0";
  }();
  return !disabled && active_isa() == Isa::kAvx512 && pack_format(type) != nullptr;
}

size_t packed_bytes(const WeightView& src) {
  const PackFormat* f = pack_format(src.type);
  FULGUR_CHECK(f != nullptr, "no packed layout for ", dtype_name(src.type), " weights");
  const int64_t tiles = (src.rows + kPackRows - 1) / kPackRows;
  return std::max<size_t>(tiles * f->tile_bytes(src.cols), 64);
}

WeightView packed_view(const WeightView& src, const uint8_t* tiles) {
  WeightView v = src;
  v.data = tiles;
  v.row_stride = pack_format(src.type)->tile_bytes(src.cols);
  v.layout = WeightLayout::kRows16;
  return v;
}

void Unmap::operator()(uint8_t* p) const { ::munmap(p, size); }

PackedWeight::PackedWeight(const WeightView& src, ThreadPool* pool) {
  const PackFormat* f = pack_format(src.type);
  FULGUR_CHECK(f != nullptr, "no packed layout for ", dtype_name(src.type), " weights");
  FULGUR_CHECK(src.layout == WeightLayout::kRows, "matrix is already packed");
  const int64_t tiles = (src.rows + kPackRows - 1) / kPackRows;
  const size_t tile = f->tile_bytes(src.cols);
  bytes_ = packed_bytes(src);
  // An anonymous mapping (page-aligned, so 64-byte aligned), backed by huge pages where the
  // kernel allows and populated in one call: faulting gigabytes in 4 KiB at a time was most of
  // the packing time.
  const size_t mapped = (bytes_ + 4095) / 4096 * 4096;
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  FULGUR_CHECK(p != MAP_FAILED, "out of memory packing a ", src.rows, " x ", src.cols,
               " matrix (", bytes_, " bytes)");
  data_ = std::unique_ptr<uint8_t, Unmap>(static_cast<uint8_t*>(p), Unmap{mapped});
  ::madvise(p, mapped, MADV_HUGEPAGE);
  ::madvise(p, mapped, MADV_POPULATE_WRITE);  // advice: on failure the pages fault in as used
  uint8_t* out = data_.get();
  auto pack = [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; ++t) f->pack_tile(src, t, out + t * tile);
  };
  if (pool != nullptr)
    pool->parallel_for(tiles, pack);
  else
    pack(0, tiles, 0);
  view_ = packed_view(src, out);
}

}  // namespace fulgur::kernels
