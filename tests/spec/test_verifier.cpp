// The verifier on hand-made logits: greedy acceptance, penalties seeing the drafts, and a
// chi-square test on a small Markov-chain "model" that every emitted token sequence has exactly
// the target's distribution, for rejection sampling with a q that differs markedly from p and for
// exact-match verification; plus a negative control showing the test catches a wrong q.
#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include "chi_square.h"
#include "core/error.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"
#include "spec/verifier.h"

namespace fulgur {
namespace {

using testing_support::chi_square;
using testing_support::chi_square_critical;

SamplerParams greedy_params() {
  SamplerParams p;
  p.temperature = 0.0f;
  return p;
}

SamplerParams pure_params() {  // temperature 1, no truncation: p = softmax(logits)
  SamplerParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  return p;
}

std::vector<float> logits_with_max(int n_vocab, int32_t best) {
  std::vector<float> l(static_cast<size_t>(n_vocab), 0.0f);
  for (int i = 0; i < n_vocab; ++i) l[static_cast<size_t>(i)] = 0.1f * static_cast<float>(i % 7);
  l[static_cast<size_t>(best)] = 5.0f;
  return l;
}

TEST(Verifier, GreedyAcceptsMatchingPrefixThenEmitsTargetToken) {
  const int V = 16;
  Verifier v(greedy_params(), V);
  Rng rng(1);
  // Target argmaxes per row: 3, 5, 7, 9.
  const auto r0 = logits_with_max(V, 3), r1 = logits_with_max(V, 5), r2 = logits_with_max(V, 7),
             r3 = logits_with_max(V, 9);
  const std::vector<const float*> rows = {r0.data(), r1.data(), r2.data(), r3.data()};
  struct Case {
    std::vector<int32_t> drafts;
    int accepted;
    int32_t next;
  };
  for (const Case& c : {Case{{3, 5, 7}, 3, 9}, Case{{3, 5, 8}, 2, 7}, Case{{3, 4, 7}, 1, 5},
                        Case{{2, 5, 7}, 0, 3}}) {
    std::vector<int32_t> history = {1, 2};
    const VerifyResult r = v.verify(rows, c.drafts, {}, history, rng);
    EXPECT_EQ(r.n_accepted, c.accepted);
    EXPECT_EQ(r.next, c.next);
    std::vector<int32_t> want = {1, 2};
    want.insert(want.end(), c.drafts.begin(), c.drafts.begin() + c.accepted);
    want.push_back(c.next);
    EXPECT_EQ(history, want);
  }
  // No drafts: one plain greedy token.
  std::vector<int32_t> history;
  const VerifyResult r = v.verify(std::span<const float* const>(rows).first(1), {}, {}, history, rng);
  EXPECT_EQ(r.n_accepted, 0);
  EXPECT_EQ(r.next, 3);
  EXPECT_THROW(v.verify(rows, std::vector<int32_t>{1}, {}, history, rng), Error);
}

// Penalties must see d1..di when judging row i, exactly as plain decoding sees the same tokens.
TEST(Verifier, PenaltiesSeeTheAcceptedDrafts) {
  const int V = 8;
  SamplerParams sp = greedy_params();
  sp.repeat_penalty = 2.0f;
  Verifier v(sp, V);
  Rng rng(1);
  std::vector<float> r0(V, 0.0f), r1(V, 0.0f), r2(V, 0.0f);
  r0[3] = 3.0f;
  r1[3] = 3.0f;  // penalised to 1.5 once 3 is in the history ...
  r1[4] = 2.0f;  // ... so 4 wins row 1
  r2[6] = 1.0f;
  const std::vector<const float*> rows = {r0.data(), r1.data(), r2.data()};
  std::vector<int32_t> history = {0};
  const VerifyResult r = v.verify(rows, std::vector<int32_t>{3, 4}, {}, history, rng);
  EXPECT_EQ(r.n_accepted, 2);
  EXPECT_EQ(r.next, 6);
}

// A first-order Markov chain over V tokens stands in for both models: target p(. | prev) and a
// draft q(. | prev) that differs markedly (it favours what the target finds unlikely).
constexpr int kV = 6;
using Table = std::array<std::array<float, kV>, kV>;

Table target_table() {
  Table t{};
  for (int a = 0; a < kV; ++a) {
    float sum = 0;
    for (int b = 0; b < kV; ++b) sum += t[a][b] = 1.0f + static_cast<float>((a * 3 + b * 5) % kV);
    for (int b = 0; b < kV; ++b) t[a][b] /= sum;
  }
  return t;
}

Table draft_table() {
  Table t{};
  for (int a = 0; a < kV; ++a) {
    float sum = 0;
    for (int b = 0; b < kV; ++b) {
      const int rank = (a * 3 + b * 5) % kV;  // the target's weight order, reversed and sharpened
      sum += t[a][b] = std::pow(2.0f, static_cast<float>(kV - 1 - rank));
    }
    for (int b = 0; b < kV; ++b) t[a][b] /= sum;
  }
  return t;
}

enum class Mode { kRejection, kExactMatch, kWrongQ };

// Emits kLen tokens after token 0 through repeated draft (k = 3) + verify steps; returns the
// counts of each kLen-token sequence over n trials, and the exact probabilities.
constexpr int kLen = 3;
void run_markov(Mode mode, int64_t n, std::vector<int64_t>& counts, std::vector<double>& expected) {
  const Table tp = target_table(), tq = draft_table();
  const SamplerParams sp = pure_params();
  // Logit rows log p(. | a); the sampler's own distribution of them is the exact target.
  std::array<std::vector<float>, kV> logits;
  std::array<Distribution, kV> p_dist, q_dist;
  for (int a = 0; a < kV; ++a) {
    logits[a].resize(kV);
    std::vector<float> qw(kV);
    for (int b = 0; b < kV; ++b) {
      logits[a][b] = std::log(tp[a][b]);
      qw[b] = tq[a][b];
    }
    p_dist[a] = compute_distribution(logits[a].data(), kV, sp);
    q_dist[a].assign_dense(qw);
  }
  int cells = 1;
  for (int i = 0; i < kLen; ++i) cells *= kV;
  expected.assign(cells, 0.0);
  for (int c = 0; c < cells; ++c) {
    double prob = 1.0;
    int prev = 0, x = c;
    for (int i = 0; i < kLen; ++i) {
      const int t = x % kV;
      x /= kV;
      prob *= p_dist[prev].prob(t);
      prev = t;
    }
    expected[c] = prob;
  }
  counts.assign(cells, 0);
  Verifier v(sp, kV);
  Rng rng(12345), draft_rng(777);
  std::vector<int32_t> history, drafts;
  std::vector<Distribution> q;
  std::vector<const float*> rows;
  for (int64_t trial = 0; trial < n; ++trial) {
    history.assign(1, 0);
    while (history.size() < 1 + kLen) {
      drafts.clear();
      q.clear();
      rows.assign(1, logits[history.back()].data());
      int32_t prev = history.back();
      for (int i = 0; i < 3; ++i) {
        const int32_t d = sample(q_dist[prev], draft_rng);
        drafts.push_back(d);
        // kWrongQ claims the drafts came from p: the verifier then accepts them all (p/p = 1)
        // and the output follows the draft chain, which the test must detect.
        q.push_back(mode == Mode::kWrongQ ? p_dist[prev] : q_dist[prev]);
        rows.push_back(logits[d].data());
        prev = d;
      }
      if (mode == Mode::kExactMatch) q.clear();
      v.verify(rows, drafts, q, history, rng);
    }
    int cell = 0, mul = 1;
    for (int i = 0; i < kLen; ++i, mul *= kV) cell += history[1 + i] * mul;
    ++counts[cell];
  }
}

TEST(Verifier, RejectionSamplingReproducesTargetDistribution) {
  std::vector<int64_t> counts;
  std::vector<double> expected;
  const int64_t n = 40000;
  run_markov(Mode::kRejection, n, counts, expected);
  int df = 0;
  const double stat = chi_square(expected, counts, n, df);
  EXPECT_GT(df, 100);
  EXPECT_LT(stat, chi_square_critical(df)) << "df " << df;
}

TEST(Verifier, ExactMatchVerificationReproducesTargetDistribution) {
  std::vector<int64_t> counts;
  std::vector<double> expected;
  const int64_t n = 40000;
  run_markov(Mode::kExactMatch, n, counts, expected);
  int df = 0;
  const double stat = chi_square(expected, counts, n, df);
  EXPECT_LT(stat, chi_square_critical(df)) << "df " << df;
}

// Negative control: the same test must reject a verifier fed the wrong q.
TEST(Verifier, ChiSquareDetectsAWrongDraftDistribution) {
  std::vector<int64_t> counts;
  std::vector<double> expected;
  const int64_t n = 40000;
  run_markov(Mode::kWrongQ, n, counts, expected);
  int df = 0;
  const double stat = chi_square(expected, counts, n, df);
  EXPECT_GT(stat, 10 * chi_square_critical(df)) << "df " << df;
}

// A draft with q(d) = 0 (a broken drafter) is never accepted unless p(d) > 0, and rejection of a
// q that equals p is impossible: residual falls back to p.
TEST(Verifier, EdgeCasesOfTheRatioTest) {
  const SamplerParams sp = pure_params();
  Verifier v(sp, 4);
  Rng rng(3);
  std::vector<float> row = {0.0f, 1.0f, 2.0f, 3.0f};
  const Distribution p = compute_distribution(row.data(), 4, sp);
  const std::vector<const float*> rows = {row.data(), row.data()};
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int32_t> history;
    const VerifyResult r = v.verify(rows, std::vector<int32_t>{2}, std::vector<Distribution>{p}, history, rng);
    EXPECT_EQ(r.n_accepted, 1) << "q == p must always accept";
  }
  Distribution q(4);
  q.push(1, 1.0f);  // claims the draft 3 had no probability
  int accepted = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int32_t> history;
    accepted += v.verify(rows, std::vector<int32_t>{3}, std::vector<Distribution>{q}, history, rng).n_accepted;
  }
  EXPECT_EQ(accepted, 200) << "p(d) > 0 = q(d): min(1, p/q) is 1";
}

}  // namespace
}  // namespace fulgur
