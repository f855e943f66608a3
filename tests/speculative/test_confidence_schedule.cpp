// The confidence schedule (speculative/scheduler.h, DESIGN §4) on made-up step costs and confidences:
// the step-time table, the prefix Algorithm 1 chooses against an exhaustive search, its early
// stop against the DSpark paper's Appendix-A counterexample (exact emitted distributions), the
// temperature scaling, and whole runs of the three modes on a simulated drafter. Every check is
// also run on a forced choice (verify all, verify none, no early stop) and must fail there.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "core/error.h"
#include "sampling/rng.h"
#include "speculative/scheduler.h"

namespace fulgur {
namespace {

// Seconds 1 + b * rows, as a table of rows 1..64.
StepTable linear_table(double b) {
  StepTable t;
  for (int64_t r = 1; r <= 64; r *= 2) {
    t.rows.push_back(r);
    t.seconds.push_back(1.0 + b * static_cast<double>(r));
  }
  return t;
}

TEST(StepTable, InterpolatesExtrapolatesAndScales) {
  StepTable t{{1, 2, 4}, {1.0, 1.5, 1.5}};
  EXPECT_DOUBLE_EQ(t.at(0.5), 1.0);
  EXPECT_DOUBLE_EQ(t.at(1.5), 1.25);
  EXPECT_DOUBLE_EQ(t.at(3), 1.5);  // a flat shelf stays flat
  EXPECT_DOUBLE_EQ(t.at(8), 1.5);  // past the end: the last segment's slope (0)
  StepTable rising{{1, 8}, {1.0, 2.4}};
  EXPECT_NEAR(rising.at(15), 3.8, 1e-12);
  StepTable falling{{1, 2}, {2.0, 1.0}};  // noise: never cheaper past the end
  EXPECT_DOUBLE_EQ(falling.at(10), 1.0);

  StepCost cost;
  cost.set_table(rising);
  EXPECT_TRUE(cost.ready());
  EXPECT_DOUBLE_EQ(cost.at(8), 2.4);
  for (int i = 0; i < 200; ++i) cost.add(i % 2 ? 8 : 1, i % 2 ? 4.8 : 2.0);  // the host runs 2x slower
  EXPECT_NEAR(cost.at(8), 4.8, 1e-6);
  EXPECT_NEAR(cost.at(1), 2.0, 1e-6);

  for (const StepTable& bad : {StepTable{{1, 1}, {1.0, 2.0}}, StepTable{{0}, {1.0}},
                               StepTable{{1, 2}, {1.0}}, StepTable{{1}, {-1.0}}}) {
    EXPECT_THROW(StepCost().set_table(bad), Error);
  }
}

// Expected tokens per second of verifying `lengths` of the drafts with survivals `a` [seq][j].
double throughput(const std::vector<std::vector<double>>& a, const std::vector<int>& lengths,
                  const StepTable& table, double draft_s) {
  double tokens = 0.0, rows = 0.0;
  for (size_t r = 0; r < a.size(); ++r) {
    tokens += 1.0;
    rows += 1.0 + lengths[r];
    for (int j = 0; j < lengths[r]; ++j) tokens += a[r][static_cast<size_t>(j)];
  }
  return tokens / (draft_s + table.at(rows));
}

// Whether `lengths` maximise the expected throughput over every combination of prefixes.
testing::AssertionResult is_best(const std::vector<std::vector<double>>& a, const std::vector<int>& lengths,
                                 const StepTable& table, double draft_s) {
  std::vector<int> l(a.size(), 0), best_l;
  double best = -1.0;
  std::function<void(size_t)> search = [&](size_t r) {
    if (r == a.size()) {
      const double t = throughput(a, l, table, draft_s);
      if (t > best + 1e-12) best = t, best_l = l;
      return;
    }
    for (int k = 0; k <= static_cast<int>(a[r].size()); ++k) {
      l[r] = k;
      search(r + 1);
    }
  };
  search(0);
  const double got = throughput(a, lengths, table, draft_s);
  if (got >= best - 1e-12) return testing::AssertionSuccess();
  return testing::AssertionFailure() << "throughput " << got << " < " << best << " (best lengths "
                                     << ::testing::PrintToString(best_l) << ", chosen "
                                     << ::testing::PrintToString(lengths) << ")";
}

// Confidences whose cumulative products are a.
std::vector<float> to_confidences(const std::vector<double>& a) {
  std::vector<float> c;
  double prev = 1.0;
  for (double x : a) {
    c.push_back(static_cast<float>(x / prev));
    prev = x;
  }
  return c;
}

std::vector<int> plan_lengths(DraftScheduler& s, const std::vector<std::vector<float>>& conf, double draft_s) {
  std::vector<PlannedDraft> plans;
  for (const std::vector<float>& c : conf) {
    plans.push_back({.drafter = 0, .drafted = static_cast<int>(c.size()), .confidence = c, .verify = -1});
  }
  s.plan(plans, draft_s);
  std::vector<int> out;
  for (const PlannedDraft& p : plans) out.push_back(p.verify);
  return out;
}

TEST(ConfidencePlan, ChoosesTheBestPrefixesOnMadeUpCosts) {
  // Steps cost 1 + b per row (a linear cost: greedy admission in descending survival is then
  // optimal, so the plan must equal the exhaustive search's best).
  struct Case {
    double b, draft_s;
    std::vector<std::vector<double>> a;  // [seq][position] survivals
  };
  const std::vector<Case> cases = {
      {0.25, 0.0, {{0.9, 0.8, 0.3, 0.1, 0.05}}},                 // a short prefix
      {0.05, 0.0, {{0.9, 0.85, 0.8, 0.75, 0.7}}},                // everything
      {1.0, 0.0, {{0.5, 0.2, 0.1}}},                             // nothing
      {0.2, 0.5, {{0.95, 0.9, 0.6, 0.2}, {0.3, 0.1, 0.05, 0.01}, {0.99, 0.97, 0.95, 0.93}}},
      {0.15, 0.0, {{0.7, 0.49, 0.34}, {0.8, 0.2, 0.1}, {0.6, 0.55, 0.5}}},
  };
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& c = cases[ci];
    DraftScheduler s(1, SpecSchedule::kConfidence);
    const StepTable table = linear_table(c.b);
    s.set_step_table(table);
    std::vector<std::vector<float>> conf;
    for (const auto& a : c.a) conf.push_back(to_confidences(a));
    const std::vector<int> got = plan_lengths(s, conf, c.draft_s);
    EXPECT_TRUE(is_best(c.a, got, table, c.draft_s)) << "case " << ci;
    // The check is not vacuous: verify-all and verify-none are not the best here (except
    // where the case is built so that one of them is).
    std::vector<int> all, none(c.a.size(), 0);
    for (const auto& a : c.a) all.push_back(static_cast<int>(a.size()));
    if (got != all) {
      EXPECT_FALSE(is_best(c.a, all, table, c.draft_s)) << "case " << ci;
    }
    if (got != none) {
      EXPECT_FALSE(is_best(c.a, none, table, c.draft_s)) << "case " << ci;
    }
  }
  DraftScheduler s(1, SpecSchedule::kConfidence);
  s.set_step_table(linear_table(0.25));
  EXPECT_EQ(plan_lengths(s, {to_confidences({0.9, 0.8, 0.3, 0.1, 0.05})}, 0.0), std::vector<int>{2});
  EXPECT_EQ(plan_lengths(s, {to_confidences({0.1, 0.05})}, 0.0), std::vector<int>{0});
}

TEST(ConfidencePlan, OtherModesVerifyEverythingAndDraftlessRowsCount) {
  for (SpecSchedule mode : {SpecSchedule::kAdaptive, SpecSchedule::kFixed}) {
    DraftScheduler s(1, mode);
    s.set_step_table(linear_table(10.0));
    EXPECT_EQ(plan_lengths(s, {{0.01f, 0.01f}}, 0.0), std::vector<int>{2}) << spec_schedule_name(mode);
  }
  // A sequence without a draft still puts its anchor row in the step, which moves the cost of
  // the others along the table: with 1 + 0.1 r, one sequence verifies its 0.5 survival, but
  // beside three draftless ones the same candidate costs the same and brings less.
  DraftScheduler s(1, SpecSchedule::kConfidence);
  StepTable shelf{{1, 2, 4, 5}, {1.0, 1.1, 1.2, 2.0}};  // a fifth row is dear
  s.set_step_table(shelf);
  std::vector<float> c = {0.5f};
  std::vector<PlannedDraft> alone = {{.drafter = 0, .drafted = 1, .confidence = c, .verify = -1}};
  s.plan(alone, 0.0);
  EXPECT_EQ(alone[0].verify, 1);
  std::vector<PlannedDraft> crowd(4);
  crowd[0] = alone[0];
  s.plan(crowd, 0.0);
  EXPECT_EQ(crowd[0].verify, 0);
  for (size_t i = 1; i < crowd.size(); ++i) EXPECT_EQ(crowd[i].verify, 0);
}

// The DSpark paper's Appendix A: one sequence, steps per second SPS(1) = 1, SPS(2) = 0.5,
// SPS(3) = 0.45, a two-token vocabulary, target p = (0.7, 0.3), draft q = (0.5, 0.5) and a first
// confidence of 0.8. The second confidence depends on the first drafted token x1 (1 after token
// 0, 0 after token 1). Without the early stop, a planner that sees c2 verifies both drafts after
// x1 = 0 and none after x1 = 1, and the first emitted token is 0 with probability 0.85, not 0.7.
// The emitted distribution is computed exactly from the planner's choices.
double first_token_zero(const std::function<int(int x1)>& verify_len) {
  const double p[2] = {0.7, 0.3}, q[2] = {0.5, 0.5};
  double zero = 0.0;
  for (int x1 = 0; x1 < 2; ++x1) {
    if (verify_len(x1) == 0) {
      zero += q[x1] * p[0];  // the target's own token
      continue;
    }
    // Rejection sampling of x1: accepted with min(1, p/q); else the residual max(p - q, 0).
    const double accept = std::min(1.0, p[x1] / q[x1]);
    const double r0 = std::max(p[0] - q[0], 0.0), r1 = std::max(p[1] - q[1], 0.0);
    zero += q[x1] * ((x1 == 0 ? accept : 0.0) + (1.0 - accept) * r0 / (r0 + r1));
  }
  return zero;
}

TEST(ConfidencePlan, EarlyStopKeepsTheEmittedDistribution) {
  const StepTable table{{1, 2, 3}, {1.0, 2.0, 1.0 / 0.45}};
  DraftScheduler s(1, SpecSchedule::kConfidence);
  s.set_step_table(table);
  const auto plan = [&](int x1) {
    return plan_lengths(s, {{0.8f, x1 == 0 ? 1.0f : 0.0f}}, 0.0).at(0);
  };
  EXPECT_EQ(plan(0), 0);
  EXPECT_EQ(plan(1), 0);
  EXPECT_NEAR(first_token_zero(plan), 0.7, 1e-12);
  // The same objective without the early stop (the best prefix over all lengths, seeing c2):
  const auto no_stop = [&](int x1) {
    const std::vector<std::vector<double>> a = {{0.8, x1 == 0 ? 0.8 : 0.0}};
    int best_l = 0;
    for (int l = 1; l <= 2; ++l) {
      if (throughput(a, {l}, table, 0.0) > throughput(a, {best_l}, table, 0.0)) best_l = l;
    }
    return best_l;
  };
  EXPECT_EQ(no_stop(0), 2);
  EXPECT_NEAR(first_token_zero(no_stop), 0.85, 1e-12);
}

TEST(ConfidencePlan, TemperatureScaling) {
  DraftScheduler s(2, SpecSchedule::kConfidence);
  s.set_temperatures(1, {1.0f, 2.0f});
  EXPECT_DOUBLE_EQ(s.calibrated(0, 0, 0.9), 0.9);  // drafter 0: none
  EXPECT_NEAR(s.calibrated(1, 0, 0.9), 0.9, 1e-9);
  EXPECT_NEAR(s.calibrated(1, 1, 0.9), 0.75, 1e-9);  // sigma(logit(0.9) / 2) = 3 / 4
  EXPECT_NEAR(s.calibrated(1, 5, 0.9), 0.75, 1e-9);  // past the list: the last temperature
  EXPECT_NEAR(s.calibrated(1, 1, 0.5), 0.5, 1e-12);  // order-preserving, 0.5 fixed
  EXPECT_LT(s.calibrated(1, 1, 0.2), s.calibrated(1, 1, 0.21));
  std::vector<double> a;
  const std::vector<float> c = {0.9f, 0.9f};
  s.survivals(1, c, 2, a);
  EXPECT_NEAR(a[1], 0.9 * 0.75, 1e-6);
  // Without confidences (or with a NaN among them), the drafter's history.
  s.survivals(1, {}, 2, a);
  EXPECT_NEAR(a[0], 0.5, 1e-12);  // the prior
  EXPECT_NEAR(a[1], 0.25, 1e-12);
  const std::vector<float> nan = {0.9f, NAN};
  s.survivals(1, nan, 2, a);
  EXPECT_NEAR(a[0], 0.5, 1e-12);
  EXPECT_THROW(s.set_temperatures(0, {1.0f, 0.0f}), Error);

  // An overconfident head cooled down by its temperatures verifies less.
  s.set_step_table(linear_table(0.25));
  const std::vector<std::vector<float>> conf = {{0.97f, 0.97f, 0.97f, 0.97f, 0.97f, 0.97f}};
  std::vector<PlannedDraft> p0 = {{.drafter = 0, .drafted = 6, .confidence = conf[0], .verify = -1}};
  std::vector<PlannedDraft> p1 = {{.drafter = 1, .drafted = 6, .confidence = conf[0], .verify = -1}};
  s.set_temperatures(1, {6.0f});
  s.plan(p0, 0.0);
  s.plan(p1, 0.0);
  EXPECT_EQ(p0[0].verify, 6);
  EXPECT_LT(p1[0].verify, 4);
}

// A simulated drafter of 8 tokens whose drafts are either right all along (half of the steps)
// or wrong from the first token, and whose confidences say which (0.97 / 0.03 at every
// position) or say nothing (calibrated but the same every step: 0.5, then 1). Steps cost
// 1 + b rows, drafting costs c per token. Returns tokens per second over the run.
double simulated_throughput(SpecSchedule mode, bool informative, double b, double c, bool table) {
  DraftScheduler s(1, mode);
  if (table) s.set_step_table(linear_table(b));
  Rng rng(7);
  double tokens = 0.0, seconds = 0.0;
  std::vector<float> conf;
  for (int step = 0; step < 2000; ++step) {
    s.begin_step();
    const int k = std::min(s.cap(0, 1), 8);
    const bool good = rng.uniform() < 0.5;
    conf.assign(static_cast<size_t>(k), informative ? (good ? 0.97f : 0.03f) : 1.0f);
    if (!informative && k > 0) conf[0] = 0.5f;
    double draft_s = 0.0;
    int verify = 0;
    if (k > 0) {
      const double predicted = s.draft_seconds(0, k);
      draft_s = c * k;
      s.on_draft(0, k, draft_s);
      s.on_confidences(0, conf);
      std::vector<PlannedDraft> p = {{.drafter = 0, .drafted = k, .confidence = conf, .verify = 0}};
      s.plan(p, predicted);
      verify = p[0].verify;
    }
    const int accepted = good ? verify : 0;
    if (verify > 0) s.on_outcome(0, verify, accepted);
    const double step_s = 1.0 + b * (1 + verify);
    s.on_step(1 + verify, step_s);
    tokens += 1 + accepted;
    seconds += draft_s + step_s;
  }
  return tokens / seconds;
}

TEST(ConfidenceSchedule, UsesInformativeConfidencesAndLosesNothingOtherwise) {
  for (bool table : {true, false}) {
    SCOPED_TRACE(table ? "with a step table" : "measured on the fly");
    // Rows at 40 % of a decode, drafting at 2 % a token: a draft that survives half the time is
    // not worth its rows, one known to survive is.
    const double b = 0.4, c = 0.02;
    const double fixed = simulated_throughput(SpecSchedule::kFixed, true, b, c, table);
    const double adaptive = simulated_throughput(SpecSchedule::kAdaptive, true, b, c, table);
    const double confident = simulated_throughput(SpecSchedule::kConfidence, true, b, c, table);
    const double blind = simulated_throughput(SpecSchedule::kConfidence, false, b, c, table);
    // Expected: plain 1 / 1.4 = 0.71 tokens/s; fixed (9 rows every step, 9 tokens or 1)
    // 5 / 4.76 = 1.05, and adaptive the same (its history says 1 + k / 2 tokens for k drafts,
    // which pays); confidence verifies the good drafts only: 5 / 3.16 = 1.58.
    EXPECT_GT(confident, 1.25 * adaptive) << "fixed " << fixed << ", adaptive " << adaptive;
    EXPECT_GT(confident, 1.25 * fixed);
    // Uninformative confidences: as good as the history alone (within the noise of the run).
    EXPECT_GT(blind, 0.95 * adaptive) << "blind " << blind << ", adaptive " << adaptive;
  }
}

}  // namespace
}  // namespace fulgur
