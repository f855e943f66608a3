#include "kernels/swiglu_oai.h"

#include <algorithm>
#include <cmath>

namespace fulgur::kernels {

void swiglu_oai(const float* gate, const float* up, float* out, int64_t n, float alpha, float limit) {
  for (int64_t i = 0; i < n; ++i) {
    const double g = std::min(gate[i], limit);
    const double u = std::clamp(up[i], -limit, limit);
    out[i] = static_cast<float>(g / (1.0 + std::exp(-alpha * g)) * (u + 1.0));
  }
}

}  // namespace fulgur::kernels
