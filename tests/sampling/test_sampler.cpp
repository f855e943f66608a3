// Each transform of the sampler chain on hand-made logits, the fixed transform order, penalties
// as llama.cpp defines them, and a brute-force reference of the whole chain on a large vocab.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <vector>

#include "core/error.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"

namespace fulgur {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Only the transform under test is on.
SamplerParams plain(float temperature = 1.0f) {
  SamplerParams p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  return p;
}

std::vector<float> log_of(std::vector<double> probs) {
  std::vector<float> out;
  for (double p : probs) out.push_back(static_cast<float>(std::log(p)));
  return out;
}

std::set<int32_t> support(const Distribution& d) { return {d.ids().begin(), d.ids().end()}; }

void expect_sums_to_one(const Distribution& d) {
  double sum = 0;
  for (float p : d.dense()) sum += p;
  EXPECT_NEAR(sum, 1.0, 1e-6);
}

TEST(Sampler, DefaultsAreLlamaCpp) {
  SamplerParams p;
  EXPECT_FLOAT_EQ(p.temperature, 0.8f);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_FLOAT_EQ(p.top_p, 0.95f);
  EXPECT_FLOAT_EQ(p.min_p, 0.05f);
  EXPECT_FLOAT_EQ(p.repeat_penalty, 1.0f);
  EXPECT_EQ(p.repeat_last_n, 64);
  EXPECT_FALSE(p.penalties_active());
  EXPECT_FALSE(p.greedy());
}

TEST(Sampler, GreedyFunctionTiesAndNans) {
  EXPECT_EQ(greedy(std::vector<float>{1, 3, 2, 3}), 1);
  EXPECT_EQ(greedy(std::vector<float>{NAN, -1, NAN, 0.5f}), 3);
  EXPECT_EQ(greedy(std::vector<float>{-kInf, -kInf}), 0);
}

TEST(Sampler, TemperatureZeroIsOneHotArgmax) {
  const std::vector<float> logits = {0.1f, 2.0f, 2.0f, -1.0f};
  for (float t : {0.0f, -1.0f}) {
    const Distribution d = compute_distribution(logits.data(), 4, plain(t));
    EXPECT_EQ(support(d), (std::set<int32_t>{1}));
    EXPECT_EQ(d.prob(1), 1.0f);
    EXPECT_EQ(d.prob(2), 0.0f);
  }
}

TEST(Sampler, SoftmaxAtTemperature) {
  const std::vector<float> logits = {0.0f, std::log(2.0f)};
  Distribution d = compute_distribution(logits.data(), 2, plain(1.0f));
  EXPECT_NEAR(d.prob(0), 1.0 / 3, 1e-6);
  EXPECT_NEAR(d.prob(1), 2.0 / 3, 1e-6);
  d = compute_distribution(logits.data(), 2, plain(0.5f));  // weights 1 : 4
  EXPECT_NEAR(d.prob(0), 0.2, 1e-6);
  EXPECT_NEAR(d.prob(1), 0.8, 1e-6);
  d = compute_distribution(logits.data(), 2, plain(1e-40f));  // subnormal T: greedy limit
  EXPECT_EQ(d.prob(1), 1.0f);
}

TEST(Sampler, TopK) {
  const std::vector<float> logits = {1, 5, 3, 5, 2};
  SamplerParams p = plain();
  p.top_k = 2;
  Distribution d = compute_distribution(logits.data(), 5, p);
  EXPECT_EQ(support(d), (std::set<int32_t>{1, 3}));
  EXPECT_NEAR(d.prob(1), 0.5, 1e-6);
  EXPECT_NEAR(d.prob(3), 0.5, 1e-6);
  EXPECT_EQ(d.prob(2), 0.0f);
  p.top_k = 3;
  d = compute_distribution(logits.data(), 5, p);
  EXPECT_EQ(support(d), (std::set<int32_t>{1, 2, 3}));
  const double z = 2 * std::exp(5.0) + std::exp(3.0);
  EXPECT_NEAR(d.prob(2), std::exp(3.0) / z, 1e-6);
  EXPECT_EQ(d.ids()[0], 1);  // descending probability, ties by lower id
  EXPECT_EQ(d.ids()[1], 3);
  EXPECT_EQ(d.ids()[2], 2);
  p.top_k = 1;  // a tie at the boundary keeps the lower id
  d = compute_distribution(logits.data(), 5, p);
  EXPECT_EQ(support(d), (std::set<int32_t>{1}));
  p.top_k = 99;  // larger than the vocabulary: off
  EXPECT_EQ(compute_distribution(logits.data(), 5, p).size(), 5);
}

TEST(Sampler, TopP) {
  const auto logits = log_of({0.5, 0.2, 0.15, 0.1, 0.05});
  SamplerParams p = plain();
  p.top_p = 0.75f;  // cum 0.5, 0.7, 0.85 -> three tokens
  Distribution d = compute_distribution(logits.data(), 5, p);
  EXPECT_EQ(support(d), (std::set<int32_t>{0, 1, 2}));
  EXPECT_NEAR(d.prob(0), 0.5 / 0.85, 1e-6);
  EXPECT_NEAR(d.prob(1), 0.2 / 0.85, 1e-6);
  EXPECT_NEAR(d.prob(2), 0.15 / 0.85, 1e-6);
  p.top_p = 0.4f;  // the first token alone reaches it
  EXPECT_EQ(support(compute_distribution(logits.data(), 5, p)), (std::set<int32_t>{0}));
  p.top_p = 0.0f;  // keeps at least one
  EXPECT_EQ(support(compute_distribution(logits.data(), 5, p)), (std::set<int32_t>{0}));
}

TEST(Sampler, MinP) {
  const auto logits = log_of({0.5, 0.2, 0.15, 0.1, 0.05});
  SamplerParams p = plain();
  p.min_p = 0.35f;  // p >= 0.175
  Distribution d = compute_distribution(logits.data(), 5, p);
  EXPECT_EQ(support(d), (std::set<int32_t>{0, 1}));
  EXPECT_NEAR(d.prob(0), 0.5 / 0.7, 1e-6);
  p.min_p = 0.25f;  // p >= 0.125
  EXPECT_EQ(support(compute_distribution(logits.data(), 5, p)), (std::set<int32_t>{0, 1, 2}));
  p.min_p = 1.0f;  // only the top
  EXPECT_EQ(support(compute_distribution(logits.data(), 5, p)), (std::set<int32_t>{0}));
}

// The order is penalties -> top-k -> top-p -> min-p -> temperature; each case below gives a
// different answer under a different order.
TEST(Sampler, TransformOrder) {
  const auto logits = log_of({0.5, 0.3, 0.2});
  SamplerParams p = plain(2.0f);
  p.top_p = 0.75f;  // at T=1: cum 0.5, 0.8 -> {0,1}; at T=2 first it would keep all three
  Distribution d = compute_distribution(logits.data(), 3, p);
  EXPECT_EQ(support(d), (std::set<int32_t>{0, 1}));
  const double a = std::sqrt(0.5), b = std::sqrt(0.3);
  EXPECT_NEAR(d.prob(0), a / (a + b), 1e-6);  // temperature reshapes the survivors

  p = plain();
  p.top_k = 2;  // top-p renormalises over the top-2: 0.625 >= 0.6 -> {0}
  p.top_p = 0.6f;
  EXPECT_EQ(support(compute_distribution(logits.data(), 3, p)), (std::set<int32_t>{0}));
  p.top_k = 0;  // without top-k first: cum 0.5, 0.8 -> {0, 1}
  EXPECT_EQ(support(compute_distribution(logits.data(), 3, p)), (std::set<int32_t>{0, 1}));

  p = plain();
  p.top_p = 0.9f;  // {0,1,2}
  p.min_p = 0.5f;  // then p >= 0.25 -> {0,1}
  EXPECT_EQ(support(compute_distribution(logits.data(), 3, p)), (std::set<int32_t>{0, 1}));

  // Penalties come first: they can change which tokens top-k keeps.
  const std::vector<float> l2 = {3.0f, 2.0f, 1.0f};
  p = plain();
  p.top_k = 1;
  p.repeat_penalty = 2.0f;
  const std::vector<int32_t> hist = {0};
  EXPECT_EQ(support(compute_distribution(l2.data(), 3, p, hist)), (std::set<int32_t>{1}));
}

TEST(Sampler, RepeatPenaltyDividesPositiveMultipliesNegative) {
  const std::vector<float> logits = {2.0f, -2.0f, 1.0f, 0.5f, 0.0f};
  SamplerParams p = plain();
  p.repeat_penalty = 2.0f;
  const std::vector<int32_t> hist = {0, 1, 0, 4};
  const Distribution d = compute_distribution(logits.data(), 5, p, hist);
  // Penalised logits: {1, -4, 1, 0.5, 0}: token 0 counted twice is still penalised once.
  const double w[] = {std::exp(1.0), std::exp(-4.0), std::exp(1.0), std::exp(0.5), 1.0};
  const double z = w[0] + w[1] + w[2] + w[3] + w[4];
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(d.prob(i), w[i] / z, 1e-6) << i;
}

TEST(Sampler, PresenceAndFrequencyPenalties) {
  const std::vector<float> logits = {2.0f, -2.0f, 1.0f};
  SamplerParams p = plain();
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  const std::vector<int32_t> hist = {0, 0, 1};
  const Distribution d = compute_distribution(logits.data(), 3, p, hist);
  // token 0: 2 - 2*0.5 - 0.25 = 0.75; token 1: -2 - 0.5 - 0.25 = -2.75; token 2: 1.
  const double w[] = {std::exp(0.75), std::exp(-2.75), std::exp(1.0)};
  const double z = w[0] + w[1] + w[2];
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(d.prob(i), w[i] / z, 1e-6) << i;
}

TEST(Sampler, PenaltyWindowAndGreedy) {
  const std::vector<float> logits = {3.0f, 2.9f, 0.0f};
  SamplerParams p = plain(0.0f);
  p.repeat_penalty = 1.1f;
  const std::vector<int32_t> hist = {0, 2, 7777, -3};  // out-of-range ids are ignored
  Sampler s(p, 3);
  EXPECT_EQ(s.distribution(logits.data(), hist).top(), 1);  // 3/1.1 < 2.9
  p.repeat_last_n = 3;  // window {2, 7777, -3}: token 0 no longer penalised
  EXPECT_EQ(compute_distribution(logits.data(), 3, p, hist).top(), 0);
  p.repeat_last_n = 0;  // off
  EXPECT_EQ(compute_distribution(logits.data(), 3, p, hist).top(), 0);
  p.repeat_last_n = -1;  // whole history
  EXPECT_EQ(compute_distribution(logits.data(), 3, p, hist).top(), 1);
  // The count buffer is clean after a call: no history, no penalty.
  EXPECT_EQ(s.distribution(logits.data(), {}).top(), 0);
}

TEST(Sampler, NonFiniteLogits) {
  SamplerParams p;  // defaults
  std::vector<float> logits = {NAN, 1.0f, -kInf, 0.5f};
  Distribution d = compute_distribution(logits.data(), 4, p);
  EXPECT_EQ(d.prob(0), 0.0f);
  EXPECT_EQ(d.prob(2), 0.0f);
  expect_sums_to_one(d);
  logits = {-kInf, -kInf, -kInf};
  EXPECT_EQ(compute_distribution(logits.data(), 3, p).top(), 0);
  logits = {0.0f, kInf, 1.0f};
  d = compute_distribution(logits.data(), 3, p);
  EXPECT_EQ(d.prob(1), 1.0f);
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  EXPECT_EQ(compute_distribution(logits.data(), 3, p).prob(1), 1.0f);
}

TEST(Sampler, InvalidParamsNameTheField) {
  SamplerParams p;
  p.top_p = 1.5f;
  try {
    Sampler s(p, 10);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("top_p 1.5"), std::string::npos) << e.what();
  }
  p = SamplerParams();
  p.repeat_penalty = 0.0f;
  EXPECT_THROW(Sampler(p, 10), Error);
  p = SamplerParams();
  p.repeat_last_n = -2;
  EXPECT_THROW(Sampler(p, 10), Error);
  EXPECT_THROW(Sampler(SamplerParams(), 0), Error);
}

