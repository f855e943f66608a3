// The RNG, Distribution bookkeeping, sampling fidelity (chi-square) and the rejection-sampling
// residual, including the identity that makes the speculative verifier lossless.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "chi_square.h"
#include "core/error.h"
#include "sampling/distribution.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"

namespace fulgur {
namespace {

Distribution make(std::vector<float> probs) {
  Distribution d;
  d.assign_dense(probs);
  return d;
}

// Pearson's statistic of `counts` against `d` (a draw of probability 0 makes it infinite).
testing_support::ChiSquare chi_square(const std::vector<int64_t>& counts, const Distribution& d) {
  std::vector<double> prob(static_cast<size_t>(d.n_vocab()));
  for (int32_t id = 0; id < d.n_vocab(); ++id) prob[static_cast<size_t>(id)] = d.prob(id);
  testing_support::ChiSquare c;
  c.add(prob, counts);
  return c;
}

// The tests' chi-square critical values (tests/chi_square.h) against published tables.
TEST(ChiSquareHelper, CriticalValuesMatchTables) {
  struct Row {
    int df;
    double tail, value;
  };
  for (const Row& r : {Row{1, 1e-3, 10.828}, Row{2, 1e-3, 13.816}, Row{7, 1e-3, 24.322}, Row{10, 1e-3, 29.588},
                       Row{30, 1e-2, 50.892}, Row{100, 1e-3, 149.449}, Row{1, 0.05, 3.841}}) {
    EXPECT_NEAR(testing_support::chi_square_critical(r.df, r.tail), r.value, 2e-3) << "df " << r.df << ", tail " << r.tail;
  }
}

TEST(Rng, KnownStream) {
  // xoshiro256** seeded by splitmix64; values computed independently (Python big integers).
  Rng rng(0);
  EXPECT_EQ(rng.next_u64(), 0x99ec5f36cb75f2b4ull);
  EXPECT_EQ(rng.next_u64(), 0xbf6e1f784956452aull);
  EXPECT_EQ(rng.next_u64(), 0x1a5f849d4933e6e0ull);
  Rng other(12345);
  EXPECT_EQ(other.next_u64(), 0xbe6a36374160d49bull);
}

TEST(Rng, UniformRangeAndMean) {
  Rng rng(99);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    const double u = rng.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.005);  // sd of the mean is 0.0009
  Rng a(5), b(5);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.next_u64(), b.next_u64());
  a.reseed(5);
  Rng c(5);
  EXPECT_EQ(a.next_u64(), c.next_u64());
}

TEST(Distribution, LookupsAndBookkeeping) {
  Distribution d(6);
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(d.top(), -1);
  d.push(4, 3.0f);
  d.push(1, 1.0f);
  EXPECT_DOUBLE_EQ(d.normalize(), 4.0);
  EXPECT_FLOAT_EQ(d.prob(4), 0.75f);
  EXPECT_FLOAT_EQ(prob(d, 1), 0.25f);
  EXPECT_EQ(d.prob(0), 0.0f);
  EXPECT_EQ(d.prob(-1), 0.0f);
  EXPECT_EQ(d.prob(6), 0.0f);
  EXPECT_EQ(d.top(), 4);

  Distribution copy(6);
  copy.set_one_hot(2);
  copy = d;  // clears the old support
  EXPECT_EQ(copy.prob(2), 0.0f);
  EXPECT_FLOAT_EQ(copy.prob(4), 0.75f);
  EXPECT_EQ(copy.size(), 2);
  d.clear();
  EXPECT_EQ(d.prob(4), 0.0f);
  EXPECT_FLOAT_EQ(copy.prob(4), 0.75f);  // a deep copy

  const Distribution dense = make({0.0f, 2.0f, -1.0f, NAN, 2.0f});
  EXPECT_EQ(dense.size(), 2);
  EXPECT_FLOAT_EQ(dense.prob(1), 0.5f);
  EXPECT_EQ(dense.top(), 1);  // tie -> lower id
  EXPECT_THROW(make({0.0f, -1.0f}), Error);
}

TEST(Distribution, SampleMatchesDistributionChiSquare) {
  // A sampler-produced distribution with 8 survivors of 12 tokens.
  const std::vector<float> logits = {1.0f, 0.2f, -0.5f, 2.0f, 0.0f, 1.5f, -3.0f, -6.0f,
                                     0.7f, 1.1f, -0.1f, 0.4f};
  SamplerParams p;
  p.temperature = 1.0f;
  p.top_k = 8;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  const Distribution d = compute_distribution(logits.data(), 12, p);
  ASSERT_EQ(d.size(), 8);
  constexpr int kDraws = 20000;
  Rng rng(2024);
  std::vector<int64_t> counts(12, 0);
  for (int i = 0; i < kDraws; ++i) ++counts[sample(d, rng)];
  const testing_support::ChiSquare c = chi_square(counts, d);
  EXPECT_EQ(c.df, 7);
  EXPECT_LT(c.stat, c.critical()) << "chi-square " << c.stat;
  // Negative control: the same draws against the distribution at another temperature fail.
  p.temperature = 1.3f;
  const testing_support::ChiSquare other = chi_square(counts, compute_distribution(logits.data(), 12, p));
  EXPECT_GT(other.stat, other.critical());
}

