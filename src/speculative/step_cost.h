// What a step of the speculative loop costs, for the scheduler (speculative/scheduler.h): seconds of a
// target decode by the rows it holds. Two sources, one interface:
//  * a step-time table measured once on this host for this model and thread count (`fulgur
//    calibrate`, speculative/calibration.h), interpolated between its rows and scaled by how the
//    steps measured now compare with it (the host's load moves every time by a common factor;
//    the table gives the shape, which one short run cannot);
//  * without a table, a least-squares line over the steps measured so far (decaying weights).
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

// Seconds of one target decode by its rows, measured at a few row counts (strictly increasing,
// seconds > 0). Between them linear; below the first, the first; past the last, the line
// through the last two (its slope clamped at >= 0).
struct StepTable {
  std::vector<int64_t> rows;
  std::vector<double> seconds;

  bool empty() const { return rows.empty(); }
  double at(double n_rows) const;
  // Throws fulgur::Error naming `what` unless the table is well formed (or empty).
  void validate(const char* what) const;
  // Replaces the times by their least-squares non-decreasing fit (pool-adjacent-violators):
  // more rows never cost less, so a measurement below an earlier one is noise (on a busy host
  // one decode of a small model is a fraction of a millisecond, and preemption decides much).
  void make_monotone();
};

class StepCost {
 public:
  StepCost() = default;
  // With a table, predictions are table(rows) times the decaying mean of measured / table.
  void set_table(StepTable table);
  bool has_table() const { return !table_.empty(); }

  // A step whose target batch had `rows` rows took `seconds`.
  void add(int64_t rows, double seconds);
  // Whether predictions at different row counts differ yet: a table, or a line with a slope.
  bool ready() const { return has_table() || line_.has_slope(); }
  // Predicted seconds of a step of n_rows rows (0 before any measurement without a table).
  double at(double n_rows) const;

 private:
  StepTable table_;
  DecayingLine line_{0.98};  // seconds per batch rows, without a table
  // measured / table, decayed like the line; 1 until a step is measured.
  double scale_w_ = 0.0, scale_sum_ = 0.0;
};

}  // namespace fulgur
