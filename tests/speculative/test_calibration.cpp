// The calibration file of `fulgur calibrate` (speculative/calibration.h): sequential temperature scaling
// recovers the temperatures that miscalibrated a made-up head, the file round-trips, and a bad
// file is refused naming the file and the field; the step-time table's monotone fit.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "sampling/rng.h"
#include "speculative/calibration.h"
#include "scratch_dir.h"

namespace fulgur {
namespace {

double logit(double p) { return std::log(p / (1.0 - p)); }
double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

// n drafts of `positions` tokens: position k is right with a true probability p drawn uniformly
// from (0.05, 0.95), and the head reports sigmoid(true_t[k] * logit(p)) (over-confident for
// true_t > 1), so the temperature that calibrates position k is true_t[k].
std::vector<StsSample> miscalibrated(const std::vector<double>& true_t, int n, uint64_t seed) {
  Rng rng(seed);
  std::vector<StsSample> out;
  for (int i = 0; i < n; ++i) {
    StsSample s;
    bool alive = true;
    for (double t : true_t) {
      const double p = 0.05 + 0.9 * rng.uniform();
      s.confidence.push_back(static_cast<float>(sigmoid(t * logit(p))));
      alive = alive && rng.uniform() < p;
      s.n_accepted += alive;
    }
    out.push_back(std::move(s));
  }
  return out;
}

TEST(Sts, RecoversTheTemperaturesPositionByPosition) {
  const std::vector<double> true_t = {2.0, 0.5, 1.0};
  const std::vector<StsSample> samples = miscalibrated(true_t, 20000, 7);
  const StsFit fit = fit_temperatures(samples);
  ASSERT_EQ(fit.temperatures.size(), 3u);
  for (size_t k = 0; k < true_t.size(); ++k) {
    EXPECT_NEAR(std::log(fit.temperatures[k]), std::log(true_t[k]), 0.2) << "position " << k;
    EXPECT_EQ(fit.samples[k], 20000);
    EXPECT_LE(fit.ece_after[k], fit.ece_before[k] + 1e-12) << "position " << k;
    EXPECT_LT(fit.ece_after[k], 0.02) << "position " << k;
    EXPECT_NEAR(survival_ece(samples, fit.temperatures, static_cast<int>(k)), fit.ece_after[k], 1e-6);  // T stored as float
  }
  // The miscalibrated positions were badly off before (the calibrated third one was not).
  EXPECT_GT(fit.ece_before[0], 0.05);
  EXPECT_GT(fit.ece_before[1], 0.03);
}

TEST(Sts, StopsWhereTooFewDraftsReachAPosition) {
  std::vector<StsSample> samples = miscalibrated({1.0, 1.0}, 30, 3);
  for (size_t i = 0; i < 15; ++i) samples[i].confidence.resize(1);  // 15 drafts of one token
  EXPECT_EQ(fit_temperatures(samples, 20).temperatures.size(), 1u);
  EXPECT_EQ(fit_temperatures(samples, 31).temperatures.size(), 0u);
  samples[20].confidence[0] = NAN;  // a draft without a usable confidence counts nowhere
  EXPECT_EQ(fit_temperatures(samples, 30).temperatures.size(), 0u);
  EXPECT_EQ(fit_temperatures(samples, 29).temperatures.size(), 1u);
}

class CalibrationFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fulgur::test::scratch_dir(std::string("fulgur_calibration_") +
                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  // Reading `text` fails with a message that contains `what` and the file's path.
  void expect_refused(const std::string& text, const std::string& what) {
    const std::string path = write("bad.json", text);
    try {
      Calibration::read(path);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(what), std::string::npos) << m;
      EXPECT_NE(m.find(path), std::string::npos) << m;
    }
  }
  std::filesystem::path dir_;
};

TEST_F(CalibrationFile, RoundTripsAndReplacesByKey) {
  Calibration c;
  c.model_file = "m.gguf";
  c.model_size = 1234;
  c.set(CalibrationTable{.threads = 2, .isa = "avx2", .depth = 64, .step = {{1, 2, 8}, {1e-3, 1.2e-3, 2e-3}}});
  c.set(CalibrationTable{.threads = 4, .isa = "avx2", .depth = 64, .step = {{1, 4}, {5e-4, 7e-4}}});
  c.set(CalibrationTable{.threads = 2, .isa = "avx2", .depth = 32, .step = {{1, 2}, {9e-4, 1e-3}}});  // replaces
  c.set(DraftCalibration{.file = "/some/dir/d.gguf", .size = 99, .text = "t.txt", .drafts = 10,
                         .temperatures = {1.5f, 0.5f}, .ece_before = {0.1, 0.2}, .ece_after = {0.01, 0.02}});
  const std::string path = (dir_ / "c.json").string();
  c.write(path);
  const Calibration r = Calibration::read(path);
  EXPECT_EQ(r.model_file, "m.gguf");
  EXPECT_EQ(r.model_size, 1234u);
  ASSERT_EQ(r.tables.size(), 2u);
  const CalibrationTable* t2 = r.table(2, "avx2");
  ASSERT_NE(t2, nullptr);
  EXPECT_EQ(t2->depth, 32);
  EXPECT_EQ(t2->step.rows, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(r.table(2, "avx512"), nullptr);
  EXPECT_EQ(r.table(3, "avx2"), nullptr);
  const DraftCalibration* d = r.draft("elsewhere/d.gguf", 99);  // found by file name and size
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->temperatures, (std::vector<float>{1.5f, 0.5f}));
  EXPECT_EQ(d->ece_after, (std::vector<double>{0.01, 0.02}));
  EXPECT_EQ(r.draft("d.gguf", 100), nullptr);  // another file under the same name
  EXPECT_EQ(calibration_path("/a/b.gguf"), "/a/b.gguf.calibration.json");
}

TEST_F(CalibrationFile, BadFilesAreRefusedNamingTheField) {
  const std::string head = R"({"format": "fulgur-calibration", "version": 1, "model": {"file": "m", "size": 1})";
  expect_refused("{not json", "not JSON");
  expect_refused(R"({"format": "something"})", "not a fulgur calibration file");
  expect_refused(R"({"format": "fulgur-calibration", "version": 2})", "version 2");
  expect_refused(R"({"format": "fulgur-calibration", "version": 1})", "missing field 'model'");
  expect_refused(head + R"(, "tables": [{"threads": 1, "isa": "avx2", "depth": 0, "rows": [1, 2]}]})",
                 "tables[0]: missing field 'seconds'");
  expect_refused(head + R"(, "tables": [{"threads": "x", "isa": "avx2", "depth": 0, "rows": [1], "seconds": [1]}]})",
                 "field 'threads' has the wrong type");
  expect_refused(head + R"(, "tables": [{"threads": 1, "isa": "a", "depth": 0, "rows": [2, 1], "seconds": [1, 2]}]})",
                 "tables[0]");
  expect_refused(head + R"(, "tables": [{"threads": 0, "isa": "a", "depth": 0, "rows": [1], "seconds": [1]}]})",
                 "threads >= 1");
  expect_refused(head + R"(, "drafts": [{"file": "d", "size": 1, "temperatures": [1, -2]}]})",
                 "drafts[0]: temperature -2");
  expect_refused(head + R"(, "drafts": {}})", "'drafts' must be an array");
  EXPECT_THROW(Calibration::read((dir_ / "missing.json").string()), Error);
}

TEST(StepTableFit, MakeMonotonePoolsViolators) {
  StepTable t{{1, 2, 3, 4, 5}, {1.0, 3.0, 2.0, 4.0, 3.0}};
  t.make_monotone();
  EXPECT_EQ(t.seconds, (std::vector<double>{1.0, 2.5, 2.5, 3.5, 3.5}));
  StepTable sorted{{1, 2, 3}, {1.0, 1.0, 2.0}};
  sorted.make_monotone();
  EXPECT_EQ(sorted.seconds, (std::vector<double>{1.0, 1.0, 2.0}));
}

}  // namespace
}  // namespace fulgur
