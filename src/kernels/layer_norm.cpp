#include "kernels/layer_norm.h"

#include <cmath>

#include "core/error.h"

namespace fulgur::kernels {

void layer_norm(const float* x, const float* weight, float eps, float* y, int64_t n_rows, int64_t dim,
                int64_t x_stride, int64_t y_stride) {
  FULGUR_CHECK(dim > 0, "layer_norm: dim = ", dim, ", expected > 0");
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * x_stride;
    float* yr = y + r * y_stride;
    double sum = 0.0;
    for (int64_t i = 0; i < dim; ++i) sum += xr[i];
    const double mean = sum / static_cast<double>(dim);
    double ss = 0.0;
    for (int64_t i = 0; i < dim; ++i) ss += (xr[i] - mean) * (xr[i] - mean);
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(dim) + eps);
    for (int64_t i = 0; i < dim; ++i) {
      const double w = weight != nullptr ? weight[i] : 1.0;
      yr[i] = static_cast<float>((xr[i] - mean) * inv * w);
    }
  }
}

}  // namespace fulgur::kernels
