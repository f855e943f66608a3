// Internal to the tensor module: the per-family row converters behind quants.cpp's dispatch.
// Each takes a count of whole blocks (nb); quants.cpp validates n before calling.
#pragma once

#include <cstdint>

namespace fulgur::detail {

// quants_legacy.cpp
void dequantize_q4_0(const void* src, float* dst, int64_t nb);
void dequantize_q4_1(const void* src, float* dst, int64_t nb);
void dequantize_q5_0(const void* src, float* dst, int64_t nb);
void dequantize_q5_1(const void* src, float* dst, int64_t nb);
void dequantize_q8_0(const void* src, float* dst, int64_t nb);
void dequantize_q8_1(const void* src, float* dst, int64_t nb);
void quantize_q4_0(const float* src, void* dst, int64_t nb);
void quantize_q4_1(const float* src, void* dst, int64_t nb);
void quantize_q5_0(const float* src, void* dst, int64_t nb);
void quantize_q5_1(const float* src, void* dst, int64_t nb);
// With importance weights w[nb * 32]: per block the reference encoding above or an
// importance-weighted scale fit, whichever has the smaller weighted squared error.
void quantize_q4_0(const float* src, void* dst, int64_t nb, const float* w);
void quantize_q4_1(const float* src, void* dst, int64_t nb, const float* w);
void quantize_q5_0(const float* src, void* dst, int64_t nb, const float* w);
void quantize_q5_1(const float* src, void* dst, int64_t nb, const float* w);
void quantize_q8_0(const float* src, void* dst, int64_t nb);
void quantize_q8_1(const float* src, void* dst, int64_t nb);

// quants_iq4.cpp
void dequantize_iq4_nl(const void* src, float* dst, int64_t nb);
void dequantize_iq4_xs(const void* src, float* dst, int64_t nb);
void quantize_iq4_nl(const float* src, void* dst, int64_t nb, const float* w = nullptr);
void quantize_iq4_xs(const float* src, void* dst, int64_t nb, const float* w = nullptr);

// quants_iq_grid.cpp: the codebook types' decoders.
void dequantize_iq2_xxs(const void* src, float* dst, int64_t nb);
void dequantize_iq2_xs(const void* src, float* dst, int64_t nb);
void dequantize_iq2_s(const void* src, float* dst, int64_t nb);
void dequantize_iq3_xxs(const void* src, float* dst, int64_t nb);
void dequantize_iq3_s(const void* src, float* dst, int64_t nb);
void dequantize_iq1_s(const void* src, float* dst, int64_t nb);
void dequantize_iq1_m(const void* src, float* dst, int64_t nb);
// quants_iq_encode.cpp: their encoders (w: per-element weights of the squared error, or null).
void quantize_iq3_xxs(const float* src, void* dst, int64_t nb, const float* w = nullptr);
void quantize_iq3_s(const float* src, void* dst, int64_t nb, const float* w = nullptr);
void quantize_iq2_xxs(const float* src, void* dst, int64_t nb, const float* w = nullptr);
void quantize_iq2_xs(const float* src, void* dst, int64_t nb, const float* w = nullptr);
void quantize_iq2_s(const float* src, void* dst, int64_t nb, const float* w = nullptr);
void quantize_iq1_s(const float* src, void* dst, int64_t nb, const float* w = nullptr);
void quantize_iq1_m(const float* src, void* dst, int64_t nb, const float* w = nullptr);

// quants_ternary.cpp
void dequantize_tq1_0(const void* src, float* dst, int64_t nb);
void dequantize_tq2_0(const void* src, float* dst, int64_t nb);
void quantize_tq1_0(const float* src, void* dst, int64_t nb);
void quantize_tq2_0(const float* src, void* dst, int64_t nb);

// quants_k.cpp
void dequantize_q2_k(const void* src, float* dst, int64_t nb);
void dequantize_q3_k(const void* src, float* dst, int64_t nb);
void dequantize_q4_k(const void* src, float* dst, int64_t nb);
void dequantize_q5_k(const void* src, float* dst, int64_t nb);
void dequantize_q6_k(const void* src, float* dst, int64_t nb);
void dequantize_q8_k(const void* src, float* dst, int64_t nb);
void quantize_q2_k(const float* src, void* dst, int64_t nb, const float* w = nullptr);
void quantize_q3_k(const float* src, void* dst, int64_t nb, const float* w = nullptr);
void quantize_q4_k(const float* src, void* dst, int64_t nb, const float* w = nullptr);
void quantize_q5_k(const float* src, void* dst, int64_t nb, const float* w = nullptr);
void quantize_q6_k(const float* src, void* dst, int64_t nb, const float* w = nullptr);
void quantize_q8_k(const float* src, void* dst, int64_t nb);

// quants_fp4.cpp
void dequantize_mxfp4(const void* src, float* dst, int64_t nb);
void dequantize_nvfp4(const void* src, float* dst, int64_t nb);
void quantize_mxfp4(const float* src, void* dst, int64_t nb);
void quantize_nvfp4(const float* src, void* dst, int64_t nb);

// quants_fit.cpp: scale searches shared by the K-quant quantizers.

// Fits x[i] ~= scale * L[i] - min with L[i] in 0..nmax, scale >= 0, min >= 0 (the offset may only
// lower values, as the unsigned K-quant mins require). Minimises the squared error over a small
// grid of candidate scales, each followed by an exact least-squares refit. Returns the scale.
// `w` (may be null: all 1): per-element weights of the squared error (importance); weights all
// zero over the block count as null.
float fit_scale_min(const float* x, int n, int nmax, uint8_t* L, float* min, const float* w = nullptr);

// Fits x[i] ~= scale * L[i] with L[i] in -nneg..npos (nneg = npos + 1, as 2^k-level signed
// grids are asymmetric); scale may be negative so the largest magnitude can use -nneg.
float fit_scale_symmetric(const float* x, int n, int nneg, int npos, int8_t* L, const float* w = nullptr);

// w, or null when it is null or has no positive entry among its n.
const float* usable_weights(const float* w, int n);

// Round half to even (as the SIMD cvtps instructions do); NaN maps to 0; clamps to [lo, hi].
int round_clamp(float v, int lo, int hi);

}  // namespace fulgur::detail
