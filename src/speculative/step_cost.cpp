#include "speculative/step_cost.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace fulgur {
namespace {

// Memory of measured / table: an effective window of ~50 steps.
constexpr double kScaleDecay = 0.98;

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

double StepTable::at(double n_rows) const {
  if (rows.empty()) return 0.0;
  if (rows.size() == 1 || n_rows <= static_cast<double>(rows.front())) return seconds.front();
  // The segment holding n_rows, or the last one to extrapolate.
  size_t i = 1;
  while (i + 1 < rows.size() && static_cast<double>(rows[i]) < n_rows) ++i;
  const double x0 = static_cast<double>(rows[i - 1]), x1 = static_cast<double>(rows[i]);
  const double slope = (seconds[i] - seconds[i - 1]) / (x1 - x0);
  if (n_rows > x1) return seconds[i] + std::max(slope, 0.0) * (n_rows - x1);
  return seconds[i - 1] + slope * (n_rows - x0);
}

void StepTable::validate(const char* what) const {
  FULGUR_CHECK(rows.size() == seconds.size(), what, ": ", rows.size(), " row counts but ",
               seconds.size(), " times");
  for (size_t i = 0; i < rows.size(); ++i) {
    FULGUR_CHECK(rows[i] >= 1 && (i == 0 || rows[i] > rows[i - 1]), what, ": row counts must be >= 1 "
                 "and strictly increasing (entry ", i, " is ", rows[i], ")");
    FULGUR_CHECK(std::isfinite(seconds[i]) && seconds[i] > 0.0, what, ": the time of ", rows[i],
                 " rows is ", seconds[i], " s (must be > 0)");
  }
}

void StepTable::make_monotone() {
  // Blocks of pooled values: each holds the mean of a run of entries and their count.
  std::vector<double> mean;
  std::vector<size_t> count;
  for (double y : seconds) {
    mean.push_back(y);
    count.push_back(1);
    while (mean.size() > 1 && mean[mean.size() - 2] > mean.back()) {
      const size_t n = count.back() + count[count.size() - 2];
      const double m = (mean.back() * static_cast<double>(count.back()) +
                        mean[mean.size() - 2] * static_cast<double>(count[count.size() - 2])) / static_cast<double>(n);
      mean.pop_back();
      count.pop_back();
      mean.back() = m;
      count.back() = n;
    }
  }
  size_t i = 0;
  for (size_t b = 0; b < mean.size(); ++b) {
    for (size_t k = 0; k < count[b]; ++k) seconds[i++] = mean[b];
  }
}

void StepCost::set_table(StepTable table) {
  table.validate("step-time table");
  table_ = std::move(table);
  scale_w_ = scale_sum_ = 0.0;
}

void StepCost::add(int64_t rows, double seconds) {
  if (!has_table()) {
    line_.add(static_cast<double>(rows), seconds);
    return;
  }
  // A step that lost its core for a while says little about the next: each ratio is clipped
  // to [1/3, 3] of the current scale, as the line clips its points.
  const double scale = scale_w_ > 0.0 ? scale_sum_ / scale_w_ : 1.0;
  const double ratio = std::clamp(seconds / table_.at(static_cast<double>(rows)), scale / 3.0, scale * 3.0);
  scale_w_ = scale_w_ * kScaleDecay + 1.0;
  scale_sum_ = scale_sum_ * kScaleDecay + ratio;
}

double StepCost::at(double n_rows) const {
  if (!has_table()) return line_.at(n_rows);
  const double scale = scale_w_ > 0.0 ? scale_sum_ / scale_w_ : 1.0;
  return scale * table_.at(n_rows);
}

}  // namespace fulgur
