// End to end on generated models: speculative sampling with a draft model whose q differs
// markedly from the target's p emits tokens with exactly the target's distribution (chi-square
// over the first two tokens, bucketed into the likely pairs and "other"). The test detects a
// verifier that resamples from p instead of the residual after a rejection.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "chi_square.h"
#include "spec/drafters/draft_model.h"
#include "spec_fixture.h"

namespace fulgur {
namespace {

using testing_support::chi_square;
using testing_support::chi_square_critical;
using testing_support::tiny_model;

// Distribution after `tokens` under the model.
Distribution next_distribution(const Model& m, const std::vector<int32_t>& tokens, const SamplerParams& sp) {
  Context ctx(m, {.n_ctx = 64, .n_batch = 64, .n_threads = 1});
  Batch b;
  for (size_t i = 0; i < tokens.size(); ++i) b.add(tokens[i], static_cast<int32_t>(i), 0, i + 1 == tokens.size());
  ctx.decode(b);
  return compute_distribution(ctx.logits(b.size() - 1), static_cast<int>(m.n_vocab()), sp, tokens);
}

std::vector<int32_t> top_ids(const Distribution& d, size_t n) {
  std::vector<int32_t> ids(d.ids().begin(), d.ids().end());
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return d.prob(a) > d.prob(b); });
  ids.resize(std::min(n, ids.size()));
  return ids;
}

// Target: tiny seed 1. Draft: the same shape with weights of `dtype` from seed `dseed`. Sampling
// at `temp` with top-k `topk` (the target's settings apply to the draft's q too). Emits 3 tokens
// per sequence with at most 2 drafts per step; the first two tokens' joint distribution is
// compared with the target's exact one (pairs among the 8 likeliest of each step; the rest pooled).
void run_case(DType dtype, uint64_t dseed, float temp, int topk) {
  Model target(tiny_model("qwen3", DType::kF32, 1));
  Model draft(tiny_model("qwen3", dtype, dseed));
  SamplerParams sp;
  sp.temperature = temp;
  sp.top_k = topk;
  sp.top_p = 1.0f;
  sp.min_p = 0.0f;
  const std::vector<int32_t> prompt = {72, 101, 108, 108, 111};

  // Exact probabilities of the likely first tokens and of their likely successors.
  const Distribution p0 = next_distribution(target, prompt, sp);
  const Distribution q0 = next_distribution(draft, prompt, sp);
  double tv = 0.0;
  for (int i = 0; i < static_cast<int>(target.n_vocab()); ++i) tv += 0.5 * std::abs(p0.prob(i) - q0.prob(i));
  ASSERT_GT(tv, 0.3) << "the draft must differ markedly from the target";

  std::map<std::pair<int32_t, int32_t>, int> cell_of;
  std::vector<double> expected;
  double covered = 0.0;
  for (int32_t a : top_ids(p0, 8)) {
    std::vector<int32_t> h = prompt;
    h.push_back(a);
    const Distribution p1 = next_distribution(target, h, sp);
    for (int32_t b : top_ids(p1, 8)) {
      cell_of[{a, b}] = static_cast<int>(expected.size());
      expected.push_back(p0.prob(a) * p1.prob(b));
      covered += expected.back();
    }
  }
  expected.push_back(1.0 - covered);  // every other pair
  const int other = static_cast<int>(expected.size()) - 1;

  Context ctx(target, {.n_ctx = 256, .n_batch = 64, .n_threads = 1});
  DraftModelParams dp;
  dp.n_max = 2;
  dp.context = {.n_ctx = 256, .n_batch = 64, .n_threads = 1};
  DraftModelDrafter drafter(target, draft, dp);
  GeneratorParams gp;
  gp.sampling = sp;
  gp.spec.adaptive = false;  // every step through rejection sampling, not plain sampling
  Generator gen(ctx, gp, {&drafter});
  std::vector<int64_t> counts(expected.size(), 0);
  const int kParallel = 8, kRounds = 250;
  for (int round = 0; round < kRounds; ++round) {
    for (int s = 0; s < kParallel; ++s) gen.start(s, prompt, 3, 1000003ull * round + s);
    gen.run();
    for (int s = 0; s < kParallel; ++s) {
      const auto& out = gen.output(s);
      ASSERT_EQ(out.size(), 3u);
      const auto it = cell_of.find({out[0], out[1]});
      ++counts[it == cell_of.end() ? other : it->second];
    }
  }
  const int64_t n = int64_t{kParallel} * kRounds;
  int df = 0;
  const double stat = chi_square(expected, counts, n, df);
  EXPECT_GE(df, 8);
  EXPECT_LT(stat, chi_square_critical(df)) << "df " << df;
  const DrafterStats& st = gen.stats().drafters.at(0);
  EXPECT_GT(st.acceptance_rate(), 0.02);
  EXPECT_LT(st.acceptance_rate(), 0.9);
}


// The draft has the target's weights quantized coarsely: q overlaps p but differs markedly
// (total variation ~0.5 and ~0.7), so acceptances, rejections and residual draws all occur. A
// draft with unrelated weights would almost never be accepted, which tests little.
TEST(SpecSampling, DraftModelSamplingReproducesTargetDistributionTopK) { run_case(DType::kQ4_0, 1, 0.7f, 6); }

TEST(SpecSampling, DraftModelSamplingReproducesTargetDistributionFullVocab) { run_case(DType::kQ2_K, 1, 1.0f, 0); }

}  // namespace
}  // namespace fulgur
