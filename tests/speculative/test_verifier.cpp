// The verifier on hand-made logits: greedy acceptance, penalties seeing the drafts, and
// chi-square tests on a small Markov-chain "model" that every emitted token (accepted drafts,
// corrections and bonus tokens, at every index of a step) has exactly the target's distribution,
// for rejection sampling with a close and a far q and for exact-match verification; plus negative
// controls showing that the tests catch the bugs a verifier is likely to have.
#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include "chi_square.h"
#include "core/error.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"
#include "speculative/verifier.h"

namespace fulgur {
namespace {

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

// A first-order Markov chain over kV tokens stands in for both models: the target p(. | prev)
// (weights 2^0..2^5 in a context-dependent order), and two drafts: q close to p (p at a third of
// its temperature: 63 % of the drafts survive rejection sampling, 47 % exact matching) and q far
// from p (it reverses the target's order: 22 % survive, the residual does most of the work).
constexpr int kV = 6;
constexpr int kMaxDraft = 4;  // drafts per step: 1..kMaxDraft, varied step by step
using Table = std::array<std::array<double, kV>, kV>;

Table normalised(const Table& w) {
  Table t = w;
  for (auto& row : t) {
    double sum = 0;
    for (double x : row) sum += x;
    for (double& x : row) x /= sum;
  }
  return t;
}

Table target_table() {
  Table t{};
  for (int a = 0; a < kV; ++a)
    for (int b = 0; b < kV; ++b) t[a][b] = std::pow(2.0, (a * 3 + b * 5) % kV);
  return normalised(t);
}

Table close_draft_table() {
  Table t = target_table();
  for (auto& row : t)
    for (double& x : row) x = x * x * x;
  return normalised(t);
}

Table far_draft_table() {
  Table t{};
  for (int a = 0; a < kV; ++a)
    for (int b = 0; b < kV; ++b) t[a][b] = std::pow(2.0, kV - 1 - (a * 3 + b * 5) % kV);
  return normalised(t);
}

enum class DraftKind {
  kCloseQ,      // drafts from the close q, verified by rejection sampling with that q
  kFarQ,        // drafts from the far q, rejection sampling
  kExactMatch,  // drafts from the close q, verified without q (exact match)
};

// Bugs planted around the real Verifier, to show that the statistic below catches them (the
// mutation check, scripts/mutants.sh, plants the same bugs in the verifier's source).
enum class Plant {
  kNone,
  kArgmaxBonus,         // the token after k accepted drafts is the argmax of p_k, not a sample
  kResidualIsP,         // after a rejection, sample p instead of normalize(max(p - q, 0))
  kResampleOnMismatch,  // exact match: on a mismatch emit a fresh sample of p, not the sample
  kClaimQIsP,           // the drafter claims its drafts were drawn from p
};

// Every token emitted, tallied by its index in the step that emitted it (0 = the first token
// after the anchor; index i > 0 exists only when drafts 1..i were accepted) and its context:
// counts[i][prev][token]. Whatever the drafts and k, token i of a step is distributed as
// p(. | prev), so each (i, prev) row is one multinomial sample of p(. | prev).
struct MarkovRun {
  std::array<std::array<std::array<int64_t, kV>, kV>, kMaxDraft + 1> counts{};
  // Drafts at position i that were verified (all before them accepted), and kept.
  std::array<int64_t, kMaxDraft> reached_at{}, accepted_at{};
  std::array<int64_t, kMaxDraft + 1> bonus_at{}, corrections_at{};  // by index in the step

