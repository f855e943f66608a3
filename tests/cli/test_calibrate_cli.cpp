// `fulgur calibrate` through the binary: it writes the step-time table beside the model (or to
// -o), run then reads it (and says so) with unchanged greedy output; with the repository's zoo
// DSpark pair and a text it also fits the confidence temperatures that run picks up; bad
// calibration files and bad arguments fail with a message naming them, before generation.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"

namespace fulgur::test {
namespace {

class CalibrateCli : public TinyModelsCli {
 protected:
  static std::string run_args(const std::string& extra, int threads = 1) {
    return "run -m '" + model(1) + "' -p 'abc abc abc abc abc abc' -n 24 --json --temp 0 -t " +
           std::to_string(threads) + " " + extra;
  }
};

void expect_error(const std::string& args, const std::string& dir, const std::string& message) {
  const RunResult r = run_fulgur(args, dir);
  EXPECT_EQ(r.status, 1) << args;
  EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
  EXPECT_EQ(r.out, "") << "nothing may be generated: " << args;
}

TEST_F(CalibrateCli, WritesTheTableBesideTheModelAndRunUsesIt) {
  const std::string beside = model(1) + ".calibration.json";
  std::filesystem::remove(beside);
  const RunResult plain = run_fulgur(run_args(""), dir_);
  ASSERT_EQ(plain.status, 0) << plain.err;
  const std::string spec = "-md '" + model(2) + "' --spec-n-max 4";
  const RunResult before = run_fulgur(run_args(spec), dir_);
  ASSERT_EQ(before.status, 0) << before.err;
  EXPECT_NE(before.err.find("step costs are measured on the fly"), std::string::npos) << before.err;

  const RunResult cal = run_fulgur("calibrate -m '" + model(1) + "' -t 1 -r 2 --depth 8 --max-rows 6", dir_);
  ASSERT_EQ(cal.status, 0) << cal.err;
  ASSERT_TRUE(std::filesystem::exists(beside));
  const nlohmann::json j = nlohmann::json::parse(read_text(beside));
  EXPECT_EQ(j["format"], "fulgur-calibration");
  EXPECT_EQ(j["model"]["file"], "tiny1.gguf");
  ASSERT_EQ(j["tables"].size(), 1u);
  EXPECT_EQ(j["tables"][0]["threads"], 1);
  EXPECT_EQ(j["tables"][0]["rows"], nlohmann::json({1, 2, 3, 4, 5, 6}));
  const std::vector<double> seconds = j["tables"][0]["seconds"];
  for (size_t i = 1; i < seconds.size(); ++i) EXPECT_GE(seconds[i], seconds[i - 1]);  // made monotone

  const RunResult after = run_fulgur(run_args(spec), dir_);
  ASSERT_EQ(after.status, 0) << after.err;
  EXPECT_NE(after.err.find("step-time table from"), std::string::npos) << after.err;
  EXPECT_EQ(nlohmann::json::parse(after.out)["tokens"], nlohmann::json::parse(plain.out)["tokens"]);
  // Another thread count has no table: measured on the fly.
  const RunResult two = run_fulgur(run_args(spec, 2), dir_);
  ASSERT_EQ(two.status, 0) << two.err;
  EXPECT_NE(two.err.find("no step-time table for 2 threads"), std::string::npos) << two.err;
  // fixed (llama.cpp's schedule) reads nothing.
  const RunResult fixed = run_fulgur(run_args(spec + " --spec-schedule fixed"), dir_);
  ASSERT_EQ(fixed.status, 0) << fixed.err;
  EXPECT_EQ(fixed.err.find("step-time table"), std::string::npos) << fixed.err;

  // -o writes elsewhere and leaves the file beside the model alone; --spec-calibration reads it.
  const std::string other = dir_ + "/other.json";
  ASSERT_EQ(run_fulgur("calibrate -m '" + model(1) + "' -t 1 -r 1 --depth 0 --max-rows 2 -o '" + other + "'", dir_).status, 0);
  EXPECT_EQ(nlohmann::json::parse(read_text(beside))["tables"][0]["rows"].size(), 6u);
  const RunResult chosen = run_fulgur(run_args(spec + " --spec-calibration '" + other + "'"), dir_);
  ASSERT_EQ(chosen.status, 0) << chosen.err;
  EXPECT_NE(chosen.err.find("step-time table from " + other + " (1 threads, "), std::string::npos) << chosen.err;
  EXPECT_NE(chosen.err.find("2 row counts"), std::string::npos) << chosen.err;
  // Measured for another model: not used, and said so.
  const RunResult foreign = run_fulgur("run -m '" + model(2) + "' -p 'abc' -n 4 -t 1 -md '" + model(1) +
                                           "' --spec-calibration '" + other + "'",
                                       dir_);
  ASSERT_EQ(foreign.status, 0) << foreign.err;
  EXPECT_NE(foreign.err.find("was measured for tiny1.gguf"), std::string::npos) << foreign.err;
  std::filesystem::remove(beside);
}

TEST_F(CalibrateCli, BadCalibrationFilesFailBeforeGeneration) {
  const std::string spec = "-md '" + model(2) + "' --spec-n-max 4";
  const std::string bad = dir_ + "/bad.json";
  std::ofstream(bad) << R"({"format": "fulgur-calibration", "version": 1, "model": {"file": "tiny1.gguf"}})";
  expect_error(run_args(spec + " --spec-calibration '" + bad + "'"), dir_, bad + ": model: missing field 'size'");
  expect_error(run_args(spec + " --spec-calibration '" + dir_ + "/none.json'"), dir_, "none.json': no such file");
  // A broken file beside the model is not skipped silently either.
  const std::string beside = model(1) + ".calibration.json";
  std::ofstream(beside) << "{ truncated";
  expect_error(run_args(spec), dir_, beside + ": not JSON");
  std::filesystem::remove(beside);
  // calibrate's own arguments.
  expect_error("calibrate -m '" + model(1) + "' -md '" + model(2) + "'", dir_, "needs a calibration text (-f FILE)");
  const std::string text = dir_ + "/text.txt";
  std::ofstream(text) << std::string(2000, 'a');
  expect_error("calibrate -m '" + model(1) + "' -t 1 -r 1 --max-rows 2 -md '" + model(2) + "' -f '" + text +
                   "' -o '" + dir_ + "/x.json'",
               dir_, "has no confidence head");
  expect_error("calibrate -m '" + model(1) + "' --max-rows 0", dir_, "--max-rows >= 1");
}

// The repository's zoo pair (zoo/README.md): the DSpark draft's confidence temperatures are fitted
// on a text and run applies them.
TEST_F(CalibrateCli, FitsTheDsparkTemperaturesThatRunApplies) {
  const std::string zoo = std::string(FULGUR_SOURCE_DIR) + "/zoo";
  const std::string target = zoo + "/code-q8_0.gguf", draft = zoo + "/code-dspark-q8_0.gguf";
  if (!std::filesystem::exists(target) || !std::filesystem::exists(draft)) GTEST_SKIP() << "no zoo pair in " << zoo;
  const std::string out = dir_ + "/zoo.json";
  const RunResult cal = run_fulgur("calibrate -m '" + target + "' -md '" + draft + "' -f '" +
                                       std::string(FULGUR_SOURCE_DIR) + "/README.md' -o '" + out +
                                       "' -t 1 -r 1 --max-rows 4 --prompts 8 --prompt-len 32 -n 32",
                                   dir_);
  ASSERT_EQ(cal.status, 0) << cal.err;
  EXPECT_NE(cal.out.find("per-position acceptance"), std::string::npos) << cal.out;
  const nlohmann::json j = nlohmann::json::parse(read_text(out));
  ASSERT_EQ(j["drafts"].size(), 1u);
  EXPECT_EQ(j["drafts"][0]["file"], "code-dspark-q8_0.gguf");
  EXPECT_EQ(j["drafts"][0]["text"], "README.md");
  EXPECT_GE(j["drafts"][0]["drafts"].get<int>(), 20);
  const std::vector<float> t = j["drafts"][0]["temperatures"];
  ASSERT_FALSE(t.empty());
  for (float x : t) EXPECT_GT(x, 0.0f);
  const RunResult run = run_fulgur("run -m '" + target + "' -md '" + draft + "' -p 'def main(' -n 16 -t 1 --temp 0 "
                                       "--spec-calibration '" + out + "'",
                                   dir_);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find("confidence temperatures for"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace fulgur::test
