#include "kernels/packed.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "core/error.h"
#include "kernels/dispatch.h"

namespace fulgur::kernels {

// Each defined in its kernels/pack/<type>.cpp; nullptr while a type has no packed kernels.
const PackFormat* pack_format_q8_0();
const PackFormat* pack_format_q4_k();
const PackFormat* pack_format_q5_k();
const PackFormat* pack_format_q6_k();
const PackFormat* pack_format_q4_0();
const PackFormat* pack_format_iq4_nl();
const PackFormat* pack_format_iq4_xs();

const PackFormat* pack_format(DType type) {
  switch (type) {
    case DType::kQ8_0: return pack_format_q8_0();
    case DType::kQ4_K: return pack_format_q4_k();
    case DType::kQ5_K: return pack_format_q5_k();
    case DType::kQ6_K: return pack_format_q6_k();
    case DType::kQ4_0: return pack_format_q4_0();
    case DType::kIQ4_NL: return pack_format_iq4_nl();
    case DType::kIQ4_XS: return pack_format_iq4_xs();
    default: return nullptr;
  }
}

PackedRect packed_rect(DType type, Isa isa) {
  const PackFormat* f = pack_format(type);
  if (f == nullptr) return nullptr;
  if (isa == Isa::kAvx512) return f->rect_avx512;
  if (isa == Isa::kAvx2) return f->rect_avx2;
  return nullptr;
}

bool should_pack(DType type) { return packed_rect(type, active_isa()) != nullptr; }

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

PackedWeight::PackedWeight(const WeightView& src, ThreadPool* pool) {
  const PackFormat* f = pack_format(src.type);
  FULGUR_CHECK(f != nullptr, "no packed layout for ", dtype_name(src.type), " weights");
  FULGUR_CHECK(src.layout == WeightLayout::kRows, "matrix is already packed");
  const int64_t tiles = (src.rows + kPackRows - 1) / kPackRows;
  const size_t tile = f->tile_bytes(src.cols);
  bytes_ = packed_bytes(src);
  // Each packing thread populates its own tiles' pages in one call before writing them: the
  // kernel's zeroing of fresh pages (most of the packing time on a VM) then runs on every
  // thread, and not as one fault per page.
  data_ = PageBuffer(bytes_);
  uint8_t* out = data_.data();
  const auto pack_tile = isa_supported(Isa::kAvx2) ? f->pack_tile_avx2 : f->pack_tile;
  auto pack = [&](int64_t t0, int64_t t1, int) {
    data_.populate(t0 * tile, (t1 - t0) * tile);
    for (int64_t t = t0; t < t1; ++t) pack_tile(src, t, out + t * tile);
  };
  if (pool != nullptr)
    pool->parallel_for(tiles, pack);
  else
    pack(0, tiles, 0);
  view_ = packed_view(src, out);
}

}  // namespace fulgur::kernels
