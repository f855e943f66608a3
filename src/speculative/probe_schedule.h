// Priced exploration for a drafter whose drafts the scheduler judges losing (speculative/scheduler.h).
//
// While drafting loses, a drafter does not draft; only a probe now and then (one step drafted at the
// forecast's least-bad length) asks whether the text has changed. Exploring is not free: a probe
// costs what it took minus what plain steps would have taken for the tokens it emitted, and on a
// drafter that cannot pay (a draft whose pass costs more than a target step) that loss is all the
// speculative loop loses against plain decoding. So probes are priced: the next one comes after
// enough plain steps that its loss is kShare of their time, and that spacing doubles with every
// losing probe in a row, so a drafter that keeps losing costs geometrically less (the total stays a
// few losses per doubling of the run). A probe that wins is followed by another at once: drafting
// resumes within steps when it starts paying (repetitive text), and the probes' outcomes feed the
// forecast, which then takes over. The streak is forgotten only once drafting has paid for a while
// (reset()): a lucky probe that resumes drafting which soon stops again still counts as a loss.
//
// Pure arithmetic on what it is told, like the scheduler: no clock.
#pragma once

#include <cstdint>

namespace fulgur {

class ProbeSchedule {
 public:
  // A probe's expected loss is about this share of the plain time before it (before doubling).
  static constexpr double kShare = 1.0 / 32;
  // The longest wait, in steps: a long generation still re-checks a losing drafter.
  static constexpr int64_t kMaxGap = 2048;
  // Losing probes in a row that still double the wait (2^10 x the priced gap exceeds kMaxGap anyway).
  static constexpr int kMaxLosses = 10;

  // Whether a probe may run at `step`.
  bool due(int64_t step) const { return step >= next_; }
  // The step a probe is next due.
  int64_t next() const { return next_; }
  // Losing probes since drafting last paid.
  int losses() const { return losses_; }
  // Whether the last probe finished won (none finished yet: false).
  bool last_won() const { return last_won_; }
  // Whether a probe step is under way (begin() .. finish()).
  bool probing() const { return probing_; }
  // Sequences in the probe under way.
  int n_seqs() const { return n_seqs_; }

  // A probe step begins for n_seqs sequences.
  void begin(int n_seqs);
  // The probe's drafter took `seconds` drafting / its sequences kept `n` drafted tokens.
  void add_draft_seconds(double seconds);
  void add_accepted(int n);
  // The probe step ends: the target's step took step_seconds, and plain_step_seconds is what a step
  // of the probe's sequences without drafts costs (the scheduler's prediction). A probe wins when
  // it emitted tokens faster than plain steps; a loss sets the next probe by its price. Returns
  // whether it won.
  bool finish(int64_t step, double step_seconds, double plain_step_seconds);
  // Drafting stopped at `step` without a probe (the forecast says it loses by `loss_seconds` a
  // step): a loss like a probe's, the next probe waits by that price.
  void wait(int64_t step, double loss_seconds, double plain_step_seconds);
  // The next probe runs at step + 1 whatever the wait (the scheduler wants a length tried that no
  // probe has tried).
  void again(int64_t step) { next_ = step + 1; }
  // Drafting has paid for a while: the next losing streak starts from the priced gap.
  void reset();

 private:
  // Sets next_ to step + the priced gap for a loss of loss_seconds, doubled per loss in a row.
  void space(int64_t step, double loss_seconds, double plain_step_seconds);

  int64_t next_ = 0;
  int losses_ = 0;
  bool last_won_ = false;
  bool probing_ = false;
  int n_seqs_ = 0;
  double draft_seconds_ = 0.0;
  int64_t accepted_ = 0;
};

}  // namespace fulgur
