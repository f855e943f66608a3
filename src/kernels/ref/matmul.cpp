// The scalar matmul oracle: dequantize each weight row with the tensor module's reference
// decoder and accumulate every dot product in double, so the result is the exact product of the
// dequantized weights and the f32 activations up to one final rounding (for cols far below
// 2^29). Threads split the output rows; each output is computed the same way whatever the split.
#include <vector>

#include "core/error.h"
#include "kernels/matmul.h"
#include "kernels/quant_act.h"
#include "tensor/quants.h"

namespace fulgur::kernels {

void matmul_ref(const WeightView& w, const float* x, int64_t n, int64_t ldx, float* y,
                int64_t ldy, ThreadPool* pool) {
  check_matmul_args(w, x, n, ldx, y, ldy);
  FULGUR_CHECK(w.layout == WeightLayout::kRows, "matmul_ref: reads the file's row-major layout, "
               "not packed weights");
  if (n == 0 || w.rows == 0) return;
  auto job = [&](int ti, int nt) {
    // [cols] f32: one dequantized weight row; grows once per thread, never shrinks.
    thread_local std::vector<float> wrow;
    if (wrow.size() < static_cast<size_t>(w.cols)) wrow.resize(static_cast<size_t>(w.cols));
    const int64_t o0 = w.rows * ti / nt, o1 = w.rows * (ti + 1) / nt;
    for (int64_t o = o0; o < o1; ++o) {
      const auto* src = static_cast<const uint8_t*>(w.data) + o * static_cast<int64_t>(w.row_stride);
      dequantize_row(w.type, src, wrow.data(), w.cols);
      for (int64_t r = 0; r < n; ++r) {
        const float* xr = x + r * ldx;
        double acc = 0.0;
        for (int64_t i = 0; i < w.cols; ++i) acc += static_cast<double>(xr[i]) * wrow[i];
        y[r * ldy + o] = static_cast<float>(acc * w.scale);
      }
    }
  };
  if (pool != nullptr)
    pool->run(job);
  else
    job(0, 1);
}

}  // namespace fulgur::kernels
