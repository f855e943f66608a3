#include "sampling/draft_confidence.h"

#include <cmath>

namespace fulgur {

float draft_confidence(const float* logits, int64_t n) {
  // The k largest, kept sorted descending in a small array: one pass, no allocation.
  float top[kDraftConfidenceTopK];  // [k] largest logits seen so far, descending
  int m = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float x = logits[i];
    if (m == kDraftConfidenceTopK && !(x > top[m - 1])) continue;
    int j = m < kDraftConfidenceTopK ? m++ : m - 1;
    while (j > 0 && top[j - 1] < x) {
      top[j] = top[j - 1];
      --j;
    }
    top[j] = x;
  }
  if (m == 0 || !std::isfinite(top[0])) return 1.0f;
  double z = 0.0;
  for (int j = 0; j < m; ++j) z += std::exp(static_cast<double>(top[j]) - top[0]);
  return static_cast<float>(1.0 / z);
}

}  // namespace fulgur
