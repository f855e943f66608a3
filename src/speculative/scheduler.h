// How much to draft and how much of it to verify (DESIGN §4, "Confidence-scheduled
// verification"; reference/dspark-dflash-spec.md §4). A verification batch is not free on a
// CPU: past a few rows it is compute-bound and each extra row costs a share of a decode (bench
// --verify), so a long draft whose tail is rarely accepted makes generation slower than no
// drafting at all. One scheduler, three modes (--spec-schedule):
//
//  fixed       every drafter drafts up to its maximum and all of it is verified (llama.cpp).
//
//  adaptive    before each step, per drafter, the cap k (0 = do not draft) that maximises
//                S E(k) / (D(S k) + V(S (k + 1)))        (S sequences in the step)
//              E(k) = 1 + a_1 + ... + a_k, a_i = P(drafts 1..i all accepted), from the drafter's
//              recent verify outcomes (conditional acceptance per position, decaying memory);
//              D(t) = seconds the drafter takes for t tokens (a least-squares line);
//              V(n) = seconds of a step whose target batch has n rows (speculative/step_cost.h: the
//              step-time table `fulgur calibrate` measured, or a line over the steps so far).
//
//  confidence  the same cap, with E forecast from the survivals that the drafter's
//              confidences (DSpark's head, calibrated by sequential temperature scaling)
//              promised over its recent drafts; then, once the drafts are in, per sequence the
//              prefix to verify, by the DSpark paper's Algorithm 1: every drafted position
//              (r, j) of a draft with confidences is a candidate worth a_rj; in descending
//              order of a, admit the candidate while expected tokens / (D + V(rows)) rises, and
//              stop at the first that does not (drafts without confidences are verified whole,
//              as in adaptive mode, but their rows and tokens count in the sums). The
//              stop is what keeps sampling lossless: position j is admitted before anything that
//              depends on the token drafted at j (c_{j+1}) is looked at. D here is the drafters'
//              predicted time, not the measured one, which could depend on later tokens.
//
// Which tokens are emitted never depends on any of it: it only cuts drafts. It starts with a
// one-token draft and a step without one (two batch sizes give the step cost its slope; a
// table needs none), then drafts the cap; now and then (about 1 / kExploreEvery of the time, or
// at once while the cap is the longest draft seen) it asks for a longer draft, so positions
// past the cap keep being measured; and without a table at least one step in kPlainEvery drafts
// nothing, so the one-row end of V stays measured too. Once the cap falls to 0 the drafter is
// judged losing (when that comes after a single drafted step, after one more draft at its length:
// one dear step, a shared host's hiccup, must not be the only measurement of the rows it drafted)
// and drafts only in priced probes
// (speculative/probe_schedule.h): rarer and rarer
// while they keep losing, at once again after one that wins; it drafts again for good when a
// probe has won and the forecast agrees. Pure arithmetic on what it is told (no clock): the
// generator reports the timings.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "speculative/probe_schedule.h"
#include "speculative/step_cost.h"

namespace fulgur {

enum class SpecSchedule : uint8_t { kConfidence, kAdaptive, kFixed };

const char* spec_schedule_name(SpecSchedule schedule);
// "confidence" | "adaptive" | "fixed"; throws fulgur::Error naming the value otherwise.
SpecSchedule parse_spec_schedule(const std::string& name);

// One sequence's draft in a step, for DraftScheduler::plan.
struct PlannedDraft {
  int drafter = -1;                   // -1: no draft this step (its anchor row still counts)
  int drafted = 0;                    // tokens drafted
  std::span<const float> confidence;  // [drafted] the draft's raw confidences, or empty
  int verify = 0;                     // out: how many of the drafted tokens to verify
};

class DraftScheduler {
 public:
  // Exploration (a longer draft than the current choice) takes about 1 / kExploreEvery of the
  // time.
  static constexpr int kExploreEvery = 16;
  // "No cap": the drafter's own maximum applies.
  static constexpr int kUncapped = 1 << 30;
  // Without a step-time table, at least one step in this many drafts nothing (see cap()).
  static constexpr int kPlainEvery = 32;
  // Drafts whose confidences the forecast of cap() remembers, per drafter.
  static constexpr int kRecentDrafts = 32;
  // Steps of drafting after a resume that clear a drafter's losing streak (ProbeSchedule::reset).
  static constexpr int kPaidSteps = 64;

  DraftScheduler(int n_drafters, SpecSchedule mode);

  SpecSchedule mode() const { return mode_; }
  // The step-time table of this model on this host (speculative/calibration.h); without one V is
  // measured on the fly.
  void set_step_table(StepTable table) { step_cost_.set_table(std::move(table)); }
  // Drafter d's confidences are calibrated as sigma(logit(c) / T_i) at draft position i (the
  // last temperature for later positions); empty: used as they are. Each T > 0.
  void set_temperatures(int d, std::vector<float> temperatures);

