#include <algorithm>

#include "model/layers/layers.h"

namespace fulgur {

void block_conv(const ForwardPass& p, const BlockConvWeights& w, const float* delta, int side,
                const float* y, float* out) {
  const int64_t E = p.desc->n_embd, K = p.desc->block_conv_kernel, g = p.desc->block_conv_group;
  const int64_t G = E / g;
  for (int64_t gi = 0; gi < p.n_groups; ++gi) {
    const std::vector<int32_t>& rows = p.groups[gi].rows;
    for (int64_t t = 0; t < static_cast<int64_t>(rows.size()); ++t) {
      const int64_t r = rows[static_cast<size_t>(t)];
      const float* d = delta + r * 2 * K * G + side * K * G;  // [K][G]
      float* o = out + r * E;
      std::fill(o, o + E, 0.0f);
      for (int64_t tau = 0; tau < K && tau <= t; ++tau) {
        const float* base = w.base + (side * K + tau) * E;
        const float* yr = y + rows[static_cast<size_t>(t - tau)] * E;
        for (int64_t c = 0; c < E; ++c) o[c] += (base[c] + d[tau * G + c / g]) * yr[c];
      }
    }
  }
}

}  // namespace fulgur
