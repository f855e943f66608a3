#include "speculative/probe_schedule.h"

#include <algorithm>
#include <cmath>

namespace fulgur {

void ProbeSchedule::begin(int n_seqs) {
  probing_ = true;
  n_seqs_ = std::max(n_seqs, 1);
  draft_seconds_ = 0.0;
  accepted_ = 0;
}

void ProbeSchedule::add_draft_seconds(double seconds) {
  if (probing_) draft_seconds_ += std::max(seconds, 0.0);
}

void ProbeSchedule::add_accepted(int n) {
  if (probing_) accepted_ += std::max(n, 0);
}

bool ProbeSchedule::finish(int64_t step, double step_seconds, double plain_step_seconds) {
  if (!probing_) return false;
  probing_ = false;
  // Every sequence emits its anchor's token plus what it kept; plain steps would have emitted
  // n_seqs tokens per plain_step_seconds.
  const double tokens = static_cast<double>(n_seqs_ + accepted_);
  const double plain_seconds = tokens * plain_step_seconds / static_cast<double>(n_seqs_);
  const double loss = draft_seconds_ + step_seconds - plain_seconds;
  // Before a plain step has been measured there is nothing to compare with: no verdict.
  if (!(plain_step_seconds > 0.0)) {
    last_won_ = false;
    next_ = step + 1;
    return false;
  }
  last_won_ = loss < 0.0;
  if (last_won_) {
    next_ = step + 1;  // check again at once: drafting may be paying again
    return true;
  }
  losses_ = std::min(losses_ + 1, kMaxLosses);
  space(step, loss, plain_step_seconds);
  return false;
}

void ProbeSchedule::wait(int64_t step, double loss_seconds, double plain_step_seconds) {
  last_won_ = false;
  losses_ = std::min(losses_ + 1, kMaxLosses);
  space(step, loss_seconds, plain_step_seconds);
}

void ProbeSchedule::reset() {
  losses_ = 0;
  last_won_ = false;
}

void ProbeSchedule::space(int64_t step, double loss_seconds, double plain_step_seconds) {
  // Plain steps whose time times kShare pays for one probe's loss; then doubled per loss in a row
  // (the first loss, or a forecast's stop, waits the priced gap itself).
  double gap = plain_step_seconds > 0.0 ? std::max(loss_seconds, 0.0) / (kShare * plain_step_seconds)
                                        : 1.0;
  gap *= std::ldexp(1.0, std::max(losses_ - 1, 0));
  next_ = step + std::clamp(static_cast<int64_t>(std::ceil(gap)), int64_t{1}, kMaxGap);
}

}  // namespace fulgur
