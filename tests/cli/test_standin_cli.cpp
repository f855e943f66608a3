// `fulgur standin`: a stand-in computes its source's function, so greedy output on it equals
// greedy output on the source token for token, with and without drafters (the zoo's DSpark draft
// taps the target's layers by index; the qwen35 zoo model drafts with its own MTP block, widened
// like the trunk). The stand-ins here are small (--size-bytes, a few MB over the source) so each
// test takes seconds; the Qwen3 sizes differ only in how many units are added.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_test_util.h"
#include "zoo_path.h"

namespace fulgur::test {
namespace {

namespace fs = std::filesystem;

const std::string kQwen3 = std::string(FULGUR_SOURCE_DIR) + "/zoo/code-q8_0.gguf";
const std::string kDspark = std::string(FULGUR_SOURCE_DIR) + "/zoo/code-dspark-q8_0.gguf";

// A Python prefix of the kind the zoo models were trained on.
constexpr const char* kPrompt =
    "import os\nimport sys\n\n\ndef read_lines(path):\n    \"\"\"Return the lines of the file at path.\"\"\"\n"
    "    with open(path) as f:\n        return [line.rstrip('\\n') for line in f]\n\n\n"
    "class Counter:\n    def __init__(self):\n        self.counts = {}\n\n    def add(self, key):\n";

class StandinCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_cli_temp_dir();
    prompt_ = dir_ + "/prompt.py";
    std::ofstream(prompt_, std::ios::binary) << kPrompt;
  }
  RunResult fulgur(const std::string& args) const { return run_fulgur(args, dir_); }
  // `fulgur run` greedy, --json.
  nlohmann::json run(const std::string& model, const std::string& extra = "") const {
    const RunResult r = fulgur("run -m '" + model + "' -f '" + prompt_ + "' -n 32 --temp 0 --ignore-eos --json -t 2 " +
                               extra);
    EXPECT_EQ(r.status, 0) << r.err;
    return r.status == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  }
  nlohmann::json inspect(const std::string& model) const {
    const RunResult r = fulgur("inspect --json --max-elements 4 '" + model + "'");
    EXPECT_EQ(r.status, 0) << r.err;
    return nlohmann::json::parse(r.out);
  }
  // Only `keep` in the folder (no output, no temporary file left by a refused stand-in).
  void expect_no_output(const std::string& why) const {
    for (const auto& e : fs::directory_iterator(dir_)) {
      const std::string name = e.path().filename().string();
      EXPECT_TRUE(name == "prompt.py" || name == "stdout.txt" || name == "stderr.txt" || name.ends_with(".keep.gguf"))
          << why << ": left " << name;
    }
  }
  std::string dir_, prompt_;
};

TEST_F(StandinCli, Qwen3ZooGivesTheSourcesGreedyTokensWithAndWithoutItsDsparkDraft) {
  const std::string out = dir_ + "/s.gguf";
  // The source reads ~6.1 MB per token; one unit of 256 adds 1.25 MB.
  const RunResult r = fulgur("standin -m '" + kQwen3 + "' --size-bytes 9000000 -o '" + out + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("every FFN 512 units wider"), std::string::npos) << r.err;

  const nlohmann::json meta = inspect(out)["metadata"];
  EXPECT_EQ(meta["qwen3.feed_forward_length"], 768 + 512);
  EXPECT_EQ(meta["general.name"], "zoo-qwen3-code (stand-in 9000000 bytes)");
  EXPECT_EQ(meta["fulgur.standin.source"], "code-q8_0.gguf");
  EXPECT_EQ(meta["fulgur.standin.extra_ffn"], 512);
  const RunResult text = fulgur("inspect '" + out + "'");
  EXPECT_NE(text.out.find("stand-in:    of \"code-q8_0.gguf\""), std::string::npos) << text.out;
  EXPECT_EQ(fulgur("inspect '" + kQwen3 + "'").out.find("stand-in:"), std::string::npos);

  const nlohmann::json source = run(kQwen3);
  const nlohmann::json standin = run(out);
  ASSERT_EQ(source["tokens"].size(), 32u);
  EXPECT_EQ(standin["tokens"], source["tokens"]);
  EXPECT_EQ(standin["text"], source["text"]);
  // The DSpark draft taps layers 1, 3 and 4 by index: still there, and still accepted.
  const nlohmann::json dspark = run(out, "-md '" + kDspark + "' --spec dflash --spec-n-max 7 --spec-fixed-n");
  EXPECT_EQ(dspark["tokens"], source["tokens"]);
  EXPECT_GT(dspark["spec"]["mean_accepted_length"].get<double>(), 1.5) << dspark["spec"].dump();
}

