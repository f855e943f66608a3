// A stand-in (`fulgur standin`) keeps the layout llama.cpp reads: every block's FFN widened by the
// same number of units, so feed_forward_length stays one value. It must load in llama.cpp (the
// npm node-llama-cpp build) and give there the greedy tokens llama.cpp gives for its source, and
// the ones fulgur gives for the stand-in.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "llama/llama_oracle.h"

namespace fulgur::test {
namespace {

TEST(StandinLlama, Qwen3ZooStandinGivesTheSourcesGreedyTokensInLlamaCpp) {
  const std::string why = llama_oracle_missing();
  if (!why.empty()) GTEST_SKIP() << "llama.cpp oracle unavailable: " << why;
  const std::string dir = scratch_dir("fulgur_llama_standin");
  const std::string src = std::string(FULGUR_SOURCE_DIR) + "/zoo/code-q8_0.gguf";
  const std::string out = dir + "/standin.gguf";
  run_fulgur_ok("standin -m '" + src + "' --size-bytes 9000000 -o '" + out + "'", dir);
  const std::string ids = run_fulgur_ok(
      "tokenize --json -m '" + src + "' -p 'import os\nimport sys\n\n\ndef read_lines(path):\n    with open(path) as f:\n'",
      dir);
  const std::vector<int32_t> prompt = nlohmann::json::parse(ids).at("ids").get<std::vector<int32_t>>();

  constexpr int kSteps = 32;
  const GreedyRun source = llama_greedy(src, prompt, kSteps, 2, dir);
  const GreedyRun standin = llama_greedy(out, prompt, kSteps, 2, dir);
  ASSERT_EQ(source.tokens.size(), static_cast<size_t>(kSteps));
  EXPECT_EQ(standin.tokens, source.tokens);
  // The zero columns add nothing in llama.cpp either: the prompt's logits are the source's.
  ASSERT_FALSE(source.logits.empty());
  ASSERT_EQ(standin.logits.size(), source.logits.size());
  float diff = 0;
  for (size_t i = 0; i < source.logits.size(); ++i) diff = std::max(diff, std::fabs(standin.logits[i] - source.logits[i]));
  std::printf("[stand-in in llama.cpp] %d greedy tokens as the source's; prompt logits differ by at most %.3g\n",
              kSteps, static_cast<double>(diff));
  EXPECT_LE(diff, 1e-4f) << "largest logit difference between the stand-in and its source in llama.cpp";
  EXPECT_EQ(fulgur_run_cli(out, prompt, kSteps, dir), standin.tokens) << "fulgur and llama.cpp on the stand-in";
  // And in fulgur.
  const GreedyRun ours_source = fulgur_greedy(src, prompt, kSteps, 2);
  const GreedyRun ours = fulgur_greedy(out, prompt, kSteps, 2);
  EXPECT_EQ(ours.tokens, ours_source.tokens);
  ASSERT_EQ(ours.logits.size(), ours_source.logits.size());
  float ours_diff = 0;
  for (size_t i = 0; i < ours.logits.size(); ++i) ours_diff = std::max(ours_diff, std::fabs(ours.logits[i] - ours_source.logits[i]));
  std::printf("[stand-in in fulgur] prompt logits differ from the source's by at most %.3g\n", static_cast<double>(ours_diff));
  EXPECT_LE(ours_diff, 1e-4f);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fulgur::test
