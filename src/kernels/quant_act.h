// Internal to kernels/matmul: the int8 activation format the quantized matmul kernels consume,
// and the task they run (their entry points are in simd/entries.inc). Declarations and
// plain data only — no inline code — so ISA-flagged and baseline translation units share nothing
// that could be compiled twice with different flags (ODR hazard).
//
// Activation format (one per matmul call, each f32 row quantized once):
//  - q: int8 values, blocks of 32 with d = amax / 127 and q = round(x / d) (|q| <= 127, so the
//    AVX2 sign trick cannot overflow maddubs' int16 pairs).
//  - d: the block scale repeated once per 4-element lane (8 times per block). Both int8 dot
//    instructions (vpdpbusd, and maddubs + madd) leave one int32 per 4 consecutive elements, so a
//    per-lane scale vector lets one multiply serve weight groups of 16 or 32 and activation
//    blocks of 32 alike, with no shuffles in the inner loop.
//  - s: d * sum(q) of each 16-element group. Weight formats with an offset or a min
//    (x = dw * u + mw per group) need sum_i a_i per group: sum_g mw_g * s_g is one small dot per
//    output, done after the main loop.
//  Rows are zero-padded to kActPad so kernels may read whole 64- or 256-element units.
// The codebook and ternary types (IQ1_*, IQ2_*, IQ3_*, TQ*) do not use it: their scales are a
// super-block float times small integers, so their kernels quantize the f32 rows themselves with
// one scale per 256 elements (act_block, simd/iq_units.inc's ActK) and keep a super-block's dot
// product in integers, as llama.cpp's Q8_K does.
#pragma once

#include <cstdint>

#include "kernels/matmul.h"

namespace fulgur::kernels {

inline constexpr int64_t kActBlock = 32;  // elements per activation scale
inline constexpr int64_t kActPad = 256;   // row padding: one K-quant super-block

struct ActQ8 {
  int8_t* q = nullptr;  // [n][kp] int8, zero beyond cols
  float* d = nullptr;   // [n][kp / 4] scale of each 4-element lane (= its block's scale)
  float* s = nullptr;   // [n][kp / 16] d * sum of each 16-element group of q
  int64_t kp = 0;       // padded row length: cols rounded up to kActPad
};

// Everything one rectangle of the output needs.
struct MatmulTask {
  const WeightView* w = nullptr;
  const float* x = nullptr;  // [n][ldx] f32 activations (read by the F32/F16/BF16 and codebook kernels)
  int64_t ldx = 0;
  ActQ8 act;                 // quantized activations (int8 paths only)
  float* y = nullptr;        // [n][ldy]
  int64_t ldy = 0;
};

// Throws fulgur::Error naming the field when the arguments of matmul/matmul_ref are invalid.
void check_matmul_args(const WeightView& w, const float* x, int64_t n, int64_t ldx, const float* y,
                       int64_t ldy);

// Whether `type` runs on the int8 path with ActQ8 activations (quantized once per call by the
// dispatch) rather than f32 FMA or its own format.
bool uses_act_q8(DType type);

// Elements per activation scale of the int8 path for `type`: kActBlock, or 256 for the types
// whose kernels quantize their own activations (the bound of the quantization error per element
// is amax / 254 over this many elements).
int64_t act_block(DType type);

}  // namespace fulgur::kernels
