// Priced exploration (speculative/probe_schedule.h) on made-up costs and outcomes, alone and inside
// the scheduler: a drafter that cannot pay stops drafting within a few steps and is probed at a
// geometrically decaying rate whose losses stay a small share of the time; drafting resumes within
// one wait when acceptance rises; a drafter that pays is never judged losing.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "speculative/scheduler.h"

namespace fulgur {
namespace {

TEST(ProbeSchedule, LossesWaitTheirPriceDoubledAndWinsProbeAgainAtOnce) {
  ProbeSchedule p;
  EXPECT_TRUE(p.due(0));
  // One sequence, plain step 1 s: a probe that took 0.5 s drafting and 1.5 s verifying and kept one
  // token emitted 2 tokens in 2 s, as plain steps would: a loss of 0, so the shortest wait.
  p.begin(1);
  p.add_draft_seconds(0.5);
  p.add_accepted(1);
  EXPECT_FALSE(p.finish(10, 1.5, 1.0));
  EXPECT_EQ(p.next(), 11);
  EXPECT_EQ(p.losses(), 1);
  // It lost 1 s (2 tokens in 3 s): 1 / (kShare x 1 s) = 32 plain steps, doubled once (second loss).
  p.begin(1);
  p.add_draft_seconds(1.0);
  p.add_accepted(1);
  EXPECT_FALSE(p.finish(20, 2.0, 1.0));
  EXPECT_EQ(p.next(), 20 + 64);
  EXPECT_FALSE(p.due(83));
  EXPECT_TRUE(p.due(84));
  p.begin(1);
  p.add_draft_seconds(1.0);
  p.add_accepted(1);
  EXPECT_FALSE(p.finish(84, 2.0, 1.0));
  EXPECT_EQ(p.next(), 84 + 128) << "a third loss in a row waits twice as long";
  // A win (4 tokens in 2 s against 4 s plain): due the very next step, the streak kept until reset.
  p.begin(1);
  p.add_draft_seconds(0.5);
  p.add_accepted(3);
  EXPECT_TRUE(p.finish(212, 1.5, 1.0));
  EXPECT_TRUE(p.last_won());
  EXPECT_TRUE(p.due(213));
  EXPECT_EQ(p.losses(), 3);
  p.reset();
  EXPECT_EQ(p.losses(), 0);
  EXPECT_FALSE(p.last_won());
  // Two sequences: the plain step emits 2 tokens, so 4 tokens in 2 s against 2 s plain is even.
  p.begin(2);
  p.add_accepted(2);
  EXPECT_FALSE(p.finish(300, 2.0, 1.0));
  // Many losses in a row: the wait stops growing at kMaxGap.
  for (int i = 0; i < 30; ++i) {
    p.begin(1);
    p.add_draft_seconds(10.0);
    p.finish(1000, 1.0, 1.0);
  }
  EXPECT_EQ(p.next(), 1000 + ProbeSchedule::kMaxGap);
  // Nothing measured yet (no plain step cost): no verdict, neither a win nor a loss.
  ProbeSchedule fresh;
  fresh.begin(1);
  fresh.add_accepted(5);
  EXPECT_FALSE(fresh.finish(1, 1.0, 0.0));
  EXPECT_FALSE(fresh.last_won());
  EXPECT_EQ(fresh.losses(), 0);
  EXPECT_EQ(fresh.next(), 2);
}

// One drafter, one sequence, for `steps` steps: a step of r rows costs a + b r, a draft call
// c0 + c per token, and position i of a draft at step s survives with probability survive(s)^(i+1)
// (deterministic: accepted on that share of steps, like the scheduler tests' simulate()). Returns
// the drafted length of each step (0 = plain).
struct Costs {
  double a = 1.0, b = 0.0, c0 = 0.0, c = 0.0;
};
std::vector<int> run(DraftScheduler& dl, const Costs& k, int longest, int steps,
                     const std::function<double(int)>& survive) {
  std::vector<int> drafted;
  for (int s = 0; s < steps; ++s) {
    dl.begin_step();
    const int n = std::min(dl.cap(0, 1), longest);
    drafted.push_back(n);
    int accepted = 0;
    double p = 1.0;
    for (int i = 0; i < n; ++i) {
      p *= survive(s);
      if ((s * 7919 % 1000) / 1000.0 < p) ++accepted; else break;
    }
    if (n > 0) {
      dl.on_draft(0, n, k.c0 + k.c * n);
      dl.on_outcome(0, n, accepted);
    }
    dl.on_step(1 + n, k.a + k.b * (1 + n));
  }
  return drafted;
}

// The zoo pair's shape: a draft pass dearer than a target step (1.3 steps), verify rows at 15 % of
// a step, the first position accepted 70 % of the time. No length pays (one token: 1.7 tokens in
// 2.45 steps).
constexpr Costs kDearDraft{.a = 1.0, .b = 0.15, .c0 = 1.3, .c = 0.02};

TEST(DraftSchedulerProbes, StopsALosingDrafterAndProbesAtADecayingRate) {
  for (SpecSchedule mode : {SpecSchedule::kAdaptive, SpecSchedule::kConfidence}) {
    SCOPED_TRACE(spec_schedule_name(mode));
    DraftScheduler dl(1, mode);
    const int steps = 8000;
    const std::vector<int> drafted = run(dl, kDearDraft, 7, steps, [](int) { return 0.7; });
    // Stopped within the start: the first 8 steps draft at most twice.
    int early = 0;
    for (int s = 0; s < 8; ++s) early += drafted[static_cast<size_t>(s)] > 0;
    EXPECT_LE(early, 2);
    EXPECT_TRUE(dl.losing(0));
    // Probes at a decaying rate: the gaps between drafting steps never shrink by much (a lucky
    // probe may be followed by one at once) and the later ones are long.
    std::vector<int> at;
    for (int s = 0; s < steps; ++s) {
      if (drafted[static_cast<size_t>(s)] > 0) at.push_back(s);
    }
    ASSERT_GE(at.size(), 3u) << "it must keep probing";
    // Early on lucky probes may resume drafting for a few steps (a 4-token run of accepted
    // drafts); what bounds the loss is the spacing, checked below.
    EXPECT_LE(at.size(), 80u);
    int longest_gap = 0;
    for (size_t i = 1; i < at.size(); ++i) longest_gap = std::max(longest_gap, at[i] - at[i - 1]);
    EXPECT_GE(longest_gap, 1000);
    int late = 0;
    for (int s = steps / 2; s < steps; ++s) late += drafted[static_cast<size_t>(s)] > 0;
    EXPECT_LE(late, 4) << "the second half probes at most a few times";
    // What the probes cost against plain decoding: under 3 % of the time.
    double seconds = 0.0, tokens = 0.0;
    for (int s = 0; s < steps; ++s) {
      const int n = drafted[static_cast<size_t>(s)];
      seconds += kDearDraft.a + kDearDraft.b * (1 + n) + (n > 0 ? kDearDraft.c0 + kDearDraft.c * n : 0.0);
      tokens += 1.0;  // the accepted tokens only shorten the run; counting them would flatter it
    }
    EXPECT_LT(seconds / (tokens * (kDearDraft.a + kDearDraft.b)), 1.03);
  }
}

TEST(DraftSchedulerProbes, ResumesWhenAcceptanceRises) {
  // A cheap draft pass (half a step), rows at 10 % of a step: drafts of what 30 % of the time
  // survives lose, drafts of repetitive text (98 %) win by 2x.
  const Costs costs{.a = 1.0, .b = 0.1, .c0 = 0.5, .c = 0.01};
  for (SpecSchedule mode : {SpecSchedule::kAdaptive, SpecSchedule::kConfidence}) {
    SCOPED_TRACE(spec_schedule_name(mode));
    DraftScheduler dl(1, mode);
    const int turn = 1500, steps = 4000;
    const std::vector<int> drafted = run(dl, costs, 8, steps, [&](int s) { return s < turn ? 0.3 : 0.98; });
    int before = 0;
    for (int s = turn / 2; s < turn; ++s) before += drafted[static_cast<size_t>(s)] > 0;
    EXPECT_LE(before, 5) << "losing: probes only";
    // The first probe after the turn comes within one wait (at most kMaxGap), and drafting
    // resumes from it: within 20 steps of it nearly every step drafts.
    int first = turn;
    while (first < steps && drafted[static_cast<size_t>(first)] == 0) ++first;
    ASSERT_LT(first, turn + ProbeSchedule::kMaxGap);
    int after = 0;
    for (int s = first + 20; s < steps; ++s) after += drafted[static_cast<size_t>(s)] > 0;
    EXPECT_GE(after, (steps - first - 20) * 9 / 10);
    EXPECT_FALSE(dl.losing(0));
  }
}

TEST(DraftSchedulerProbes, AWinningDrafterIsNeverJudgedLosing) {
  // A free drafter whose tokens survive 80 % of the time, rows at 5 % of a step.
  const Costs costs{.a = 1.0, .b = 0.05};
  for (SpecSchedule mode : {SpecSchedule::kAdaptive, SpecSchedule::kConfidence}) {
    SCOPED_TRACE(spec_schedule_name(mode));
    DraftScheduler dl(1, mode);
    int drafting = 0;
    for (int s = 0; s < 40; ++s) {
      drafting += run(dl, costs, 8, 25, [](int) { return 0.8; }).back() > 0;
      EXPECT_FALSE(dl.losing(0)) << "after " << 25 * (s + 1) << " steps";
    }
    EXPECT_GE(drafting, 36);
  }
}

}  // namespace
}  // namespace fulgur
