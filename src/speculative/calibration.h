// What `fulgur calibrate` measures once and the scheduler (speculative/scheduler.h) reads at start-up:
//  * per thread count and kernel family, the target's step-time table on this host (seconds of
//    a decode by its rows, at a given depth): the shape of the cost of verifying more rows;
//  * per draft, the temperatures of sequential temperature scaling (STS, DSpark paper §3.2.1;
//    reference/dspark-dflash-spec.md §4.5) of its confidence head, fitted on a calibration text:
//    c_k' = sigma(logit(c_k) / T_k), with T_1, T_2, ... chosen left to right, each by a grid
//    search minimising the expected calibration error of the cumulative product prod_{i<=k} c_i'
//    against whether the draft's first k tokens were all accepted, the earlier T kept fixed.
// One JSON file beside the model (MODEL.gguf.calibration.json) or where -o says:
//   {"format": "fulgur-calibration", "version": 1, "model": {"file", "size"},
//    "tables": [{"threads", "isa", "depth", "rows": [...], "seconds": [...]}],
//    "drafts": [{"file", "size", "text", "drafts", "temperatures": [...],
//                "ece_before": [...], "ece_after": [...]}]}
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "speculative/step_cost.h"

namespace fulgur {

// One verified draft of the calibration run: its raw confidences and how many were accepted.
struct StsSample {
  std::vector<float> confidence;  // [drafted]
  int n_accepted = 0;
};

struct StsFit {
  std::vector<float> temperatures;       // [positions fitted]
  std::vector<double> ece_before;        // [positions] ECE of the raw cumulative products
  std::vector<double> ece_after;         // [positions] ... after scaling
  std::vector<int64_t> samples;          // [positions] drafts that reached the position
};

// Temperatures for every draft position that at least min_samples drafts reached; none when
// not even the first has that many.
StsFit fit_temperatures(std::span<const StsSample> samples, int64_t min_samples = 20);

// The expected calibration error (20 equal bins) at draft position k (0-based) of the
// cumulative products of the confidences scaled by `temperatures` (the last one for later
// positions; none: raw), over the drafts that reached position k.
double survival_ece(std::span<const StsSample> samples, std::span<const float> temperatures, int k);

struct CalibrationTable {
  int threads = 0;
  std::string isa;
  int64_t depth = 0;  // KV positions before the measured rows
  StepTable step;
};

struct DraftCalibration {
  std::string file;   // the draft GGUF's file name (no directory)
  uint64_t size = 0;  // and its size in bytes: a changed file is not this one
  std::string text;   // the calibration text's file name
  int64_t drafts = 0; // verified drafts the fit saw
  std::vector<float> temperatures;
  std::vector<double> ece_before, ece_after;
};

struct Calibration {
  std::string model_file;
  uint64_t model_size = 0;
  std::vector<CalibrationTable> tables;
  std::vector<DraftCalibration> drafts;

  // Throws fulgur::Error naming the path and the field that is missing or wrong.
  static Calibration read(const std::string& path);
  void write(const std::string& path) const;

  const CalibrationTable* table(int threads, const std::string& isa) const;
  const DraftCalibration* draft(const std::string& file, uint64_t size) const;
  // Adds or replaces (same threads and ISA / same draft file).
  void set(CalibrationTable table);
  void set(DraftCalibration draft);
};

// Where the calibration of the model at model_path lives by default: beside it.
std::string calibration_path(const std::string& model_path);

}  // namespace fulgur
