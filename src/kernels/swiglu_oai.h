// gpt-oss's clamped SwiGLU ("swiglu_oai", ggml's GGML_GLU_OP_SWIGLU_OAI): the experts' activation.
#pragma once

#include <cstdint>

namespace fulgur::kernels {

// g = min(gate, limit), u = clamp(up, −limit, limit), out = g·sigmoid(alpha·g)·(u + 1); gpt-oss
// uses alpha 1.702, limit 7. [n] f32, out may alias an input. Scalar only, in double, so it is
// its own reference: it runs on n·k·F_exp values per MoE layer, beside matrix products of
// n·k·F_exp·E weights.
inline constexpr float kSwiGluOaiAlpha = 1.702f, kSwiGluOaiLimit = 7.0f;
void swiglu_oai(const float* gate, const float* up, float* out, int64_t n, float alpha = kSwiGluOaiAlpha,
                float limit = kSwiGluOaiLimit);

}  // namespace fulgur::kernels
