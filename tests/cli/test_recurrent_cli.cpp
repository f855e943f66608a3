// A recurrent target (nemotron_h_moe: Mamba2 + attention + MoE) through the fulgur binary: `run`
// gives the plain greedy output with every drafter, recurrent draft models included; `bench
// --verify` times a verification batch with and without the states kept after each row; `bench
// --spec-synth-len` (which checks its speculative output against plain decoding) runs; and a
// file with a Mamba2 tensor of the wrong shape or a per-layer array of the wrong length ends in
// exit status 1 naming it, with nothing generated.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "gguf_edit.h"

namespace fulgur::test {
namespace {

class RecurrentCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = make_cli_temp_dir();
    for (const char* arch : {"nemotron_h_moe", "nemotron_h"}) {
      const RunResult r =
          run_fulgur(std::string("synth --arch ") + arch + " --shape tiny --tokenizer builtin -o '" + model(arch) + "'", dir_);
      ASSERT_EQ(r.status, 0) << r.err;
    }
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  static std::string model(const std::string& arch) { return dir_ + "/" + arch + ".gguf"; }
  static nlohmann::json run_json(const std::string& args) {
    const RunResult r = run_fulgur("run -m '" + model("nemotron_h_moe") +
                                       "' -p 'abc abc abc abc abc abc' -n 40 --json --temp 0 " + args,
                                   dir_);
    EXPECT_EQ(r.status, 0) << args << ": " << r.err;
    return r.status == 0 ? nlohmann::json::parse(r.out) : nlohmann::json{};
  }
  static std::string dir_;
};
std::string RecurrentCli::dir_;

TEST_F(RecurrentCli, RunGivesThePlainGreedyOutputWithEveryDrafter) {
  const nlohmann::json plain = run_json("");
  ASSERT_EQ(plain["tokens"].size(), 40u);
  const nlohmann::json self =
      run_json("-md '" + model("nemotron_h_moe") + "' --spec draft-model --spec-n-max 4 --spec-fixed-n");
  EXPECT_EQ(self["tokens"], plain["tokens"]);
  EXPECT_EQ(self["spec"]["acceptance_rate"], 1.0);
  EXPECT_GT(self["spec"]["mean_accepted_length"].get<double>(), 4.0);
  const nlohmann::json other = run_json("-md '" + model("nemotron_h") + "' --spec-n-max 3 --spec-fixed-n");
  EXPECT_EQ(other["tokens"], plain["tokens"]);
  EXPECT_GT(other["spec"]["drafted"].get<int>(), 0);
  EXPECT_EQ(run_json("--spec ngram --spec-ngram-min-n 1 --spec-fixed-n")["tokens"], plain["tokens"]);
}

TEST_F(RecurrentCli, BenchTimesVerificationWithTheStatesKept) {
  const RunResult r = run_fulgur("bench -m '" + model("nemotron_h_moe") + "' -p 32 -n 8 -r 1 -t 1 --json", dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verify_rows"], 8);
  EXPECT_GT(j["verify_ms"].get<double>(), 0.0);
  EXPECT_GT(j["verify_no_snapshot_ms"].get<double>(), 0.0);
  EXPECT_GT(j["one_row_no_snapshot_ms"].get<double>(), 0.0);
  EXPECT_LT(j["verify_snapshot_share"].get<double>(), 1.0);
  // 3 Mamba2 layers of (K-1)·(Di + 2GN) + Hs·P·N floats: 3 · (3·320 + 8·32·16) · 4 bytes.
  EXPECT_DOUBLE_EQ(j["snapshot_mb_per_row"].get<double>(), 3 * (3 * 320 + 8 * 32 * 16) * 4 / 1e6);
  const RunResult text = run_fulgur("bench -m '" + model("nemotron_h_moe") + "' -p 32 -n 8 -r 1 -t 1", dir_);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("verify keeping no recurrent state"), std::string::npos) << text.out;
  const RunResult spec =
      run_fulgur("bench -m '" + model("nemotron_h_moe") + "' -p 32 -n 24 -r 1 -t 1 --spec-synth-len 2,6 --json", dir_);
  ASSERT_EQ(spec.status, 0) << spec.err;
  EXPECT_EQ(nlohmann::json::parse(spec.out)["spec"].size(), 2u);
}

void expect_refused(const std::string& path, const std::string& dir, const std::vector<std::string>& pieces) {
  const RunResult r = run_fulgur("run -m '" + path + "' -p 'hello' -n 4 --temp 0", dir);
  EXPECT_EQ(r.status, 1) << path;
  for (const std::string& p : pieces) EXPECT_NE(r.err.find(p), std::string::npos) << "missing '" << p << "' in\n" << r.err;
  EXPECT_EQ(r.out, "") << "nothing may be generated";
}

TEST_F(RecurrentCli, BadFilesExitOneNamingTheTensorOrKey) {
  testing_support::GgufEdit conv;
  conv.tensors["blk.2.ssm_conv1d.weight"] = {{4, 300}, std::vector<float>(1200, 0.0f)};
  expect_refused(testing_support::write_edited_gguf(model("nemotron_h_moe"), dir_ + "/bad_conv.gguf", conv), dir_,
                 {"fulgur: error:", "blk.2.ssm_conv1d.weight", "{4, 300}", "{4, 320}"});
  testing_support::GgufEdit len;
  len.metadata = [](GgufWriter& w) {
    w.set_array("nemotron_h_moe.feed_forward_length", std::vector<int32_t>{0, 128, 0, 0, 128});
  };
  expect_refused(testing_support::write_edited_gguf(model("nemotron_h_moe"), dir_ + "/bad_len.gguf", len), dir_,
                 {"fulgur: error:", "nemotron_h_moe.feed_forward_length", "expected 6", "got 5"});
}

}  // namespace
}  // namespace fulgur::test
