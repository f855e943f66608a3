#include "speculative/scheduler.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

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
// Confidences are clamped this far from 0 and 1 before their logit is taken (a float
// confidence of exactly 1 has no finite logit).
constexpr double kConfidenceClamp = 1e-7;

}  // namespace

const char* spec_schedule_name(SpecSchedule schedule) {
  switch (schedule) {
    case SpecSchedule::kConfidence: return "confidence";
    case SpecSchedule::kAdaptive: return "adaptive";
    case SpecSchedule::kFixed: return "fixed";
  }
  return "?";
}

SpecSchedule parse_spec_schedule(const std::string& name) {
  for (SpecSchedule s : {SpecSchedule::kConfidence, SpecSchedule::kAdaptive, SpecSchedule::kFixed}) {
    if (name == spec_schedule_name(s)) return s;
  }
  fail("--spec-schedule '", name, "': expected confidence, adaptive or fixed");
}

DraftScheduler::DraftScheduler(int n_drafters, SpecSchedule mode)
    : mode_(mode), drafters_(static_cast<size_t>(n_drafters)) {}

void DraftScheduler::set_temperatures(int d, std::vector<float> temperatures) {
  for (size_t i = 0; i < temperatures.size(); ++i) {
    FULGUR_CHECK(std::isfinite(temperatures[i]) && temperatures[i] > 0.0f, "confidence temperature ",
                 i, " is ", temperatures[i], " (must be > 0)");
  }
  drafters_.at(static_cast<size_t>(d)).temperatures = std::move(temperatures);
}

double DraftScheduler::calibrated(int d, int i, double c) const {
  const std::vector<float>& t = drafters_[static_cast<size_t>(d)].temperatures;
  if (t.empty()) return c;
  const double T = t[std::min(static_cast<size_t>(i), t.size() - 1)];
  const double p = std::clamp(c, kConfidenceClamp, 1.0 - kConfidenceClamp);
  return 1.0 / (1.0 + std::exp(-std::log(p / (1.0 - p)) / T));
}

double DraftScheduler::history_rate(int d, int i, double prev) const {
  const PerDrafter& p = drafters_[static_cast<size_t>(d)];
  const bool seen = static_cast<size_t>(i) < p.reached.size();
  return ((seen ? p.accepted[static_cast<size_t>(i)] : 0.0) + prev) /
         ((seen ? p.reached[static_cast<size_t>(i)] : 0.0) + 1.0);
}

void DraftScheduler::survivals(int d, std::span<const float> confidence, int n,
                               std::vector<double>& out) const {
  out.resize(static_cast<size_t>(std::max(n, 0)));
  bool from_confidence = static_cast<int>(confidence.size()) >= n;
  for (int i = 0; i < n && from_confidence; ++i) from_confidence = std::isfinite(confidence[i]);
  double survive = 1.0, rate = kPriorRate;
  for (int i = 0; i < n; ++i) {
    if (from_confidence) {
      survive *= calibrated(d, i, confidence[static_cast<size_t>(i)]);
    } else {
      rate = history_rate(d, i, rate);
      survive *= rate;
    }
    out[static_cast<size_t>(i)] = survive;
  }
}

double DraftScheduler::expected_tokens(int d, int k) const {
  double tokens = 1.0, survive = 1.0, rate = kPriorRate;
  for (int i = 0; i < k; ++i) {
    rate = history_rate(d, i, rate);
    survive *= rate;
    tokens += survive;
  }
  return tokens;
}

void DraftScheduler::on_draft(int d, int64_t tokens, double seconds) {
  PerDrafter& p = drafters_[static_cast<size_t>(d)];
  p.cost.add(static_cast<double>(tokens), seconds);
  p.probes.add_draft_seconds(seconds);
}

