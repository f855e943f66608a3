// synth, tokenize, run and bench end to end through the fulgur binary.
#include <gtest/gtest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "cli_test_util.h"

namespace fulgur::test {
namespace {

class Commands : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(make_cli_temp_dir());
    const RunResult r = run_fulgur("synth --shape tiny --seed 3 --type q8_0 --tokenizer builtin -o '" +
                                       *dir_ + "/m.gguf'", *dir_);
    ASSERT_EQ(r.status, 0) << r.err;
  }
  static std::string model() { return "'" + *dir_ + "/m.gguf'"; }
  static std::string* dir_;
};
std::string* Commands::dir_ = nullptr;

TEST_F(Commands, SynthIsDeterministicPerSeed) {
  const std::string d = *dir_;
  ASSERT_EQ(run_fulgur("synth --shape tiny --seed 3 --type q8_0 --tokenizer builtin -o '" + d + "/again.gguf'", d).status, 0);
  ASSERT_EQ(run_fulgur("synth --shape tiny --seed 4 --type q8_0 --tokenizer builtin -o '" + d + "/other.gguf'", d).status, 0);
  EXPECT_EQ(read_text(d + "/m.gguf"), read_text(d + "/again.gguf"));
  EXPECT_NE(read_text(d + "/m.gguf"), read_text(d + "/other.gguf"));
}

TEST_F(Commands, SynthRejectsUnknownShape) {
  const RunResult r = run_fulgur("synth --shape 70b -o '" + *dir_ + "/x.gguf'", *dir_);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("70b"), std::string::npos) << r.err;
}

TEST_F(Commands, TokenizeJsonRoundTripsThroughRun) {
  const RunResult t = run_fulgur("tokenize -m " + model() + " -p 'def add(a, b):' --json", *dir_);
  ASSERT_EQ(t.status, 0) << t.err;
  const auto ids = nlohmann::json::parse(t.out)["ids"].get<std::vector<int>>();
  ASSERT_FALSE(ids.empty());
  // The same prompt as text or as ids gives the same greedy continuation.
  std::string csv;
  for (int id : ids) {
    if (!csv.empty()) csv += ',';
    csv += std::to_string(id);
  }
  const RunResult a = run_fulgur("run -m " + model() + " -p 'def add(a, b):' -n 12 --temp 0 --ignore-eos --json", *dir_);
  const RunResult b = run_fulgur("run -m " + model() + " --prompt-ids " + csv + " -n 12 --temp 0 --ignore-eos --json", *dir_);
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  const auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  EXPECT_EQ(ja["tokens"], jb["tokens"]);
  EXPECT_EQ(ja["tokens"].size(), 12u);
  EXPECT_EQ(ja["prompt_tokens"].get<size_t>(), ids.size());
  EXPECT_TRUE(ja["timings"].contains("decode_tok_s"));
}

TEST_F(Commands, RunChatUsesTheStoredTemplate) {
  const RunResult r = run_fulgur("run -m " + model() + " -p hello --chat -n 4 --temp 0 --ignore-eos --json", *dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  // "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n": 3 special tokens among them.
  EXPECT_GT(nlohmann::json::parse(r.out)["prompt_tokens"].get<int>(), 5);
}

TEST_F(Commands, SampledRunIsReproducibleBySeed) {
  const std::string cmd = "run -m " + model() + " -p 'x = ' -n 16 --temp 0.9 --ignore-eos --json --seed ";
  const RunResult a = run_fulgur(cmd + "7", *dir_), b = run_fulgur(cmd + "7", *dir_);
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(nlohmann::json::parse(a.out)["tokens"], nlohmann::json::parse(b.out)["tokens"]);
}

TEST_F(Commands, PromptLongerThanContextIsAnError) {
  const RunResult r = run_fulgur("run -m " + model() + " -p 'a b c d e f g h i j k l m n o p' -c 8 -n 4", *dir_);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("context"), std::string::npos) << r.err;
}

// `run --json` reports the KV memory its context holds for -c cells: every cell of a
// full-attention layer, but on a sliding-window layer only the window and a batch (gemma4's
// tiny shape: window 16), so the memory grows with -c at the full layers' rate alone; a model
// without windows (qwen3) grows from (almost) zero.
TEST_F(Commands, RunJsonReportsTheKvMemoryBoundedByTheWindow) {
  ASSERT_EQ(run_fulgur("synth --arch gemma4 --shape tiny --seed 3 --tokenizer builtin -o '" + *dir_ + "/g4.gguf'", *dir_).status, 0);
  const auto kv = [&](const std::string& m, int n_ctx) {
    const RunResult r = run_fulgur("run -m '" + *dir_ + "/" + m + "' -p 'abc' -n 1 --json -c " + std::to_string(n_ctx), *dir_);
    EXPECT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["n_ctx"].get<int>(), n_ctx);
    return j["kv_mib"].get<double>();
  };
  std::map<std::string, double> fixed;  // what does not grow with the context
  for (const std::string m : {"g4.gguf", "m.gguf"}) {
    const double a = kv(m, 2048), b = kv(m, 4096), c = kv(m, 8192);
    EXPECT_GT(a, 0.0) << m;
    EXPECT_DOUBLE_EQ(c - b, 2 * (b - a)) << m << ": grows linearly with the context";
    fixed[m] = a - (b - a);
  }
  // qwen3's window cache is one placeholder cell; gemma4's sliding layers hold their window.
  EXPECT_LT(fixed["m.gguf"], 0.05);
  EXPECT_GT(fixed["g4.gguf"], 10 * fixed["m.gguf"]);
}

