// Pearson's chi-square statistic and an approximate critical value, for the tests that check
// speculative sampling reproduces the target's distribution.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace fulgur::testing_support {

// Cells whose expected count is below min_expected are pooled into one "other" cell (the
// chi-square approximation needs expected counts of about 5 or more). Returns the statistic and
// sets df to (cells used - 1).
inline double chi_square(const std::vector<double>& expected_prob, const std::vector<int64_t>& counts,
                         int64_t n, int& df, double min_expected = 5.0) {
  double stat = 0.0, other_e = 0.0, other_o = 0.0;
  int cells = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double e = expected_prob[i] * static_cast<double>(n);
    if (e < min_expected) {
      other_e += e;
      other_o += static_cast<double>(counts[i]);
      continue;
    }
    stat += (counts[i] - e) * (counts[i] - e) / e;
    ++cells;
  }
  if (other_e > 0.0) {
    stat += (other_o - other_e) * (other_o - other_e) / std::max(other_e, 1e-9);
    ++cells;
  }
  df = cells - 1;
  return stat;
}

// Upper quantile of chi-square(df) for a standard-normal quantile z (Wilson-Hilferty); z = 3.72
// is the 1e-4 tail: a correct sampler fails such a test once in ten thousand seeds, and the
// seeds here are fixed.
inline double chi_square_critical(int df, double z = 3.72) {
  const double a = 2.0 / (9.0 * df);
  const double c = 1.0 - a + z * std::sqrt(a);
  return df * c * c * c;
}

}  // namespace fulgur::testing_support