void DraftScheduler::on_confidences(int d, std::span<const float> confidence) {
  if (mode_ != SpecSchedule::kConfidence || confidence.empty()) return;
  PerDrafter& p = drafters_[static_cast<size_t>(d)];
  if (p.recent.size() < static_cast<size_t>(kRecentDrafts)) p.recent.emplace_back();
  std::vector<double>& slot = p.recent[p.recent_next];
  p.recent_next = (p.recent_next + 1) % static_cast<size_t>(kRecentDrafts);
  survivals(d, confidence, static_cast<int>(confidence.size()), slot);
}

void DraftScheduler::on_step(int64_t rows, double seconds) {
  // A probe is judged against the plain step predicted before this step joins the costs.
  for (size_t d = 0; d < drafters_.size(); ++d) {
    PerDrafter& p = drafters_[d];
    if (!p.probes.probing()) continue;
    const int n_seqs = p.probes.n_seqs();
    if (p.probes.finish(step_, seconds, step_cost_.at(n_seqs)) || !p.losing) continue;
    // A lost probe, but the forecast it fed now prefers a length no probe tried (a draft cost
    // measured at one length extrapolates badly): try that one next step.
    const int k = best(static_cast<int>(d), n_seqs, 1);
    if (k != p.probe_length && forecast_loss(static_cast<int>(d), n_seqs, k) < 0.0) p.probes.again(step_);
  }
  step_cost_.add(rows, seconds);
  if (!drafting_) last_plain_ = step_;
}

