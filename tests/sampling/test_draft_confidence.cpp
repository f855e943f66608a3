// draft_confidence: llama.cpp's p_min measure, the top probability renormalised over the 10
// largest logits, against a sort-everything reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "sampling/draft_confidence.h"

namespace fulgur {
namespace {

double reference(std::vector<float> x) {
  std::sort(x.begin(), x.end(), std::greater<float>());
  x.resize(std::min<size_t>(x.size(), 10));
  double z = 0;
  for (float v : x) z += std::exp(static_cast<double>(v) - x[0]);
  return 1.0 / z;
}

TEST(DraftConfidence, TopTenRenormalised) {
  std::mt19937 rng(5);
  for (int n : {1, 2, 9, 10, 11, 37, 1000}) {
    for (float spread : {0.1f, 3.0f, 30.0f}) {
      std::vector<float> x(static_cast<size_t>(n));
      for (float& v : x) v = spread * (static_cast<float>(rng() % 20001) / 10000.0f - 1.0f);
      EXPECT_NEAR(draft_confidence(x.data(), n), reference(x), 1e-6) << n << " " << spread;
    }
  }
  // Ties and repeated maxima count once each.
  const std::vector<float> ties(20, 1.0f);
  EXPECT_NEAR(draft_confidence(ties.data(), 20), 0.1, 1e-7);
}

TEST(DraftConfidence, DiffersFromTheFullSoftmax) {
  // One clear winner among many small logits: 1/(1 + 9e^-2) over the top 10, far above the
  // full softmax's 1/(1 + 999e^-2).
  std::vector<float> x(1000, 0.0f);
  x[3] = 2.0f;
  EXPECT_NEAR(draft_confidence(x.data(), 1000), 1.0 / (1.0 + 9.0 * std::exp(-2.0)), 1e-6);
}

TEST(DraftConfidence, NonFiniteLogits) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {-inf, -inf, 0.5f, -inf};  // reduced vocabulary scattered into -inf
  EXPECT_FLOAT_EQ(draft_confidence(x.data(), 4), 1.0f);
  x = {-inf, -inf};
  EXPECT_FLOAT_EQ(draft_confidence(x.data(), 2), 1.0f);
  EXPECT_FLOAT_EQ(draft_confidence(x.data(), 0), 1.0f);
}

}  // namespace
}  // namespace fulgur
