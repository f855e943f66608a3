// Reference (scalar) conversion of rows between f32 and every computable type, with ggml's
// exact block layouts (reference/archs-gguf.md §1.7; structs in tensor/blocks.h). These define
// the semantics every SIMD kernel is tested against.
//
// Dequantization reproduces ggml's expressions and float evaluation order, so results are
// bit-equal to llama.cpp's reference dequantizers. Supported: F32, F16, BF16, F64, I8, I16, I32,
// I64, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, IQ4_NL, IQ4_XS,
// the codebook types IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M (tensor/iq_grids.h),
// TQ1_0, TQ2_0, MXFP4, NVFP4.
//
// Quantization (the same list) rounds to nearest with a scale choice per scheme:
// - Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1: ggml's reference quantizers (max-magnitude scale or
//   min/max, x + 0.5 truncated, roundf for the Q8 types); Q8_1 also fills s = d * sum(qs).
// - Q2_K..Q6_K, IQ4_NL, IQ4_XS: a per-sub-block scale (and min) search with least-squares refit,
//   then ggml's quantization of the sub-block scales against one f16 super-scale. Not ggml's
//   importance-weighted search, so bytes differ from llama-quantize's; the format is the same.
// - IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M: a codebook search per group of 4 or 8 values over a
//   range of sub-block scales, then the super-block scale searched with the entries fixed and each
//   group snapped again at its final scale (tensor/quants_iq_encode.cpp). Weighted by the
//   importance, or without one by x^2 as ggml's encoders; bytes differ from ggml's, the
//   (weighted) error is within a few per cent of it or below (test_llama's LlamaDequant).
// - Q8_K (activations): d = max|x| / 127 as a float, always >= 0 (ggml uses the signed max);
//   qs = round-half-even(x / d) in -127..127; bsums[g] = sum of qs[16g..16g+15].
// - TQ1_0, TQ2_0: ggml's scheme, d = max|x| (f16) and trit = round(x / d) in -1..1.
// - MXFP4: the E8M0 exponent is OCP's floor(log2 max|x|) - 2 or one higher, whichever has the
//   lower block error; E2M1 codes round to nearest, ties to even mantissa.
// - NVFP4: per 16 elements the UE4M3 scale near max|x| / 6 with the lowest error. Values beyond
//   448 * 6 clip: the format's range is extended only by the per-tensor scale below.
// - F16/BF16: round to nearest even (core/fp16.h). Integer types: round half to even, saturate,
//   NaN -> 0. Non-finite inputs never crash a quantizer; the output for them is unspecified.
//
// NVFP4 per-tensor scale: a GGUF NVFP4 weight `W` may come with an F32 sidecar tensor
// `W.scale` (ModelOpt's weight_scale_2; one value, or one per expert for `*_exps`). It is NOT
// part of the row format: dequantize_row returns the block values only, and the matmul owner
// multiplies the matmul OUTPUT by `.scale` (as llama.cpp's build_lora_mm does). Likewise a
// converter writing NVFP4 divides the weights by its chosen per-tensor scale before
// quantize_row and stores that scale as `W.scale`.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace fulgur {

// dst[0..n) = the values of the n elements at src. n must be a non-negative multiple of the
// block size (else fulgur::Error). Integer types convert their values to float.
void dequantize_row(DType type, const void* src, float* dst, int64_t n);

// Writes n elements of src into row_bytes(type, n) bytes at dst, rounding to the nearest
// representable values the type's scheme picks. Throws fulgur::Error for types without a
// quantizer (can_quantize false) and for n not a non-negative multiple of the block size.
void quantize_row(DType type, const float* src, void* dst, int64_t n);

// Whether quantize_row supports `type`.
bool can_quantize(DType type);

// quantize_row with an importance per element (llama.cpp's imatrix values for the row's columns,
// n of them, >= 0; null: quantize_row). The scale searches of Q2_K..Q6_K, IQ4_NL, IQ4_XS and the
// codebook encoders minimise the squared error weighted by importance[j] * sqrt(sigma2 + x_j^2), sigma2 the
// block's mean square; Q4_0, Q4_1, Q5_0 and Q5_1 keep, per block, the reference encoding or a
// fit under the same weights, whichever has the smaller weighted error; the other types (Q8_0,
// floats, ...) take no weights and quantize as quantize_row does. A (sub-)block whose weights are
// all zero is quantized as without weights.
void quantize_row_weighted(DType type, const float* src, void* dst, int64_t n, const float* importance);
// Whether quantize_row_weighted uses the importance for `type`.
bool uses_importance(DType type);

}  // namespace fulgur
