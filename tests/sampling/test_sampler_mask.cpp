// A token mask (constrained generation) sets the logits of the tokens it does not allow to
// -inf before every transform: greedy is the argmax of the allowed tokens, and a sampled
// distribution is the unmasked one restricted to them and renormalised.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sampling/sampler.h"

namespace fulgur {
namespace {

std::vector<uint64_t> mask_of(int n_vocab, std::initializer_list<int> ids) {
  std::vector<uint64_t> m((static_cast<size_t>(n_vocab) + 63) / 64, 0);
  for (int id : ids) m[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
  return m;
}

TEST(SamplerMask, GreedyIsTheArgmaxOfTheAllowedTokens) {
  std::vector<float> logits(100);
  for (int i = 0; i < 100; ++i) logits[static_cast<size_t>(i)] = static_cast<float>(i % 37);
  SamplerParams sp;
  sp.temperature = 0.0f;
  Sampler s(sp, 100);
  EXPECT_EQ(s.distribution(logits.data()).top(), 36);
  const auto m = mask_of(100, {3, 70, 71, 99});
  EXPECT_EQ(s.distribution(logits.data(), {}, m).top(), 71);  // 71 % 37 = 34 is the best allowed
}

TEST(SamplerMask, SampledDistributionIsRestrictedAndRenormalised) {
  std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f, 3.0f, 0.0f, 2.5f, 1.5f};
  SamplerParams sp;
  sp.temperature = 1.0f;
  sp.top_k = 0;
  sp.top_p = 1.0f;
  sp.min_p = 0.0f;
  Sampler s(sp, 8);
  const auto m = mask_of(8, {1, 3, 6});
  const Distribution& d = s.distribution(logits.data(), {}, m);
  const double z = std::exp(2.0) + std::exp(-1.0) + std::exp(2.5);
  EXPECT_EQ(d.size(), 3);
  EXPECT_NEAR(d.prob(1), std::exp(2.0) / z, 1e-6);
  EXPECT_NEAR(d.prob(3), std::exp(-1.0) / z, 1e-6);
  EXPECT_NEAR(d.prob(6), std::exp(2.5) / z, 1e-6);
  EXPECT_EQ(d.prob(4), 0.0f);
}

}  // namespace
}  // namespace fulgur
