// Internal: the entry points each SIMD family (avx2/, avx512/) exports to the kernel tables
// (table.h, filled in dispatch.cpp). Declarations only — no inline code — so the ISA translation
// units and the baseline ones share nothing that could be compiled twice with different
// flags (ODR hazard).
#pragma once

#include <cstdint>

#include "kernels/attention.h"
#include "kernels/ops.h"
#include "kernels/quant_act.h"
#include "kernels/recurrent.h"
#include "tensor/dtype.h"

namespace fulgur::kernels {

inline constexpr int64_t kAttnTile = kAttnTileCells;

// Per-thread scratch of one attention unit of `rows` query rows × `group` GQA heads.
struct AttnScratch {
  float* q;        // [rows][group][head_dim] the unit's query vectors, side by side
  float* k_tile;   // [kAttnTile][head_dim]
  float* v_tile;   // [kAttnTile][head_dim]
  float* scores;   // [rows][group][kAttnTile] scores, then probabilities, of the current tile
  float* corr;     // [rows][group] rescaling of the accumulator for the current tile
  float* acc;      // [rows][group][head_dim] running Σ p·v
  float* m;        // [rows][group] running max
  float* l;        // [rows][group] running Σ p
  uint32_t* vis;   // [rows] visibility of the current tile: bit c = cell c
};

}  // namespace fulgur::kernels

namespace fulgur::kernels::avx2 {
#include "kernels/simd/entries.inc"
}  // namespace fulgur::kernels::avx2

namespace fulgur::kernels::avx512 {
#include "kernels/simd/entries.inc"
}  // namespace fulgur::kernels::avx512
