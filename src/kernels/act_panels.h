// Internal to the packed kernels (kernels/packed.h): the activation rows of a call rearranged the
// way a tile kernel reads them. Built in plain C++ here, once for every SIMD family, so the AVX2
// and AVX-512 kernels of a type start from the same bytes. Declarations and plain data only, as
// in quant_act.h (ODR).
#pragma once

#include <cstdint>

#include "kernels/quant_act.h"

namespace fulgur::kernels {

// Q8_0: per activation row and 32-column block, what the tile kernels need besides the codes.
struct Q80Coef {
  float da;      // the block's scale
  float off;     // -128 * S, S = d * sum(q): removes the +128 of the stored codes
  int32_t bias;  // 128 * sum(q): the same offset in integers (AVX2 multiplies signed codes)
};
// The coefficients of rows r0 .. r0 + n - 1 of act and blocks b < nb, row i's block b at
// [i * nb + b], in a per-thread buffer that the next call on the thread reuses (12 bytes per
// block instead of the 32 + 8 of d and s they come from); bias only when asked (the AVX-512
// kernel has no use for it).
const Q80Coef* q8_0_coefs(const ActQ8& act, int64_t r0, int64_t n, int64_t nb, bool with_bias);

// What the loops of one Q8_0 tile-kernel call share.
struct Q80Call {
  const MatmulTask* t;
  const Q80Coef* coef;  // q8_0_coefs of rows [r0, r1)
  int64_t nb;           // blocks per row
  int64_t o1;           // end of the output rows
  int64_t r0;           // first activation row of the call
};

// Q4_K: rows [r0, r0 + rows) of `a`, 32-column sub-blocks [j0, j1), interleaved per sub-block so
// a kernel reaches every row from one pointer with constant offsets and they stay compact in L1:
// sub-block j is 40 * rows bytes, [rows][32] int8 q, then [rows] f32 da_j, then [rows] f32
// S_j = s_2j + s_2j+1 (quant_act.h's d and s).
void q4_k_panel(const ActQ8& a, int64_t r0, int rows, int64_t j0, int64_t j1, uint8_t* out);

// Q6_K: rows [r0, r0 + rows) of `a`, blocks of 32 columns [0, nblk), interleaved per block
// (44 * rows bytes each) so a kernel reaches every row from one pointer with constant offsets:
//   q    [8 quads][rows] 4 int8   the block's activation bytes, 4 columns per entry
//   off  [2][rows] int32          -32 * sum of each 16-group of q (undoes the codes' offset)
//   d    [rows] f32               the block's activation scale
void q6_k_panel(const ActQ8& a, int64_t r0, int rows, int64_t nblk, uint8_t* out);

}  // namespace fulgur::kernels