TEST_F(StandinCli, Qwen35ZooWithItsMtpBlockGivesTheSourcesGreedyTokens) {
  const std::string src = zoo_dir() + "/zoo-qwen35-code/zoo-qwen35-code-f32.gguf";
  if (!fs::exists(src)) GTEST_SKIP() << src << " not found (set FULGUR_ZOO_DIR to the zoo folder)";
  const std::string out = dir_ + "/s.gguf";
  // f32: one unit adds 3.1 MB over the 4 trunk blocks.
  const RunResult r = fulgur("standin -m '" + src + "' --size-bytes 26000000 -o '" + out + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json info = inspect(out);
  const int64_t extra = info["metadata"]["fulgur.standin.extra_ffn"].get<int64_t>();
  EXPECT_GE(extra, 256);
  EXPECT_EQ(info["metadata"]["qwen35.feed_forward_length"], 768 + extra);
  // The MTP block (blk.4) is widened like the trunk: one feed_forward_length for every block.
  int64_t mtp_down = 0;
  for (const auto& t : info["tensors"]) {
    if (t["name"] == "blk.4.ffn_down.weight") mtp_down = t["shape"][0].get<int64_t>();
  }
  EXPECT_EQ(mtp_down, 768 + extra);
  EXPECT_EQ(info["layout"]["mtp"], nlohmann::json::array({4}));

  const nlohmann::json source = run(src);
  ASSERT_EQ(source["tokens"].size(), 32u);
  EXPECT_EQ(run(out)["tokens"], source["tokens"]);
  const nlohmann::json mtp = run(out, "--spec draft-mtp --spec-n-max 2 --spec-fixed-n");
  EXPECT_EQ(mtp["tokens"], source["tokens"]);
  EXPECT_GT(mtp["spec"]["accepted"].get<int64_t>(), 0) << mtp["spec"].dump();
}

// Random-weight qwen2 and llama models in Q4_K_M's mix: the K-quant padding (Q4_K gate/up rows,
// zero Q4_K / Q6_K blocks after ffn_down's rows) changes nothing either.
TEST_F(StandinCli, SynthQwen2AndLlamaInQ4KGiveTheSourcesGreedyTokens) {
  for (const std::string arch : {"qwen2", "llama"}) {
    const std::string src = dir_ + "/" + arch + ".gguf", out = dir_ + "/" + arch + "-standin.gguf";
    const RunResult s = fulgur("synth --arch " + arch + " --shape tiny --seed 3 --tokenizer builtin --type q4_k -o '" +
                               src + "'");
    ASSERT_EQ(s.status, 0) << s.err;
    const nlohmann::json before = inspect(src);
    bool q6_k = false;
    for (const auto& t : before["tensors"]) q6_k = q6_k || (t["name"].get<std::string>().ends_with("ffn_down.weight") && t["type"] == "q6_K");
    EXPECT_TRUE(q6_k) << arch << ": some ffn_down should be Q6_K (Q4_K_M's recipe)";
    const RunResult r = fulgur("standin -m '" + src + "' --size-bytes 3000000 -o '" + out + "'");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_GT(inspect(out)["metadata"]["fulgur.standin.extra_ffn"].get<int64_t>(), 0);
    const nlohmann::json source = run(src);
    ASSERT_EQ(source["tokens"].size(), 32u) << arch;
    EXPECT_EQ(run(out)["tokens"], source["tokens"]) << arch;
  }
}

TEST_F(StandinCli, RefusesDraftsOtherArchsSmallerSizesAndUnknownSizesLeavingNoFile) {
  const std::string out = dir_ + "/s.gguf";
  struct Case {
    std::string args, message;
  };
  const RunResult moe = fulgur("synth --arch qwen3moe --shape tiny --tokenizer builtin --type q8_0 -o '" + dir_ +
                               "/moe.keep.gguf'");
  ASSERT_EQ(moe.status, 0) << moe.err;
  for (const Case& c : {
           Case{"-m '" + kDspark + "' --size 0.6b", "is a dflash draft"},
           Case{"-m '" + dir_ + "/moe.keep.gguf' --size 0.6b", "cannot pad arch 'qwen3moe'"},
           Case{"-m '" + kQwen3 + "' --size-bytes 1000", "already reads"},
           Case{"-m '" + kQwen3 + "' --size 2b", "unknown --size '2b'"},
           Case{"-m '" + kQwen3 + "'", "give --size"},
           Case{"-m '" + kQwen3 + "' --size 0.6b --size-bytes 9000000", "both given"},
           Case{"-m '" + kQwen3 + "' --size 0.6b --type q5_k", "unknown --type 'q5_k'"},
       }) {
    const RunResult r = fulgur("standin " + c.args + " -o '" + out + "'");
    EXPECT_EQ(r.status, 1) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
    expect_no_output(c.args);
  }
}

}  // namespace
}  // namespace fulgur::test
