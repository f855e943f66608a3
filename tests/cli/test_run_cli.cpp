// `fulgur run` with speculative decoding, through the binary: greedy output with -md / --spec is
// the plain greedy output, the statistics are printed (text) and returned (--json), and bad
// combinations fail before any token is generated.
#include "zoo_path.h"
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"

namespace fulgur::test {
namespace {

class RunCli : public TinyModelsCli {
 protected:
  static nlohmann::json run_json(const std::string& args, const std::string& temp = "0") {
    const RunResult r = run_fulgur(
        "run -m '" + model(1) + "' -p 'abc abc abc abc abc abc' -n 40 --json --temp " + temp + " " + args, dir_);
    EXPECT_EQ(r.status, 0) << args << ": " << r.err;
    return r.status == 0 ? nlohmann::json::parse(r.out) : nlohmann::json{};
  }
};

TEST_F(RunCli, GreedyOutputIsTheSameWithEveryDrafter) {
  const nlohmann::json plain = run_json("");
  ASSERT_TRUE(plain.contains("tokens"));
  EXPECT_EQ(plain["tokens"].size(), 40u);
  EXPECT_FALSE(plain.contains("spec"));
  const nlohmann::json self = run_json("-md '" + model(1) + "' --spec draft-model --spec-n-max 4 --spec-fixed-n");
  EXPECT_EQ(self["tokens"], plain["tokens"]);
  EXPECT_EQ(self["text"], plain["text"]);
  const nlohmann::json& s = self["spec"];
  EXPECT_EQ(s["acceptance_rate"], 1.0);
  EXPECT_EQ(s["accepted"], s["drafted"]);
  EXPECT_GT(s["verify_steps"].get<int>(), 0);
  EXPECT_GT(s["mean_accepted_length"].get<double>(), 4.0);
  EXPECT_EQ(s["per_position"].size(), 4u);
  EXPECT_EQ(s["drafters"][0]["name"], "draft-model");
  // -md alone implies --spec draft-model.
  EXPECT_EQ(run_json("-md '" + model(2) + "'")["tokens"], plain["tokens"]);
  EXPECT_EQ(run_json("--spec ngram --spec-ngram-min-n 1")["tokens"], plain["tokens"]);
  const nlohmann::json both = run_json("--spec ngram,draft-model -md '" + model(2) + "'");
  EXPECT_EQ(both["tokens"], plain["tokens"]);
  EXPECT_EQ(both["spec"]["drafters"].size(), 2u);
}

// llama.cpp's --spec-type names; n-gram lookup tried before the draft model as llama.cpp does
// unless --spec-order listed; none overrides the list.
TEST_F(RunCli, LlamaCppSpecNamesOrderAndNone) {
  const nlohmann::json plain = run_json("");
  const nlohmann::json llama = run_json("--spec draft-simple,ngram-simple -md '" + model(2) + "'");
  EXPECT_EQ(llama["tokens"], plain["tokens"]);
  ASSERT_EQ(llama["spec"]["drafters"].size(), 2u);
  EXPECT_EQ(llama["spec"]["drafters"][0]["name"], "ngram");
  EXPECT_EQ(llama["spec"]["drafters"][1]["name"], "draft-model");
  const nlohmann::json listed =
      run_json("--spec draft-simple,ngram-simple --spec-order listed -md '" + model(2) + "'");
  ASSERT_EQ(listed["spec"]["drafters"].size(), 2u);
  EXPECT_EQ(listed["spec"]["drafters"][0]["name"], "draft-model");
  const nlohmann::json none = run_json("--spec ngram-mod,none -md '" + model(2) + "'");
  EXPECT_EQ(none["tokens"], plain["tokens"]);
  EXPECT_FALSE(none.contains("spec"));
  const nlohmann::json mod = run_json("--spec ngram-mod");
  EXPECT_EQ(mod["spec"]["drafters"][0]["name"], "ngram-mod");
  const nlohmann::json preset = run_json("--spec-default");
  EXPECT_EQ(preset["tokens"], plain["tokens"]);
  EXPECT_EQ(preset["spec"]["drafters"][0]["name"], "ngram-mod");
  const nlohmann::json maps = run_json("--spec ngram-map-k4v,ngram-map-k --spec-ngram-map-k-size-n 2 --spec-ngram-map-k-size-m 4");
  EXPECT_EQ(maps["tokens"], plain["tokens"]);
  ASSERT_EQ(maps["spec"]["drafters"].size(), 2u);
  EXPECT_EQ(maps["spec"]["drafters"][0]["name"], "ngram-map-k");
  EXPECT_EQ(maps["spec"]["drafters"][1]["name"], "ngram-map-k4v");
  const nlohmann::json cache = run_json("--spec ngram-cache");
  EXPECT_EQ(cache["tokens"], plain["tokens"]);
  EXPECT_EQ(cache["spec"]["drafters"][0]["name"], "ngram-cache");
}

TEST_F(RunCli, TextModePrintsStatistics) {
  const RunResult r = run_fulgur("run -m '" + model(1) + "' -p 'hello' -n 12 --temp 0 -md '" + model(1) + "'", dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("statistics draft-model: #gen drafts = "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("mean acceptance length"), std::string::npos) << r.err;
}

TEST_F(RunCli, SamplingWithDraftRuns) {
  const nlohmann::json j = run_json("--seed 3 --ignore-eos -md '" + model(2) + "' --spec-n-max 2", "0.8");
  EXPECT_EQ(j["tokens"].size(), 40u);
  EXPECT_TRUE(j["spec"].contains("acceptance_rate"));
}

void expect_error(const std::string& args, const std::string& dir, const std::string& message) {
  const RunResult r = run_fulgur(args, dir);
  EXPECT_EQ(r.status, 1) << args;
  EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
  EXPECT_EQ(r.out, "") << "nothing may be generated: " << args;
}

TEST_F(RunCli, BadCombinationsFailBeforeGeneration) {
  const std::string base = "run -m '" + model(1) + "' -p 'hello' -n 8 ";
  expect_error(base + "--spec eagle9", dir_, "unknown speculative method 'eagle9'");
  expect_error(base + "--spec-n-max 0 -md '" + model(2) + "'", dir_, "--spec-n-max 0 must be >= 1");
  expect_error(base + "--spec draft-model", dir_, "needs a draft model (-md FILE)");
  expect_error(base + "--spec ngram -md '" + model(2) + "'", dir_, "lists none of draft-simple, draft-dflash, draft-eagle3");
  expect_error(base + "--spec draft-eagle3 -md '" + model(2) + "'", dir_, "is a 'qwen3' model, not an EAGLE-3 draft");
  expect_error(base + "--spec draft-eagle3", dir_, "needs an EAGLE-3 draft (-md FILE)");
  expect_error(base + "--spec ngram --spec-order backwards", dir_, "--spec-order 'backwards'");
  expect_error(base + "--spec ngram --spec-ngram-size-n 0", dir_, "--spec-ngram-size-n 0 must be >= 1");
  expect_error(base + "--spec ngram-map-k4v --spec-ngram-map-k4v-min-hits 0", dir_,
               "--spec-ngram-map-k4v-min-hits 0 must be >= 1");
  expect_error(base + "--spec ngram-cache -lcs /nonexistent.bin", dir_, "--lookup-cache-static '/nonexistent.bin': no such file");
  expect_error(base + "--spec ngram -lcd /nonexistent.bin", dir_, "does not list ngram-cache");
  expect_error(base + "--spec ngram-mod --spec-ngram-mod-n-match 0", dir_,
               "--spec-ngram-mod-n-match 0 must be in [1, 1024]");
  expect_error(base + "--spec dflash", dir_, "needs a DFlash/DSpark draft (-md FILE)");
  expect_error(base + "--spec dflash -md '" + model(2) + "'", dir_, "dflash");  // a plain LM is no block draft
  expect_error(base + "-md '" + dir_ + "/missing.gguf'", dir_, "missing.gguf");
}

// draft-mtp (also `mtp`) drafts with the target's own MTP block: no -md; greedy output is the
// plain one, alone and behind ngram; a target without an MTP block is refused by name.
TEST_F(RunCli, DraftMtpNeedsNoDraftFile) {
  const std::string mtp = dir_ + "/qwen35_mtp.gguf";
  const RunResult s = run_fulgur("synth --arch qwen35 --shape tiny --tokenizer builtin --seed 1 --mtp -o '" + mtp + "'", dir_);
  ASSERT_EQ(s.status, 0) << s.err;
  const auto run = [&](const std::string& args) {
    const RunResult r = run_fulgur("run -m '" + mtp + "' -p 'abc abc abc abc abc abc' -n 40 --json --temp 0 " + args, dir_);
    EXPECT_EQ(r.status, 0) << args << ": " << r.err;
    return r.status == 0 ? nlohmann::json::parse(r.out) : nlohmann::json{};
  };
  const nlohmann::json plain = run("");
  const nlohmann::json m = run("--spec draft-mtp --spec-fixed-n --spec-n-max 2");
  EXPECT_EQ(m["tokens"], plain["tokens"]);
  EXPECT_EQ(m["spec"]["drafters"][0]["name"], "draft-mtp");
  EXPECT_GT(m["spec"]["drafted"].get<int>(), 20);
  EXPECT_EQ(run("--spec mtp")["tokens"], plain["tokens"]);
  const nlohmann::json both = run("--spec ngram,draft-mtp --spec-fixed-n --spec-ngram-min-n 1");
  EXPECT_EQ(both["tokens"], plain["tokens"]);
  EXPECT_EQ(both["spec"]["drafters"].size(), 2u);
  expect_error("run -m '" + model(1) + "' -p 'hello' -n 8 --spec draft-mtp", dir_, "has no MTP block");
  expect_error("run -m '" + mtp + "' -p 'hello' -n 8 --spec draft-mtp -md '" + model(2) + "'", dir_,
               "a 'qwen3' model is not a Gemma 4 assistant");
}

// A Gemma 4 assistant written by `fulgur synth --arch gemma4-assistant --target`: llama.cpp's
// draft-mtp with -md runs it, -md alone picks it, greedy output is the plain one; a target that
// is not gemma4 is refused by name.
TEST_F(RunCli, Gemma4AssistantFromSynth) {
  const std::string target = dir_ + "/gemma4.gguf", assistant = dir_ + "/gemma4_assistant.gguf";
  const RunResult t = run_fulgur("synth --arch gemma4 --shape tiny --tokenizer builtin --seed 1 -o '" + target + "'", dir_);
  ASSERT_EQ(t.status, 0) << t.err;
  const RunResult a = run_fulgur("synth --arch gemma4-assistant --seed 2 --target '" + target + "' -o '" + assistant + "'", dir_);
  ASSERT_EQ(a.status, 0) << a.err;
  const auto run = [&](const std::string& args) {
    const RunResult r = run_fulgur("run -m '" + target + "' -p 'abc abc abc abc abc abc' -n 40 --json --temp 0 " + args, dir_);
    EXPECT_EQ(r.status, 0) << args << ": " << r.err;
    return r.status == 0 ? nlohmann::json::parse(r.out) : nlohmann::json{};
  };
  const nlohmann::json plain = run("");
  const nlohmann::json m = run("--spec draft-mtp -md '" + assistant + "' --spec-fixed-n --spec-n-max 2");
  EXPECT_EQ(m["tokens"], plain["tokens"]);
  EXPECT_EQ(m["spec"]["drafters"][0]["name"], "draft-mtp");
  EXPECT_GT(m["spec"]["drafted"].get<int>(), 20);
  EXPECT_EQ(run("-md '" + assistant + "'")["tokens"], plain["tokens"]);
  expect_error("run -m '" + model(1) + "' -p 'hello' -n 8 --spec draft-mtp -md '" + assistant + "'", dir_,
               "an assistant drafts for a gemma4 target only");
  expect_error("run -m '" + target + "' -p 'hello' -n 8 --spec draft-eagle3,draft-mtp -md '" + assistant + "'", dir_,
               "would all read -md");
}

// The same on a Nemotron-H MoE target (its block pairs with the normed hidden state); a
// nemotron_h_moe file without the block is refused naming the key.
TEST_F(RunCli, DraftMtpOnNemotronH) {
  const std::string mtp = dir_ + "/nemotron_mtp.gguf", plain_file = dir_ + "/nemotron.gguf";
  for (const auto& [out, flag] : {std::pair{mtp, " --mtp"}, std::pair{plain_file, ""}}) {
    const RunResult s = run_fulgur("synth --arch nemotron_h_moe --shape tiny --tokenizer builtin --seed 1" +
                                       std::string(flag) + " -o '" + out + "'",
                                   dir_);
    ASSERT_EQ(s.status, 0) << s.err;
  }
  const auto run = [&](const std::string& args) {
    const RunResult r = run_fulgur("run -m '" + mtp + "' -p 'abc abc abc abc abc abc' -n 40 --json --temp 0 " + args, dir_);
    EXPECT_EQ(r.status, 0) << args << ": " << r.err;
    return r.status == 0 ? nlohmann::json::parse(r.out) : nlohmann::json{};
  };
  const nlohmann::json plain = run("");
  const nlohmann::json m = run("--spec draft-mtp --spec-fixed-n --spec-n-max 3");
  EXPECT_EQ(m["tokens"], plain["tokens"]);
  EXPECT_EQ(m["spec"]["drafters"][0]["name"], "draft-mtp");
  EXPECT_GT(m["spec"]["drafted"].get<int>(), 20);
  expect_error("run -m '" + plain_file + "' -p 'hello' -n 8 --spec draft-mtp", dir_,
               "nemotron_h_moe.nextn_predict_layers is absent or 0");
}

// An EAGLE-3 draft written by `fulgur synth --arch eagle3 --target` (through its HF checkpoint
// and the converter): -md alone picks it, greedy output is the plain one, llama.cpp's names run it.
TEST_F(RunCli, Eagle3DraftFromSynth) {
  const std::string draft = dir_ + "/eagle3.gguf", hf = dir_ + "/eagle3_hf";
  const RunResult w = run_fulgur("synth --arch eagle3 --target '" + model(1) + "' --draft-vocab 200 --format specforge "
                                 "--hf '" + hf + "' -o '" + draft + "'",
                                 dir_);
  ASSERT_EQ(w.status, 0) << w.err;
  EXPECT_TRUE(std::filesystem::exists(hf + "/config.json"));
  const nlohmann::json plain = run_json("");
  const nlohmann::json e = run_json("-md '" + draft + "' --spec-n-max 3 --spec-schedule fixed");
  EXPECT_EQ(e["tokens"], plain["tokens"]);
  EXPECT_EQ(e["spec"]["drafters"][0]["name"], "draft-eagle3");
  EXPECT_GT(e["spec"]["drafted"].get<int>(), 10);
  EXPECT_EQ(run_json("--spec eagle3 -md '" + draft + "'")["tokens"], plain["tokens"]);
  // Sampled: which tokens come depends on the ISA's rounding, so an end-of-generation token may
  // too; --ignore-eos keeps the length the thing under test.
  EXPECT_EQ(run_json("--spec draft-eagle3,ngram --ignore-eos -md '" + draft + "'", "0.8")["tokens"].size(), 40u);
  expect_error("synth --arch eagle3 -o '" + dir_ + "/x.gguf'", dir_, "needs --target");
}

TEST_F(RunCli, DraftWithAnotherVocabularyIsRefused) {
  const std::string tokenizer = fulgur::test::zoo_dir() + "/zoo-qwen3-code/tokenizer.json";
  if (!std::filesystem::exists(tokenizer)) GTEST_SKIP() << "no second tokenizer at " << tokenizer;
  const std::string other = dir_ + "/other_vocab.gguf";
  const RunResult s = run_fulgur("synth --shape tiny --tokenizer '" + tokenizer + "' -o '" + other + "'", dir_);
  ASSERT_EQ(s.status, 0) << s.err;
  expect_error("run -m '" + model(1) + "' -p 'hello' -n 8 -md '" + other + "'", dir_,
               "a draft model must share the target's vocabulary");
}

}  // namespace
}  // namespace fulgur::test
