// llama.cpp (the npm node-llama-cpp build) on every MoE / hybrid synth file (the Gated-DeltaNet
// hybrids and nemotron_h_moe with and without their MTP block) and every small Gemma 4 one (sliding windows
// shorter than the run, k_eq_v, proportional RoPE, experts, per-layer embeddings, KV-shared
// layers): it must load the
// file (keys, tensor names, shapes and types as its loader wants them) and its greedy output
// must be varied, or later comparisons of fulgur against it on these files prove little. The
// forward pass of fulgur itself is compared elsewhere, once it runs these archs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "llama/llama_oracle.h"

namespace fulgur::test {
namespace {

namespace fs = std::filesystem;

// Measured with seed 11 and this prompt (distinct tokens of 32, f32 / q8_0): qwen3moe tiny
// 31 / 32, nemotron_h tiny 27 / 31, nemotron_h_moe tiny 30 / 29, tiny-puzzle 29 / 30, qwen35
// tiny 31 / 31, qwen35moe tiny 30 / 30, qwen3next tiny 30 / 28, gemma4 tiny 24 / 27,
// tiny-moe 19 / 19, tiny-ple 28 / 27, gpt-oss tiny 19 / 19. A collapsed model (one token
// repeated, or a short cycle) gives 1-4; the bar leaves room for other seeds.
constexpr size_t kMinDistinct = 8;

// The Gated-DeltaNet hybrids and nemotron_h_moe (not its Puzzle shape) also come with an MTP
// block (synth --mtp): llama.cpp (which has their MTP graphs) must load that file too, and its
// trunk must give the same tokens, which holds only if block_count counts the MTP block and
// nextn_predict_layers marks it. (nemotron_h's fulgur-only block, attention + ReLU² MLP, is not
// a layout llama.cpp has: its loader wants an MTP block's MoE tensors and expert keys.)
bool has_mtp(const std::string& arch, const std::string& shape) {
  return arch == "qwen35" || arch == "qwen35moe" || arch == "qwen3next" ||
         (arch == "nemotron_h_moe" && shape != "tiny-puzzle");
}

class LlamaSynthArchs : public ::testing::TestWithParam<std::pair<const char*, const char*>> {
 protected:
  void SetUp() override {
    const std::string why = llama_oracle_missing();
    if (!why.empty()) GTEST_SKIP() << "llama.cpp oracle unavailable: " << why;
    dir_ = scratch_dir("fulgur_llama_archs");
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string dir_;
};

TEST_P(LlamaSynthArchs, LoadsAndGreedyIsVaried) {
  const auto [arch, shape] = GetParam();
  const std::vector<int32_t> prompt = {72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100, 33, 10, 300, 17};
  for (const char* type : {"f32", "q8_0"}) {
    const std::string label = std::string(arch) + " " + shape + " " + type;
    SCOPED_TRACE(label);
    const std::string gguf = synth_file(arch, shape, type, dir_);
    const GreedyRun r = llama_greedy(gguf, prompt, 32, 2, dir_);
    ASSERT_EQ(r.tokens.size(), 32u);
    for (float v : r.logits) ASSERT_TRUE(std::isfinite(v)) << "non-finite logit";
    const size_t distinct = std::set<int32_t>(r.tokens.begin(), r.tokens.end()).size();
    std::printf("[%s] llama.cpp greedy: %zu distinct tokens of 32:", label.c_str(), distinct);
    for (int32_t t : r.tokens) std::printf(" %d", t);
    std::printf("\n");
    EXPECT_GE(distinct, kMinDistinct);
    if (!has_mtp(arch, shape)) continue;
    const std::string mtp = synth_file(arch, shape, type, dir_, "--mtp");
    const GreedyRun m = llama_greedy(mtp, prompt, 32, 2, dir_);
    EXPECT_EQ(m.tokens, r.tokens) << "with the MTP block, llama.cpp's trunk gives other tokens";
    EXPECT_EQ(m.logits, r.logits);
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, LlamaSynthArchs,
                         ::testing::Values(std::pair{"qwen3moe", "tiny"}, std::pair{"nemotron_h", "tiny"},
                                           std::pair{"nemotron_h_moe", "tiny"}, std::pair{"nemotron_h_moe", "tiny-latent"},
                                           std::pair{"nemotron_h_moe", "tiny-puzzle"}, std::pair{"qwen35", "tiny"},
                                           std::pair{"qwen35moe", "tiny"}, std::pair{"qwen3next", "tiny"},
                                           std::pair{"gemma4", "tiny"}, std::pair{"gemma4", "tiny-moe"},
                                           std::pair{"gemma4", "tiny-ple"}, std::pair{"gpt-oss", "tiny"}),
                         [](const auto& info) {
                           std::string name = std::string(info.param.first) + "_" + info.param.second;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

}  // namespace
}  // namespace fulgur::test
