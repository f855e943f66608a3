#include "speculative/drafters/replay.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.h"
#include "model/batch.h"

namespace fulgur {

std::vector<float> synth_rates_for_length(double mean_length, int n_max) {
  FULGUR_CHECK(n_max >= 1, "--spec-n-max ", n_max, " must be >= 1");
  FULGUR_CHECK(mean_length >= 1.0 && mean_length <= n_max + 1.0, "--spec-synth-len ", mean_length,
               " must be in [1, --spec-n-max + 1 = ", n_max + 1, "]");
  // f(p) = p + p^2 + ... + p^n grows monotonically on [0, 1] from 0 to n: bisection.
  const auto f = [n_max](double p) {
    double s = 0.0, term = 1.0;
    for (int i = 0; i < n_max; ++i) s += (term *= p);
    return s;
  };
  double lo = 0.0, hi = 1.0;
  for (int it = 0; it < 100; ++it) {
    const double mid = 0.5 * (lo + hi);
    (f(mid) < mean_length - 1.0 ? lo : hi) = mid;
  }
  const double p = 0.5 * (lo + hi);
  std::vector<float> rates(static_cast<size_t>(n_max));
  double r = 1.0;
  for (float& x : rates) x = static_cast<float>(r *= p);
  return rates;
}

std::vector<float> parse_synth_rates(const std::string& text) {
  std::vector<float> rates;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    float v = -1.0f;
    try {
      v = std::stof(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    FULGUR_CHECK(used > 0 && used == item.size() && v >= 0.0f && v <= 1.0f,
                 "--spec-synth-rates: '", item, "' is not a probability in [0, 1]");
    FULGUR_CHECK(rates.empty() || v <= rates.back(), "--spec-synth-rates: ", v, " after ", rates.back(),
                 "; rates are unconditional per-position acceptance probabilities and must not increase");
    rates.push_back(v);
  }
  FULGUR_CHECK(!rates.empty(), "--spec-synth-rates: empty list");
  return rates;
}

namespace {

// A standard normal draw (Box-Muller).
double normal(Rng& rng) {
  const double u = 1.0 - rng.uniform();  // (0, 1]
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * M_PI * rng.uniform());
}

// A Gamma(shape, 1) draw: Marsaglia and Tsang's method, shape < 1 through Gamma(shape + 1).
double gamma(Rng& rng, double shape) {
  if (shape < 1.0) return gamma(rng, shape + 1.0) * std::pow(1.0 - rng.uniform(), 1.0 / shape);
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double x = normal(rng), v0 = 1.0 + c * x;
    if (v0 <= 0.0) continue;
    const double v = v0 * v0 * v0, u = 1.0 - rng.uniform();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

// A Beta(a, b) draw; the degenerate ends (a or b = 0) are the point masses.
double beta(Rng& rng, double a, double b) {
  if (a <= 0.0) return 0.0;
  if (b <= 0.0) return 1.0;
  const double x = gamma(rng, a), y = gamma(rng, b);
  return x / (x + y);
}

}  // namespace

ReplayDrafter::ReplayDrafter(std::vector<float> rates, int n_vocab, uint64_t seed, double confidence_kappa)
    : rates_(std::move(rates)), n_vocab_(n_vocab), kappa_(confidence_kappa), rng_(seed), refs_(kMaxSequences) {
  FULGUR_CHECK(!rates_.empty(), "synth drafter: no rates");
  FULGUR_CHECK(kappa_ >= 0.0 && std::isfinite(kappa_), "--spec-synth-confidence ", kappa_, " must be >= 0");
  FULGUR_CHECK(n_vocab_ >= 2, "synth drafter: needs at least 2 tokens to draft a wrong one");
}

void ReplayDrafter::set_reference(int seq, std::vector<int32_t> tokens, int32_t pos0) {
  refs_.at(static_cast<size_t>(seq)) = {std::move(tokens), pos0};
}

void ReplayDrafter::draft(const DraftRequest& req, Draft& out) {
  const Reference& ref = refs_.at(static_cast<size_t>(req.seq));
  // Index in the reference of the token after the anchor.
  const int64_t next = static_cast<int64_t>(req.anchor_pos) + 1 - ref.pos0;
  if (next < 0) return;
  const int64_t available = static_cast<int64_t>(ref.tokens.size()) - next;
  const int64_t n = std::min<int64_t>({static_cast<int64_t>(rates_.size()), req.n_max, available});
  bool on_track = true;
  float prev = 1.0f;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t right = ref.tokens[static_cast<size_t>(next + i)];
    const float rate = rates_[static_cast<size_t>(i)];
    // P(position i right | all before right) = rates[i] / rates[i-1].
    if (kappa_ > 0.0) {
      const double r = prev > 0.0f ? std::min(1.0, static_cast<double>(rate) / prev) : 0.0;
      const double c = beta(rng_, kappa_ * r, kappa_ * (1.0 - r));
      out.confidence.push_back(static_cast<float>(c));
      on_track = on_track && rng_.uniform() < c;
    } else if (on_track) {
      on_track = prev > 0.0f && rng_.uniform() * prev < rate;
    }
    prev = rate;
    out.tokens.push_back(on_track ? right : (right + 1) % n_vocab_);
  }
}

}  // namespace fulgur