void DraftScheduler::on_outcome(int d, int n_drafted, int n_accepted) {
  PerDrafter& p = drafters_[static_cast<size_t>(d)];
  p.probes.add_accepted(n_accepted);
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

double DraftScheduler::draft_seconds(int d, int64_t tokens) const {
  const DecayingLine& cost = drafters_[static_cast<size_t>(d)].cost;
  // Drafts measured at one length only: assume the cost is proportional to the tokens
  // (pessimistic for longer drafts when most of it is a fixed first pass, which the next
  // exploration then shows). A line through the origin as data instead would keep that
  // assumption long after other lengths were measured.
  if (tokens <= 0) return 0.0;
  if (cost.has_slope()) return cost.at(static_cast<double>(tokens));
  if (cost.mean_x() > 0.0) return cost.at(0.0) * static_cast<double>(tokens) / cost.mean_x();
  return 0.0;
}

double DraftScheduler::draft_cost(int d, int n_seqs, int k) const {
  return draft_seconds(d, static_cast<int64_t>(n_seqs) * k);
}

double DraftScheduler::forecast_rate(int d, int n_seqs, int k) const {
  const double s = static_cast<double>(n_seqs);
  const double draft_s = draft_cost(d, n_seqs, k);
  const PerDrafter& p = drafters_[static_cast<size_t>(d)];
  if (mode_ != SpecSchedule::kConfidence || p.recent.empty() || k == 0) {
    const double seconds = std::max(draft_s + step_cost_.at(s * (k + 1)), 1e-12);
    return s * expected_tokens(d, k) / seconds;
  }
  // The drafts of the last kRecentDrafts steps stand for the next one: each of their survival
  // vectors (continued past its length by the history's rates) is cut as plan() would cut it,
  // all S sequences alike; expected tokens over expected seconds.
  double tokens = 0.0, seconds = 0.0;
  for (const std::vector<double>& v : p.recent) {
    double tau = 1.0, best_tau = 1.0, survive = 1.0, rate = kPriorRate;
    double best = s / std::max(draft_s + step_cost_.at(s), 1e-12);
    int best_l = 0;
    for (int j = 0; j < k; ++j) {
      rate = history_rate(d, j, rate);
      survive = static_cast<size_t>(j) < v.size() ? v[static_cast<size_t>(j)] : survive * rate;
      tau += survive;
      const double theta = s * tau / std::max(draft_s + step_cost_.at(s * (j + 2)), 1e-12);
      if (!(theta > best)) break;
      best = theta;
      best_tau = tau;
      best_l = j + 1;
    }
    tokens += s * best_tau;
    seconds += draft_s + step_cost_.at(s * (best_l + 1));
  }
  return tokens / std::max(seconds, 1e-12);
}

int DraftScheduler::best(int d, int n_seqs, int k_min) const {
  int best_k = k_min;
  double best_rate = 0.0;
  // Lengths up to twice the longest draft seen, plus two: the unseen positions inherit the last
  // seen rate and the cost lines extrapolate. Without the look-ahead the choice stuck at the
  // lengths it had tried: with a dear first draft token (a draft model's anchor pass), two
  // tokens lost to none while four won, and the explorations from none only ever tried two.
  // A drafter that has not drafted yet is judged on the prior.
  const int limit = 2 * drafters_[static_cast<size_t>(d)].longest + 2;
  for (int k = k_min; k <= std::max(limit, k_min); ++k) {
    const double rate = forecast_rate(d, n_seqs, k);
    if (k == k_min || rate > best_rate * kLongerMargin) {
      best_k = k;
      best_rate = rate;
    }
  }
  return best_k;
}

double DraftScheduler::forecast_loss(int d, int n_seqs, int k) const {
  const double s = static_cast<double>(n_seqs);
  const double tokens = s * expected_tokens(d, k);
  const double rate = std::max(forecast_rate(d, n_seqs, k), 1e-12);
  return tokens / rate - tokens * step_cost_.at(s) / s;
}

int DraftScheduler::cap(int d, int n_seqs) {
  if (mode_ == SpecSchedule::kFixed) {
    drafting_ = true;
    return kUncapped;
  }
  const int k = choose(d, n_seqs);
  drafting_ = drafting_ || k > 0;
  return k;
}

int DraftScheduler::choose(int d, int n_seqs) {
  PerDrafter& p = drafters_[static_cast<size_t>(d)];
  // Start cheap: one-token drafts and none in turn, until both batch sizes have been measured
  // (the step cost line has a slope; a drafter may have nothing to say for a while); from there
  // the choice grows the draft only while that pays. A step-time table needs no start.
  // The start's one-token draft is a probe: if drafting then loses, it prices the wait for the next.
  if (!started_ && !step_cost_.ready()) {
    if (step_ % 2 == 0) return 0;
    p.probes.begin(n_seqs);
    p.probe_length = 1;
    return 1;
  }
  started_ = true;
  if (p.losing) return choose_losing(d, n_seqs);
  // A plain step now and then. A drafter that drafts every step leaves V measured at k + 1 rows
  // only, and its value there then stood for a plain step too (the zoo draft model: 0.7 ms
  // against 0.42 ms measured alone), which made every draft look 1.7x better than it was. A
  // table knows the one-row step already.
  if (!step_cost_.has_table() && step_ - last_plain_ >= kPlainEvery) return 0;
  const int k = best(d, n_seqs);
  if (p.probes.losses() > 0 && step_ - p.resumed >= kPaidSteps) p.probes.reset();
  if (k == 0 && p.stretch == 1 && !p.confirming) {
    // The forecast turned against drafting after one drafted step: measure its length once more
    // before believing it. That step's rows had no other measurement, and one slowed 3x by
    // another process (a 0.6b stand-in's 5-row step: 57 ms against 18) priced verification so
    // high that a drafter that paid 2x sat out 70 of 79 steps.
    p.confirming = true;
    return p.last_cap;
  }
  p.confirming = false;
  if (k == 0) {
    // Drafting loses: stop, and wait for the first probe by what the least-bad length would lose.
    p.losing = true;
    p.stretch = 0;
    p.probes.wait(step_, forecast_loss(d, n_seqs, best(d, n_seqs, 1)), step_cost_.at(n_seqs));
    return 0;
  }
  p.last_cap = k;
  ++p.stretch;
  if (step_ < p.next_explore) return k;
  // A longer draft than the choice (the drafter cuts it to its own maximum). Explorations are
  // spaced so they cost about 1 / kExploreEvery of the time (the dearer the longer draft's step
  // against the chosen one's, the rarer), except while the choice is the longest draft seen:
  // then the next length is worth trying at once.
  const int longer = std::max(k + 2, 2 * k);
  const double s = static_cast<double>(n_seqs);
  const double ratio = (draft_cost(d, n_seqs, longer) + step_cost_.at(s * (longer + 1))) /
                       std::max(draft_cost(d, n_seqs, k) + step_cost_.at(s * (k + 1)), 1e-12);
  p.next_explore =
      k >= p.longest ? step_ + 1
                     : step_ + static_cast<int64_t>(kExploreEvery * std::clamp(ratio, 1.0, 4.0));
  return longer;
}

int DraftScheduler::choose_losing(int d, int n_seqs) {
  PerDrafter& p = drafters_[static_cast<size_t>(d)];
  // Nothing is forecast between probes: the evidence only changes with one.
  if (!p.probes.due(step_)) return 0;
  const int k = best(d, n_seqs);
  if (k > 0 && p.probes.last_won()) {
    // A probe won and the forecast, fed by it, agrees: drafting pays again.
    p.losing = false;
    p.resumed = step_;
    return k;
  }
  // A probe at the least-bad length. A forecast that says drafting pays while the last probe
  // lost is not trusted yet (without a table, the plain steps between probes wash the row cost's
  // slope out of the line, which then prices verify rows as free).
  p.probes.begin(n_seqs);
  int length = k > 0 ? k : best(d, n_seqs, 1);
  // A draft cost measured at one length only is taken as proportional to the tokens, which
  // hides a dear first pass followed by cheap tokens: the probe then tries a longer draft too.
  if (!p.cost.has_slope()) length = std::max(length + 2, 2 * length);
  p.probe_length = length;
  return length;
}

void DraftScheduler::plan(std::span<PlannedDraft> drafts, double draft_seconds) {
  if (mode_ != SpecSchedule::kConfidence) {
    for (PlannedDraft& p : drafts) p.verify = p.drafted;
    return;
  }
  // Algorithm 1 (DS-paper §3.2.2): every drafted position is a candidate worth its survival;
  // admitting them in descending order keeps each sequence's admitted set a prefix (a_rj does
  // not increase with j, and ties go to the earlier position). Drafts without confidences are
  // verified whole, as the cap made them: cutting them by the history that chose the cap would
  // only undo its explorations of longer drafts, and nothing past the cap would be measured.
  candidates_.clear();
  double rows = static_cast<double>(drafts.size()), tokens = rows;  // every anchor row, its token
  for (size_t r = 0; r < drafts.size(); ++r) {
    PlannedDraft& p = drafts[r];
    p.verify = 0;
    if (p.drafter < 0 || p.drafted <= 0) continue;
    bool confident = static_cast<int>(p.confidence.size()) >= p.drafted;
    for (int j = 0; j < p.drafted && confident; ++j) confident = std::isfinite(p.confidence[static_cast<size_t>(j)]);
    survivals(p.drafter, p.confidence, p.drafted, a_);
    if (!confident) {
      p.verify = p.drafted;
      rows += p.drafted;
      for (int j = 0; j < p.drafted; ++j) tokens += a_[static_cast<size_t>(j)];
      continue;
    }
    for (int j = 0; j < p.drafted; ++j) {
      if (a_[static_cast<size_t>(j)] > 0.0) candidates_.push_back({a_[static_cast<size_t>(j)], j, static_cast<int>(r)});
    }
  }
  std::sort(candidates_.begin(), candidates_.end(), [](const Candidate& x, const Candidate& y) {
    if (x.a != y.a) return x.a > y.a;
    return x.j != y.j ? x.j < y.j : x.r < y.r;
  });
  double best = tokens / std::max(draft_seconds + step_cost_.at(rows), 1e-12);
  for (const Candidate& c : candidates_) {
    rows += 1.0;
    tokens += c.a;
    const double theta = tokens / std::max(draft_seconds + step_cost_.at(rows), 1e-12);
    if (!(theta > best)) break;  // the early stop
    best = theta;
    PlannedDraft& p = drafts[static_cast<size_t>(c.r)];
    p.verify = std::max(p.verify, c.j + 1);
  }
}

}  // namespace fulgur
