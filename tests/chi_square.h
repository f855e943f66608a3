// Pearson's chi-square statistic and its exact critical values, for the tests that check that
// samplers and speculative decoding emit tokens with the distribution they must.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace fulgur::testing_support {

// Significance of every chi-square test: a correct sampler fails one in ten thousand seeds (the
// seeds are fixed, so the tests are deterministic).
inline constexpr double kChiSquareTail = 1e-4;

// Regularized upper incomplete gamma Q(a, x) = Γ(a, x) / Γ(a): the series for P below a + 1,
// the continued fraction (modified Lentz) above.
inline double gamma_q(double a, double x) {
  if (x <= 0.0) return 1.0;
  const double log_front = a * std::log(x) - x - std::lgamma(a);
  if (x < a + 1.0) {
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 1000 && std::fabs(term) > 1e-17 * std::fabs(sum); ++n) sum += term *= x / (a + n);
    return std::max(0.0, 1.0 - sum * std::exp(log_front));
  }
  constexpr double kTiny = 1e-300;
  double b = x + 1.0 - a, c = 1.0 / kTiny, d = 1.0 / b, h = d;
  for (int i = 1; i < 1000; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < 1e-15) break;
  }
  return std::exp(log_front) * h;
}

// Upper-tail probability of chi-square(df) beyond x.
inline double chi_square_tail(double x, int df) { return gamma_q(0.5 * df, 0.5 * x); }

// The x with chi_square_tail(x, df) == tail (bisection; the tail falls monotonically in x).
inline double chi_square_critical(int df, double tail = kChiSquareTail) {
  double lo = 0.0, hi = df + 10.0;
  while (chi_square_tail(hi, df) > tail) hi *= 2.0;
  for (int it = 0; it < 200; ++it) {
    const double mid = 0.5 * (lo + hi);
    (chi_square_tail(mid, df) > tail ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// A sum of Pearson statistics over independent multinomial samples (one per context, or per
// bin of a probability-integral transform): the statistic and its degrees of freedom add.
struct ChiSquare {
  double stat = 0.0;
  int df = 0;
  int64_t n = 0;  // observations

  // Adds one multinomial sample: counts[i] observations of a cell with probability prob[i].
  // Cells whose expected count is below min_expected are pooled into one (the chi-square
  // approximation wants expected counts of about 5 or more); an observation in a cell of
  // probability 0 makes the statistic infinite.
  void add(const std::vector<double>& prob, const std::vector<int64_t>& counts, double min_expected = 5.0) {
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    if (total == 0) return;
    double other_e = 0.0, other_o = 0.0;
    int cells = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      const double e = prob[i] * static_cast<double>(total);
      if (e == 0.0 && counts[i] > 0) stat = INFINITY;
      if (e < min_expected) {
        other_e += e;
        other_o += static_cast<double>(counts[i]);
        continue;
      }
      stat += (counts[i] - e) * (counts[i] - e) / e;
      ++cells;
    }
    if (other_e > 0.0) {
      stat += (other_o - other_e) * (other_o - other_e) / other_e;
      ++cells;
    }
    df += std::max(0, cells - 1);
    n += total;
  }
  double critical(double tail = kChiSquareTail) const { return df > 0 ? chi_square_critical(df, tail) : INFINITY; }
  bool passes(double tail = kChiSquareTail) const { return df > 0 && stat < critical(tail); }
};

}  // namespace fulgur::testing_support
