#include "convert/mxfp4_checkpoint.h"

#include <cmath>

namespace fulgur {
namespace {

// E2M1 magnitudes by code & 7.
constexpr float kE2m1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

}  // namespace

void repack_mxfp4_row(const uint8_t* blocks, const uint8_t* scales, int64_t cols, uint8_t* out) {
  for (int64_t b = 0; b < cols / 32; ++b, out += 17) {
    const uint8_t* src = blocks + b * 16;  // the block's 32 codes, two per byte in element order
    auto code = [src](int i) { return (src[i / 2] >> (4 * (i % 2))) & 0xF; };
    out[0] = scales[b];
    for (int j = 0; j < 16; ++j) out[1 + j] = static_cast<uint8_t>(code(j) | (code(j + 16) << 4));
  }
}

void dequantize_mxfp4_checkpoint(const uint8_t* blocks, const uint8_t* scales, int64_t e0, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t e = e0 + i;
    const int code = (blocks[e / 2] >> (4 * (e % 2))) & 0xF;
    const float magnitude = std::ldexp(kE2m1[code & 7], static_cast<int>(scales[e / 32]) - 127);
    out[i] = (code & 8) ? -magnitude : magnitude;
  }
}

}  // namespace fulgur