TEST_F(Commands, BenchJsonHasMedians) {
  const RunResult r = run_fulgur("bench -m " + model() + " -p 16 -n 8 -r 2 -t 1 --json", *dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["prefill_tok_s"].get<double>(), 0.0);
  EXPECT_GT(j["decode_tok_s"].get<double>(), 0.0);
}

// --floor reads the weights between chunks of 16 tokens: 40 tokens make 3 chunks, each with a
// read speed and a share of the floor; without --floor none of it is reported.
TEST_F(Commands, BenchFloorReportsEveryChunk) {
  const RunResult r = run_fulgur("bench -m " + model() + " -p 0 -n 40 -r 2 -t 2 --verify 0 --floor --json", *dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["floor_chunks"].get<int>(), 6);  // 3 per repetition
  EXPECT_GT(j["floor_read_gb_s"].get<double>(), 0.0);
  EXPECT_GT(j["decode_share_of_floor"].get<double>(), 0.0);
  EXPECT_LE(j["decode_share_of_floor_min"].get<double>(), j["decode_share_of_floor_max"].get<double>());
  const RunResult plain = run_fulgur("bench -m " + model() + " -p 0 -n 8 -r 1 -t 1 --verify 0 --json", *dir_);
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_FALSE(nlohmann::json::parse(plain.out).contains("floor_chunks"));
}

// At depth the floor also counts the f16 K and V cells each decoded token attends to: for a
// prompt of P tokens and N decoded ones, P + (N + 1) / 2 cells per token on average, each of
// 2 (K, V) x 2 bytes x head_count_kv x key_length per layer, as the file's metadata gives them.
TEST_F(Commands, BenchFloorCountsTheKvCellsATokenReads) {
  const RunResult r = run_fulgur("bench -m " + model() + " -p 32 -n 40 -r 1 -t 1 --verify 0 --floor --json", *dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  const RunResult ins = run_fulgur("inspect --json " + model(), *dir_);
  ASSERT_EQ(ins.status, 0) << ins.err;
  const auto meta = nlohmann::json::parse(ins.out)["metadata"];
  const double per_cell = 4.0 * meta["qwen3.block_count"].get<double>() *
                          meta["qwen3.attention.head_count_kv"].get<double>() *
                          meta["qwen3.attention.key_length"].get<double>();
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["floor_kv_gb_per_token"].get<double>() * 1e9, per_cell * (32 + 41 / 2.0));
}

// The speculative bench runs every schedule on every rate set side by side (the greedy output is
// checked against plain decoding inside it); the replay drafter's confidences reach the
// confidence schedule.
TEST_F(Commands, SpecBenchComparesSchedulesSideBySide) {
  const RunResult r = run_fulgur("bench -m " + model() + " -p 8 -n 24 -r 2 -t 1 --json --spec-synth-rates 0.8,0.5,0.3 "
                                 "--spec-synth-len 2 --spec-n-max 3 --spec-schedule fixed,adaptive,confidence "
                                 "--spec-synth-confidence 2",
                                 *dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["spec"].size(), 6u);
  EXPECT_EQ(j["spec"][0]["schedule"], "fixed");
  EXPECT_EQ(j["spec"][1]["schedule"], "adaptive");
  EXPECT_EQ(j["spec"][2]["schedule"], "confidence");
  EXPECT_EQ(j["spec"][3]["case"], "L=2, fixed");
  EXPECT_EQ(j["plain_tok_s_all"].size(), 2u);
  for (const auto& e : j["spec"]) {
    EXPECT_EQ(e["tok_s_all"].size(), 2u);
    EXPECT_GT(e["speedup"].get<double>(), 0.0);
  }
  const RunResult twice = run_fulgur("bench -m " + model() + " --spec-synth-len 2 --spec-schedule fixed,fixed", *dir_);
  EXPECT_EQ(twice.status, 1);
  EXPECT_NE(twice.err.find("fixed is listed twice"), std::string::npos) << twice.err;
  const RunResult bad = run_fulgur("bench -m " + model() + " --spec-synth-len 2 --spec-schedule sometimes", *dir_);
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("sometimes"), std::string::npos) << bad.err;
}

TEST_F(Commands, MissingModelIsAClearError) {
  const RunResult r = run_fulgur("run -m '" + *dir_ + "/nope.gguf' -p hi -n 1", *dir_);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("nope.gguf"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace fulgur::test
