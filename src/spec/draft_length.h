// How many tokens to draft per step. A verification batch is not free on a CPU: past a few rows
// it is compute-bound and each extra row costs a fixed share of a decode (bench --verify), so a
// long draft whose tail is rarely accepted makes generation slower than no drafting at all.
// DraftLength picks, before each step and per drafter, the cap k (0 = do not draft) that
// maximises expected tokens per second:
//
//   k* = argmax_k  S * E(k) / (D(S * k) + V(S * (k + 1)))     (S sequences in the step)
//
//   E(k) = 1 + s_0 + ... + s_{k-1}, s_i = P(drafts 0..i all accepted), from the drafter's recent
//          verify outcomes (conditional acceptance per position, with a decaying memory);
//   V(n) = a + b n: seconds of a step whose target batch has n rows (decode, verification and
//          commits), a weighted least-squares line over recent steps;
//   D(t) = c + e t: seconds the drafter takes to draft t tokens, the same kind of line.
//
// The choice only limits what is verified, never what is emitted: output stays the target's.
// It starts with a one-token draft and a step without one (two batch sizes give the step cost
// its slope), then drafts k*; now and then (about 1 / kExploreEvery of the time, or at once
// while k* is the longest draft seen) it asks for a longer draft than k*, so positions beyond
// k* and larger batches keep being measured and the length grows while that pays; and at least
// one step in kPlainEvery drafts nothing, so the one-row end of V stays measured too.
// Pure arithmetic on what it is told (no clock): the generator reports the timings.
#pragma once

#include <cstdint>
#include <vector>

namespace fulgur {

// y = a + b x over (x, y) pairs, older pairs weighted down by `decay` per new pair.
class DecayingLine {
 public:
  explicit DecayingLine(double decay) : decay_(decay) {}
  void add(double x, double y);
  bool empty() const { return w_ == 0.0; }
  // Whether the x values seen so far are spread enough to give a slope.
  bool has_slope() const;
  // Predicted y at x: the line when it has a slope (the slope clamped at >= 0: measurement noise
  // must not make longer batches look cheaper), else the mean y.
  double at(double x) const;
  // Mean of the x seen (weighted like everything else); 0 when empty.
  double mean_x() const { return w_ == 0.0 ? 0.0 : sx_ / w_; }

 private:
  double decay_;
  double w_ = 0, sx_ = 0, sxx_ = 0, sy_ = 0, sxy_ = 0;
};

class DraftLength {
 public:
  // Exploration (a longer draft than the current choice) takes about 1 / kExploreEvery of the
  // time.
  static constexpr int kExploreEvery = 16;
  // "No cap": the drafter's own maximum applies (the generator's fixed-length mode).
  static constexpr int kUncapped = 1 << 30;

  explicit DraftLength(int n_drafters);

  // At least one step in this many drafts nothing (after the start): see cap().
  static constexpr int kPlainEvery = 32;

  // Starts a step: advances the exploration clock.
  void begin_step() {
    ++step_;
    drafting_ = false;
  }
  // The cap on drafter d's drafts this step for n_seqs sequences: 0 (skip the drafter) or a
  // length. Call once per drafter and step (it schedules explorations).
  int cap(int d, int n_seqs);

  // Drafter d spent `seconds` drafting `tokens` tokens in total (all sequences of one call).
  void on_draft(int d, int64_t tokens, double seconds);
  // A step whose target batch had `rows` rows took `seconds` (decode + verify + commit).
  void on_step(int64_t rows, double seconds);
  // One of drafter d's drafts: n_drafted tokens verified, the first n_accepted kept.
  void on_outcome(int d, int n_drafted, int n_accepted);

  // E(k) of drafter d: expected tokens per step with a k-token draft.
  double expected_tokens(int d, int k) const;

 private:
  struct PerDrafter {
    std::vector<double> reached, accepted;  // [position] decayed counts
    int longest = 0;                        // longest draft seen (its own maximum, as far as known)
    DecayingLine cost{0.9};                 // seconds per drafted tokens
    int64_t next_explore = 0;               // step of the next exploration
  };
  // Predicted seconds of a step in which drafter d drafts k tokens for each of n_seqs sequences.
  double step_seconds(int d, int n_seqs, int k) const;
  int best(int d, int n_seqs) const;
  int choose(int d, int n_seqs);  // cap() but for noting whether the step drafts

  std::vector<PerDrafter> drafters_;
  DecayingLine step_cost_{0.98};  // seconds per batch rows
  bool sloped_ = false;           // step_cost_ has had a slope (the start is over)
  int64_t step_ = 0;
  bool drafting_ = false;         // some cap() of this step allowed drafts
  int64_t last_plain_ = 0;        // the last step that allowed none
};

}  // namespace fulgur
