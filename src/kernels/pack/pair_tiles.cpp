#include "kernels/pack/pair_tiles.h"

#include <cstring>

namespace fulgur::kernels {

namespace {
constexpr int64_t kScaleBytes = 32;  // 16 f16
int64_t used_bytes(int64_t nb, int64_t code_bytes) { return nb * (code_bytes + kScaleBytes); }
}  // namespace

size_t pair_tile_bytes(int64_t nb, int64_t code_bytes) {
  return static_cast<size_t>((used_bytes(nb, code_bytes) + 63) / 64 * 64);
}

PairSlot pair_slot(uint8_t* dst, int64_t b, int64_t nb, int64_t code_bytes) {
  uint8_t* pair = dst + (b / 2) * 2 * (code_bytes + kScaleBytes);
  const bool alone = b % 2 == 0 && b + 1 == nb;  // an odd last block
  return {pair + (b % 2) * code_bytes, pair + (alone ? 1 : 2) * code_bytes + (b % 2) * kScaleBytes};
}

void pair_tile_pad(uint8_t* dst, int64_t nb, int64_t code_bytes) {
  const int64_t used = used_bytes(nb, code_bytes);
  std::memset(dst + used, 0, pair_tile_bytes(nb, code_bytes) - static_cast<size_t>(used));
}

}  // namespace fulgur::kernels
