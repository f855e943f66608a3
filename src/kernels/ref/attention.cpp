// Scalar oracle of attention: for each (row, head), gather the visible cells in list order,
// three-pass softmax in double, weighted sum of V. Allocation is fine here (tests only).
#include <cmath>
#include <vector>

#include "core/fp16.h"
#include "kernels/attention.h"

namespace fulgur::kernels {

void attention_ref(const AttentionArgs& a) {
  const int64_t group = a.n_heads / a.n_kv_heads;
  const int64_t d = a.head_dim;
  const double scale = a.scale != 0.0f ? a.scale : 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<double> scores(static_cast<size_t>(a.n_cells));  // [n_cells]
  std::vector<double> acc(static_cast<size_t>(d));              // [head_dim]
  for (int64_t r = 0; r < a.n_rows; ++r) {
    for (int64_t h = 0; h < a.n_heads; ++h) {
      const int64_t g = h / group;
      const float* q = a.q + r * a.q_row_stride + h * d;
      double mx = -INFINITY;
      for (int64_t j = 0; j < a.n_cells; ++j) {
        const bool same_seq =
            a.cell_seq == nullptr || ((a.cell_seq[j] >> a.row_seq[r]) & 1u) != 0;
        const bool causal_ok = a.mask == AttnMask::kFull || a.cell_pos[j] <= a.row_pos[r];
        const bool window_ok =
            a.window == 0 ||
            static_cast<int64_t>(a.row_pos[r]) - a.cell_pos[j] < static_cast<int64_t>(a.window);
        if (!(same_seq && causal_ok && window_ok)) {
          scores[j] = -INFINITY;
          continue;
        }
        const uint16_t* kc = a.k + kv_row(a, g, a.cells[j]);
        double dot = 0.0;
        for (int64_t i = 0; i < d; ++i) dot += static_cast<double>(q[i]) * f16_to_f32(kc[i]);
        scores[j] = dot * scale;
        mx = std::fmax(mx, scores[j]);
      }
      float* out = a.out + r * a.out_row_stride + h * d;
      const bool has_sink = a.sinks != nullptr;
      if (mx == -INFINITY) {  // no visible cell: zeros, with or without a sink
        for (int64_t i = 0; i < d; ++i) out[i] = 0.0f;
        continue;
      }
      if (has_sink) mx = std::fmax(mx, static_cast<double>(a.sinks[h]));
      double sum = has_sink ? std::exp(a.sinks[h] - mx) : 0.0;
      for (int64_t i = 0; i < d; ++i) acc[i] = 0.0;
      for (int64_t j = 0; j < a.n_cells; ++j) {
        if (scores[j] == -INFINITY) continue;
        const double p = std::exp(scores[j] - mx);
        sum += p;
        const uint16_t* vc = a.v + kv_row(a, g, a.cells[j]);
        for (int64_t i = 0; i < d; ++i) acc[i] += p * f16_to_f32(vc[i]);
      }
      for (int64_t i = 0; i < d; ++i) out[i] = static_cast<float>(acc[i] / sum);
    }
  }
}

}  // namespace fulgur::kernels