  // Starts a step: advances the exploration clock.
  void begin_step() {
    ++step_;
    drafting_ = false;
  }
  // The cap on drafter d's drafts this step for n_seqs sequences: 0 (skip the drafter), a
  // length, or kUncapped (fixed mode). Call once per drafter and step (it schedules
  // explorations).
  int cap(int d, int n_seqs);
  // Seconds drafter d is predicted to take for `tokens` tokens in one call (its line so far;
  // 0 before it has drafted).
  double draft_seconds(int d, int64_t tokens) const;
  // Drafter d spent `seconds` drafting `tokens` tokens in total (all sequences of one call).
  void on_draft(int d, int64_t tokens, double seconds);
  // One of drafter d's drafts came with these confidences (raw): remembered (calibrated, as
  // survivals) for the forecast of cap(). Confidence mode only.
  void on_confidences(int d, std::span<const float> confidence);
  // Confidence mode: sets the `verify` of each draft with confidences (a prefix, <= drafted) by
  // Algorithm 1 over all of them; drafts without confidences, and every draft in the other
  // modes, are verified whole. draft_seconds: the drafters' predicted time this step.
  void plan(std::span<PlannedDraft> drafts, double draft_seconds);
  // A step whose target batch had `rows` rows took `seconds` (decode + verify + commit).
  void on_step(int64_t rows, double seconds);
  // One of drafter d's drafts: n_drafted tokens verified, the first n_accepted kept.
  void on_outcome(int d, int n_drafted, int n_accepted);

  // E(k) of drafter d from its history: expected tokens per step with a k-token draft.
  double expected_tokens(int d, int k) const;
  // Survivals a_1..a_n (out[0..n)) of a draft of drafter d: the cumulative product of its
  // calibrated confidences when there are n of them (all finite), else the drafter's history.
  void survivals(int d, std::span<const float> confidence, int n, std::vector<double>& out) const;
  // Confidence c at draft position i (0-based) after drafter d's temperature scaling.
  double calibrated(int d, int i, double c) const;
  // Whether drafter d is judged losing (drafts only in probes), and its probes' state.
  bool losing(int d) const { return drafters_[static_cast<size_t>(d)].losing; }
  const ProbeSchedule& probes(int d) const { return drafters_[static_cast<size_t>(d)].probes; }

 private:
  struct PerDrafter {
    std::vector<double> reached, accepted;  // [position] decayed counts
    int longest = 0;                        // longest draft seen (its own maximum, as far as known)
    DecayingLine cost{0.9};                 // seconds per drafted tokens
    int64_t next_explore = 0;               // step of the next exploration
    std::vector<float> temperatures;        // STS, [positions] or empty
    std::vector<std::vector<double>> recent;  // [<= kRecentDrafts] survivals of recent drafts
    size_t recent_next = 0;                 // ring position
    bool losing = false;                    // the forecast stopped drafting: probes only
    ProbeSchedule probes;
    int probe_length = 0;                   // the length of the probe under way
    int64_t resumed = 0;                    // the step drafting last resumed
    int last_cap = 0;                       // the last length chosen while drafting paid
    int stretch = 0;                        // steps drafted at last_cap's like since drafting (re)started
    bool confirming = false;                // drafting at last_cap once more before judging losing
  };
  // Conditional acceptance of drafter d at position i given the previous position's (the prior
  // for the first): its decayed counts with one pseudo-outcome at `prev`.
  double history_rate(int d, int i, double prev) const;
  // Seconds drafter d takes for k tokens for each of n_seqs sequences.
  double draft_cost(int d, int n_seqs, int k) const;
  // Forecast tokens per second of drafting up to k tokens for n_seqs sequences.
  double forecast_rate(int d, int n_seqs, int k) const;
  // The length in [k_min, ...] with the best forecast rate (longer only by kLongerMargin).
  int best(int d, int n_seqs, int k_min = 0) const;
  // Seconds a step drafting up to k tokens is forecast to lose against plain steps emitting its
  // expected tokens (<= 0: it wins).
  double forecast_loss(int d, int n_seqs, int k) const;
  int choose(int d, int n_seqs);  // cap() but for noting whether the step drafts
  int choose_losing(int d, int n_seqs);  // choose() for a drafter judged losing: a probe or 0

  SpecSchedule mode_;
  std::vector<PerDrafter> drafters_;
  StepCost step_cost_;
  bool started_ = false;          // the start (one token / none in turn) is over
  int64_t step_ = 0;
  bool drafting_ = false;         // some cap() of this step allowed drafts
  int64_t last_plain_ = 0;        // the last step that allowed none
  // plan() scratch (no allocation in the token loop once warm).
  struct Candidate {
    double a;
    int j, r;
  };
  std::vector<Candidate> candidates_;
  std::vector<double> a_;
};

}  // namespace fulgur
