// LayerNorm without bias (ggml_norm, then the gain; llama.cpp's LLM_NORM):
// y = (x - mean(x)) / sqrt(var(x) + eps) * weight, the variance over `dim` (not dim - 1).
// x: [n_rows][x_stride] f32, the first `dim` of each row used; weight: [dim] f32 or nullptr
// (= all ones); y: [n_rows][y_stride] f32, y == x allowed. Plain code only: it normalises one
// row per MTP draft step (Nemotron-H's final_layernorm), far from any hot loop, so it has no
// SIMD twin to check. Throws fulgur::Error when dim < 1.
#pragma once

#include <cstdint>

namespace fulgur::kernels {

void layer_norm(const float* x, const float* weight, float eps, float* y, int64_t n_rows, int64_t dim,
                int64_t x_stride, int64_t y_stride);

}  // namespace fulgur::kernels