  testing_support::ChiSquare at_index(int i, const Table& p) const {
    testing_support::ChiSquare c;
    for (int a = 0; a < kV; ++a) {
      c.add(std::vector<double>(p[a].begin(), p[a].end()),
            std::vector<int64_t>(counts[i][a].begin(), counts[i][a].end()));
    }
    return c;
  }
  testing_support::ChiSquare total(const Table& p) const {
    testing_support::ChiSquare c;
    for (int i = 0; i <= kMaxDraft; ++i) {
      const testing_support::ChiSquare ci = at_index(i, p);
      c.stat += ci.stat;
      c.df += ci.df;
      c.n += ci.n;
    }
    return c;
  }
};

MarkovRun run_markov(DraftKind kind, Plant plant, int64_t n_steps) {
  const Table tp = target_table();
  const Table tq = kind == DraftKind::kFarQ ? far_draft_table() : close_draft_table();
  const SamplerParams sp = pure_params();
  // Logit rows log p(. | a); the sampler's own distribution of them is the exact target.
  std::array<std::vector<float>, kV> logits;
  std::array<Distribution, kV> p_dist, q_dist;
  for (int a = 0; a < kV; ++a) {
    std::vector<float> qw(kV);
    for (int b = 0; b < kV; ++b) {
      logits[a].push_back(static_cast<float>(std::log(tp[a][b])));
      qw[b] = static_cast<float>(tq[a][b]);
    }
    p_dist[a] = compute_distribution(logits[a].data(), kV, sp);
    q_dist[a].assign_dense(qw);
  }
  Verifier v(sp, kV);
  Rng rng(12345), draft_rng(777), plant_rng(99);
  MarkovRun run;
  std::vector<int32_t> history, drafts;
  std::vector<Distribution> q;
  std::vector<const float*> rows;
  for (int64_t step = 0; step < n_steps; ++step) {
    // Chains of ~32 tokens from a random start (the verifier's history stays short).
    if (history.empty() || history.size() > 32) history.assign(1, static_cast<int32_t>(draft_rng.next_u64() % kV));
    const int k = 1 + static_cast<int>(step % kMaxDraft);
    drafts.clear();
    q.clear();
    rows.assign(1, logits[history.back()].data());
    int32_t prev = history.back();
    for (int i = 0; i < k; ++i) {
      const int32_t d = sample(q_dist[prev], draft_rng);
      drafts.push_back(d);
      q.push_back(plant == Plant::kClaimQIsP ? p_dist[prev] : q_dist[prev]);
      rows.push_back(logits[d].data());
      prev = d;
    }
    if (kind == DraftKind::kExactMatch) q.clear();
    const size_t h0 = history.size();
    VerifyResult r = v.verify(rows, drafts, q, history, rng);
    // The token that decided the step came from row n_accepted, whose context is the last
    // accepted token (or the anchor).
    const int32_t ctx = history[h0 + r.n_accepted - 1];
    const bool bonus = r.n_accepted == k;
    if (plant == Plant::kArgmaxBonus && bonus) r.next = p_dist[ctx].top();
    if (!bonus && ((plant == Plant::kResidualIsP && !q.empty()) ||
                   (plant == Plant::kResampleOnMismatch && q.empty()))) {
      r.next = sample(p_dist[ctx], plant_rng);
    }
    history.back() = r.next;
    for (int i = 0; i < k && i <= r.n_accepted; ++i) {
      ++run.reached_at[i];
      run.accepted_at[i] += i < r.n_accepted;
    }
    ++(bonus ? run.bonus_at : run.corrections_at)[r.n_accepted];
    for (int i = 0; i <= r.n_accepted; ++i) ++run.counts[i][history[h0 + i - 1]][history[h0 + i]];
  }
  return run;
}

constexpr int64_t kMarkovSteps = 60000;

// Every emitted token, at every index of its step, has the target's distribution: accepted
// drafts, corrections after a rejection at any position, and bonus tokens after k = 1..4
// accepted drafts. Each kind of token occurs at every index, and every draft position, once
// reached, is accepted at the rate the tables give (the same in every context: sum of
// min(p, q) for rejection sampling, sum of p q for exact match).
void expect_lossless(DraftKind kind) {
  const MarkovRun run = run_markov(kind, Plant::kNone, kMarkovSteps);
  const Table tp = target_table();
  const Table tq = kind == DraftKind::kFarQ ? far_draft_table() : close_draft_table();
  double want = 0.0;
  for (int b = 0; b < kV; ++b) want += kind == DraftKind::kExactMatch ? tp[0][b] * tq[0][b] : std::min(tp[0][b], tq[0][b]);
  for (int i = 0; i <= kMaxDraft; ++i) {
    const testing_support::ChiSquare c = run.at_index(i, tp);
    EXPECT_LT(c.stat, c.critical()) << "token " << i << " of a step: df " << c.df << ", n " << c.n;
    EXPECT_GE(c.df, 1) << "token " << i;
    if (i >= 1) {
      EXPECT_GE(run.bonus_at[i], 30) << "bonus tokens after " << i << " accepted drafts";
    }
    if (i < kMaxDraft) {
      EXPECT_GE(run.corrections_at[i], 30) << "tokens emitted after a rejection at draft " << i;
      const double n = static_cast<double>(run.reached_at[i]);
      EXPECT_NEAR(run.accepted_at[i] / n, want, 4 * std::sqrt(want * (1 - want) / n))
          << "acceptance of draft position " << i << " once reached, over " << n << " drafts";
    }
  }
  const testing_support::ChiSquare all = run.total(tp);
  EXPECT_LT(all.stat, all.critical()) << "df " << all.df;
}

TEST(Verifier, RejectionSamplingWithACloseDraftReproducesTarget) { expect_lossless(DraftKind::kCloseQ); }

TEST(Verifier, RejectionSamplingWithAFarDraftReproducesTarget) { expect_lossless(DraftKind::kFarQ); }

TEST(Verifier, ExactMatchVerificationReproducesTarget) { expect_lossless(DraftKind::kExactMatch); }

// Negative controls: each planted bug makes the statistic over all emitted tokens exceed its
// critical value, and by far (the tests above would not pass a broken verifier by luck).
TEST(Verifier, ChiSquareCatchesPlantedBugs) {
  const Table tp = target_table();
  struct Case {
    DraftKind kind;
    Plant plant;
    const char* what;
  };
  for (const Case& c : {Case{DraftKind::kCloseQ, Plant::kArgmaxBonus, "argmax bonus"},
                        Case{DraftKind::kExactMatch, Plant::kArgmaxBonus, "argmax bonus, exact match"},
                        Case{DraftKind::kCloseQ, Plant::kResidualIsP, "p instead of the residual (close q)"},
                        Case{DraftKind::kFarQ, Plant::kResidualIsP, "p instead of the residual (far q)"},
                        Case{DraftKind::kExactMatch, Plant::kResampleOnMismatch, "resample on a mismatch"},
                        Case{DraftKind::kFarQ, Plant::kClaimQIsP, "drafter claims q = p"}}) {
    const testing_support::ChiSquare all = run_markov(c.kind, c.plant, kMarkovSteps).total(tp);
    EXPECT_GT(all.stat, 3 * all.critical()) << c.what << ": df " << all.df;
  }
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