TEST(Distribution, SampleEdgeCases) {
  Rng rng(1);
  EXPECT_EQ(sample(Distribution(5), rng), -1);
  Distribution one(5);
  one.set_one_hot(3);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(sample(one, rng), 3);
}

TEST(Residual, MaxOfDifferenceNormalised) {
  const Distribution p = make({0.5f, 0.3f, 0.2f, 0.0f});
  const Distribution q = make({0.2f, 0.5f, 0.1f, 0.2f});
  const Distribution r = residual(p, q);  // max(p - q, 0) = {0.3, 0, 0.1, 0}
  EXPECT_EQ(r.size(), 2);
  EXPECT_NEAR(r.prob(0), 0.75, 1e-6);
  EXPECT_EQ(r.prob(1), 0.0f);
  EXPECT_NEAR(r.prob(2), 0.25, 1e-6);
  EXPECT_EQ(r.prob(3), 0.0f);
}

TEST(Residual, EmptyFallsBackToP) {
  const Distribution p = make({0.5f, 0.5f, 0.0f});
  Distribution r = residual(p, p);
  EXPECT_EQ(r.size(), 2);
  EXPECT_FLOAT_EQ(r.prob(0), 0.5f);
  // q >= p everywhere (for proper distributions only when q == p; here a uniform q built from
  // other weights): no mass left, so p itself.
  const Distribution uniform = make({1.0f, 1.0f, 1.0f});
  r = residual(make({2.0f, 2.0f, 2.0f}), uniform);
  EXPECT_EQ(r.size(), 3);
  for (int32_t id = 0; id < 3; ++id) EXPECT_FLOAT_EQ(r.prob(id), 1.0f / 3);
  // Wherever p exceeds q the residual has mass, even when q covers p's support.
  r = residual(make({0.5f, 0.5f, 0.0f}), uniform);
  EXPECT_NEAR(r.prob(0), 0.5, 1e-6);
  EXPECT_NEAR(r.prob(1), 0.5, 1e-6);
  EXPECT_EQ(r.prob(2), 0.0f);
  Distribution out(7);
  out.set_one_hot(6);
  residual(make({1.0f, 0.0f, 0.0f}), make({1.0f}), out);  // one-hot p, identical one-hot q
  EXPECT_EQ(out.n_vocab(), 3);
  EXPECT_EQ(out.prob(0), 1.0f);
  // A q over a smaller vocabulary counts missing ids as 0.
  const Distribution small_q = make({1.0f});
  r = residual(make({0.5f, 0.25f, 0.25f}), small_q);
  EXPECT_EQ(r.prob(0), 0.0f);
  EXPECT_NEAR(r.prob(1), 0.5, 1e-6);
}

// What makes rejection sampling lossless (Leviathan et al. / Chen et al.): a draft d ~ q kept
// with probability min(1, p(d)/q(d)) is emitted with probability min(p, q)(x), and a rejection,
// of probability 1 - sum min(p, q), emits a draw of the residual; together that must be exactly
// p. Checked as an identity over random pairs, including q with support outside p's and p of a
// truncated (top-k) sampler. The verifier's use of it is tested in tests/spec (test_verifier,
// test_spec_sampling), through spec::Verifier.
TEST(Residual, AcceptedDraftsPlusResidualIsP) {
  Rng rng(77);
  for (int trial = 0; trial < 200; ++trial) {
    const int V = 2 + static_cast<int>(rng.next_u64() % 30);
    std::vector<float> pw(V), qw(V);
    for (int i = 0; i < V; ++i) {
      pw[i] = rng.uniform() < 0.3 ? 0.0f : static_cast<float>(rng.uniform());
      qw[i] = rng.uniform() < 0.3 ? 0.0f : static_cast<float>(rng.uniform());
    }
    pw[rng.next_u64() % V] = 1.0f;
    qw[rng.next_u64() % V] = 1.0f;
    const Distribution p = make(pw), q = make(qw), r = residual(p, q);
    double overlap = 0.0;
    for (int i = 0; i < V; ++i) overlap += std::min(p.prob(i), q.prob(i));
    for (int i = 0; i < V; ++i) {
      EXPECT_NEAR(std::min(p.prob(i), q.prob(i)) + (1.0 - overlap) * r.prob(i), p.prob(i), 1e-6)
          << "trial " << trial << ", token " << i;
    }
  }
}

}  // namespace
}  // namespace fulgur
