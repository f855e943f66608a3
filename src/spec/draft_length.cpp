#include "spec/draft_length.h"

#include <algorithm>

namespace fulgur {
namespace {

// Memory of the acceptance counts: each outcome weighs the older ones down by this much
// (an effective window of ~30 drafts), so the choice follows the text as it changes.
constexpr double kOutcomeDecay = 0.97;
// A longer draft is chosen only if it promises this much more throughput than the best shorter
// one: ties (say, a drafter that is never right) go to the shorter draft.
constexpr double kLongerMargin = 1.02;
// Conditional acceptance assumed for position 0 before any outcome (weight: one outcome);
// a position without outcomes inherits the previous position's rate.
constexpr double kPriorRate = 0.5;

}  // namespace

void DecayingLine::add(double x, double y) {
  // A step that lost its core to another process for a while is not what the next one will
  // cost: a measurement is clipped to 3x the line's prediction (and no less than a third).
  if (has_slope()) {
    const double predicted = at(x);
    if (predicted > 0.0) y = std::clamp(y, predicted / 3.0, predicted * 3.0);
  }
  w_ = w_ * decay_ + 1.0;
  sx_ = sx_ * decay_ + x;
  sxx_ = sxx_ * decay_ + x * x;
  sy_ = sy_ * decay_ + y;
  sxy_ = sxy_ * decay_ + x * y;
}

bool DecayingLine::has_slope() const {
  if (w_ < 1.5) return false;
  const double mean = sx_ / w_;
  return sxx_ / w_ - mean * mean > 0.1;  // x are token counts: two distinct values suffice
}

double DecayingLine::at(double x) const {
  if (w_ == 0.0) return 0.0;
  if (!has_slope()) return sy_ / w_;
  // Least squares with both coefficients kept >= 0 (noise must not make longer batches look
  // cheaper, nor anything cost less than nothing): a negative intercept means the line through
  // the origin, a negative slope the mean.
  double slope = (w_ * sxy_ - sx_ * sy_) / (w_ * sxx_ - sx_ * sx_);
  double intercept = (sy_ - slope * sx_) / w_;
  if (intercept < 0.0) {
    slope = sxy_ / sxx_;
    intercept = 0.0;
  }
  if (slope < 0.0) return sy_ / w_;
  return intercept + slope * x;
}

DraftLength::DraftLength(int n_drafters) : drafters_(static_cast<size_t>(n_drafters)) {}

void DraftLength::on_draft(int d, int64_t tokens, double seconds) {
  drafters_[static_cast<size_t>(d)].cost.add(static_cast<double>(tokens), seconds);
}

void DraftLength::on_step(int64_t rows, double seconds) {
  step_cost_.add(static_cast<double>(rows), seconds);
  if (!drafting_) last_plain_ = step_;
}

void DraftLength::on_outcome(int d, int n_drafted, int n_accepted) {
  PerDrafter& p = drafters_[static_cast<size_t>(d)];
  for (double& v : p.reached) v *= kOutcomeDecay;
  for (double& v : p.accepted) v *= kOutcomeDecay;
  if (p.reached.size() < static_cast<size_t>(n_drafted)) {
    p.reached.resize(static_cast<size_t>(n_drafted), 0.0);
    p.accepted.resize(static_cast<size_t>(n_drafted), 0.0);
  }
  // Position i was put to the test when every earlier one was accepted.
  for (int i = 0; i < n_drafted && i <= n_accepted; ++i) {
    p.reached[static_cast<size_t>(i)] += 1.0;
    if (i < n_accepted) p.accepted[static_cast<size_t>(i)] += 1.0;
  }
  p.longest = std::max(p.longest, n_drafted);
}

double DraftLength::expected_tokens(int d, int k) const {
  const PerDrafter& p = drafters_[static_cast<size_t>(d)];
  double tokens = 1.0, survive = 1.0, rate = kPriorRate;
  for (int i = 0; i < k; ++i) {
    const bool seen = static_cast<size_t>(i) < p.reached.size();
    rate = ((seen ? p.accepted[static_cast<size_t>(i)] : 0.0) + rate) /
           ((seen ? p.reached[static_cast<size_t>(i)] : 0.0) + 1.0);
    survive *= rate;
    tokens += survive;
  }
  return tokens;
}

double DraftLength::step_seconds(int d, int n_seqs, int k) const {
  const double s = static_cast<double>(n_seqs);
  const DecayingLine& cost = drafters_[static_cast<size_t>(d)].cost;
  // Drafting nothing costs nothing. Drafts measured at one length only: assume the cost is
  // proportional to the tokens (pessimistic for longer drafts when most of it is a fixed
  // first pass, which the next exploration then shows). A line through the origin as data
  // instead would keep that assumption long after other lengths were measured.
  double draft_s = 0.0;
  if (k > 0 && cost.has_slope()) {
    draft_s = cost.at(s * k);
  } else if (k > 0 && cost.mean_x() > 0.0) {
    draft_s = cost.at(0.0) * s * k / cost.mean_x();
  }
  return draft_s + step_cost_.at(s * (k + 1));
}

int DraftLength::best(int d, int n_seqs) const {
  int best_k = 0;
  double best_rate = 0.0;
  // Lengths up to twice the longest draft seen, plus two: the unseen positions inherit the last
  // seen rate and the cost lines extrapolate. Without the look-ahead the choice stuck at the
  // lengths it had tried: with a dear first draft token (a draft model's anchor pass), two
  // tokens lost to none while four won, and the explorations from none only ever tried two.
  // A drafter that has not drafted yet is judged on the prior.
  const int limit = 2 * drafters_[static_cast<size_t>(d)].longest + 2;
  for (int k = 0; k <= limit; ++k) {
    const double seconds = std::max(step_seconds(d, n_seqs, k), 1e-12);
    const double rate = n_seqs * expected_tokens(d, k) / seconds;
    if (k == 0 || rate > best_rate * kLongerMargin) {
      best_k = k;
      best_rate = rate;
    }
  }
  return best_k;
}

int DraftLength::cap(int d, int n_seqs) {
  const int k = choose(d, n_seqs);
  drafting_ = drafting_ || k > 0;
  return k;
}

int DraftLength::choose(int d, int n_seqs) {
  PerDrafter& p = drafters_[static_cast<size_t>(d)];
  // Start cheap: one-token drafts and none in turn, until both batch sizes have been measured
  // (the step cost line has a slope; a drafter may have nothing to say for a while); from there
  // the choice grows the draft only while that pays.
  if (!sloped_ && !step_cost_.has_slope()) return step_ % 2 ? 1 : 0;
  sloped_ = true;
  // A plain step now and then. A drafter that drafts every step leaves V measured at k + 1 rows
  // only, and its value there then stood for a plain step too (the zoo draft model: 0.7 ms
  // against 0.42 ms measured alone), which made every draft look 1.7x better than it was.
  if (step_ - last_plain_ >= kPlainEvery) return 0;
  const int k = best(d, n_seqs);
  if (step_ < p.next_explore) return k;
  // A longer draft than the choice (the drafter cuts it to its own maximum). Explorations are
  // spaced so they cost about 1 / kExploreEvery of the time (the dearer the longer draft's step
  // against the chosen one's, the rarer), except while the choice is the longest draft seen:
  // then the next length is worth trying at once.
  const int longer = std::max(k + 2, 2 * k);
  const double ratio = step_seconds(d, n_seqs, longer) / step_seconds(d, n_seqs, k);
  p.next_explore =
      k >= p.longest ? step_ + 1
                     : step_ + static_cast<int64_t>(kExploreEvery * std::clamp(ratio, 1.0, 4.0));
  return longer;
}

}  // namespace fulgur