// Literal transcription of the chain (full sort, float softmax per step) as the oracle.
std::vector<double> reference_chain(std::vector<float> l, const SamplerParams& p) {
  const int n = static_cast<int>(l.size());
  std::vector<int> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](int a, int b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
  if (p.top_k > 0 && p.top_k < n) idx.resize(p.top_k);
  if (p.top_p < 1.0f) {
    double z = 0;
    for (int i : idx) z += std::exp(double(l[i]) - l[idx[0]]);
    double cum = 0;
    for (size_t j = 0; j < idx.size(); ++j) {
      cum += std::exp(double(l[idx[j]]) - l[idx[0]]) / z;
      if (cum >= p.top_p) {
        idx.resize(j + 1);
        break;
      }
    }
  }
  if (p.min_p > 0.0f) {
    const float thr = l[idx[0]] + std::log(p.min_p);
    std::erase_if(idx, [&](int i) { return l[i] < thr; });
  }
  std::vector<double> probs(n, 0.0);
  double z = 0;
  for (int i : idx) z += probs[i] = std::exp((double(l[i]) - l[idx[0]]) / p.temperature);
  for (double& x : probs) x /= z;
  return probs;
}

TEST(Sampler, MatchesBruteForceChainOnLargeVocab) {
  constexpr int kVocab = 50000;
  Rng rng(7);
  std::vector<float> logits(kVocab);  // [n_vocab]
  for (float& x : logits) x = static_cast<float>(rng.uniform() * 12.0 - 6.0);
  struct Case { float t; int k; float top_p, min_p; };
  const Case cases[] = {{0.8f, 40, 0.95f, 0.05f}, {1.0f, 0, 0.9f, 0.0f}, {1.3f, 0, 1.0f, 0.2f},
                        {0.7f, 1000, 0.5f, 0.0f}, {1.0f, 0, 0.99f, 0.01f}, {2.0f, 5, 1.0f, 0.0f}};
  for (const Case& c : cases) {
    SamplerParams p = plain(c.t);
    p.top_k = c.k;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    Sampler s(p, kVocab);
    const Distribution& d = s.distribution(logits.data());
    const std::vector<double> ref = reference_chain(logits, p);
    int n_ref = 0;
    for (int i = 0; i < kVocab; ++i) {
      n_ref += ref[i] > 0;
      ASSERT_NEAR(d.prob(i), ref[i], 1e-6) << "token " << i << " T " << c.t << " k " << c.k;
    }
    EXPECT_EQ(d.size(), n_ref);
    expect_sums_to_one(d);
  }
}

TEST(Sampler, SeededReproducibility) {
  constexpr int kVocab = 1000;
  Rng init(3);
  std::vector<float> logits(kVocab);  // [n_vocab]
  for (float& x : logits) x = static_cast<float>(init.uniform() * 8.0);
  SamplerParams p;
  p.top_k = 0;
  p.min_p = 0.0f;
  Sampler s(p, kVocab);
  auto run = [&](uint64_t seed) {
    Rng rng(seed);
    std::vector<int32_t> out;
    for (int i = 0; i < 200; ++i) out.push_back(s.sample(logits.data(), {}, rng));
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

}  // namespace
}  // namespace fulgur
