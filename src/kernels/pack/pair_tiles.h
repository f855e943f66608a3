// The tile shape of the types whose 32-column blocks carry one f16 scale per row (Q8_0, Q4_0,
// IQ4_NL; layouts: kernels/pack/q8_0.cpp, pack/q4_0_iq4_nl.cpp): blocks in pairs, each pair's two
// blocks of codes (code_bytes each, for 16 rows) followed by their two 32-byte vectors of 16 f16
// scales; an odd last block alone, its codes then its scales; the tile padded to 64 bytes. The
// plain packers and the AVX2 ones (kernels/avx2/pack.cpp) place blocks with these. Declarations
// only, so ISA-flagged files may include it (the ODR rule of quant_act.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace fulgur::kernels {

// Bytes of one tile of nb blocks.
size_t pair_tile_bytes(int64_t nb, int64_t code_bytes);

// Where block b of a tile of nb blocks at dst goes: its codes and its 16 f16 scales.
struct PairSlot {
  uint8_t* codes;
  uint8_t* scales;
};
PairSlot pair_slot(uint8_t* dst, int64_t b, int64_t nb, int64_t code_bytes);

// Zeroes the padding after the tile's last block.
void pair_tile_pad(uint8_t* dst, int64_t nb, int64_t code_bytes);

}  // namespace fulgur::kernels
