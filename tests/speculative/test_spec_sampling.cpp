// End to end on generated models: speculative sampling through the Generator emits every token
// with the target's distribution (emission_check.h: every token, at every index of its step,
// against the exact distribution plain decoding samples from), with drafts accepted at a stated
// rate at every draft position:
//  * rejection sampling with the q of a draft model that is the target at another temperature
//    (q close to p, about half of the drafts accepted), with and without penalties;
//  * rejection sampling with a coarsely quantized copy of the target (q further from p);
//  * exact-match verification (no q) of the target's argmax chain.
// Negative controls: the same check on the same runs with the bonus tokens replaced by the
// argmax, and with the tokens after a rejection replaced by a fresh sample of p, must fail.
#include <gtest/gtest.h>

#include "controlled_drafters.h"
#include "emission_check.h"
#include "speculative/drafters/draft_model.h"
#include "spec_fixture.h"

namespace fulgur {
namespace {

using testing_support::ControlledDrafter;
using testing_support::EmissionLog;
using testing_support::Simulated;
using testing_support::tiny_model;

constexpr int kDrafts = 3;
constexpr int kParallel = 8;
constexpr int kPredict = 48;

struct SpecRun {
  std::vector<testing_support::Trajectory> trajectories;
  DrafterStats stats;
};

// kParallel sequences at a time, `rounds` times, through one Generator with fixed draft length
// kDrafts, drafting with `inner` behind a ControlledDrafter with `options`.
SpecRun run_spec(const Model& target, Drafter& inner, ControlledDrafter::Options options, const SamplerParams& sp,
                 int rounds) {
  Context ctx(target, {.n_ctx = 1024, .n_batch = 128, .n_threads = 1, .n_seq_max = kParallel});
  ControlledDrafter drafter(inner, static_cast<int>(target.n_vocab()), options);
  GeneratorParams gp;
  gp.sampling = sp;
  gp.spec.schedule = SpecSchedule::kFixed;  // every step drafts kDrafts tokens
  Generator gen(ctx, gp, {&drafter});
  EmissionLog log(gen, drafter);
  for (int round = 0; round < rounds; ++round) {
    for (int s = 0; s < kParallel; ++s) {
      const std::vector<int32_t> prompt = {72, static_cast<int32_t>(101 + s), 108, static_cast<int32_t>(40 + round % 50), 111};
      gen.start(s, prompt, kPredict, 1000003ull * round + s);
      log.start(s, prompt);
    }
    gen.run();
    for (int s = 0; s < kParallel; ++s) log.finish(s);
  }
  return {log.trajectories(), gen.stats().drafters.at(0)};
}

std::unique_ptr<DraftModelDrafter> draft_model(const Model& target, const Model& draft) {
  DraftModelParams p;
  p.n_max = kDrafts;
  p.context = {.n_ctx = 1024, .n_batch = 64, .n_threads = 1, .n_seq_max = kParallel};
  return std::make_unique<DraftModelDrafter>(target, draft, p);
}

// Every emitted token checked, each draft position accepted at a rate in [lo, hi], and the
// simulated bugs caught.
void expect_lossless(const Model& target, const SamplerParams& sp, const SpecRun& run, double lo, double hi,
                     const std::vector<Simulated>& bugs = {Simulated::kArgmaxBonus, Simulated::kResampleP}) {
  testing_support::expect_emissions_lossless(target, sp, run.trajectories, kDrafts, 200, bugs);
  testing_support::expect_acceptance_between(run.stats, kDrafts, lo, hi);
}

SamplerParams full_vocab(float temperature) {
  SamplerParams sp;
  sp.temperature = temperature;
  sp.top_k = 0;
  sp.top_p = 1.0f;
  sp.min_p = 0.0f;
  return sp;
}

// The draft is the target with its logits doubled: q is p at half the temperature. On an
// attention-only target and on a recurrent one (Mamba2 + attention + MoE) with a recurrent
// draft: its verification rows roll back through its snapshots, the draft's drafts through its
// own.
class TemperedDraft : public ::testing::TestWithParam<std::string> {};

TEST_P(TemperedDraft, TemperedDraftModelReproducesTheTarget) {
  const std::string path = tiny_model(GetParam(), DType::kF32, 1);
  Model target(path);
  Model draft(testing_support::tempered_copy(path, 2.0f));
  auto inner = draft_model(target, draft);
  const SamplerParams sp = full_vocab(1.0f);
  expect_lossless(target, sp, run_spec(target, *inner, {}, sp, 12), 0.45, 0.75);
}

INSTANTIATE_TEST_SUITE_P(Archs, TemperedDraft, ::testing::Values("qwen3", "nemotron_h_moe", "gemma4", "gpt-oss"),
                         [](const auto& info) { return testing_support::arch_param_name(info.param); });

// Penalties change p with every emitted token; the draft applies them to q as the target does.
TEST(SpecSampling, TemperedDraftModelWithPenaltiesReproducesTheTarget) {
  const std::string path = tiny_model("qwen3", DType::kF32, 2);
  Model target(path);
  Model draft(testing_support::tempered_copy(path, 0.5f));
  auto inner = draft_model(target, draft);
  SamplerParams sp = full_vocab(0.8f);
  sp.repeat_penalty = 1.3f;
  sp.presence_penalty = 0.3f;
  sp.repeat_last_n = 16;
  expect_lossless(target, sp, run_spec(target, *inner, {}, sp, 12), 0.4, 0.65);
}

// A Q4_0 copy of the target's weights with top-k 6: q overlaps p but differs in its own way.
// Sampling p instead of the residual here moves mass between tokens without regard to their rank
// in p, which the rank-ordered check does not see with these counts: the tempered drafts above
// are the negative control for that bug.
TEST(SpecSampling, QuantizedDraftModelReproducesTheTarget) {
  Model target(tiny_model("qwen3", DType::kF32, 1));
  Model draft(tiny_model("qwen3", DType::kQ4_0, 1));
  auto inner = draft_model(target, draft);
  SamplerParams sp = full_vocab(0.7f);
  sp.top_k = 6;
  expect_lossless(target, sp, run_spec(target, *inner, {}, sp, 12), 0.35, 0.6, {Simulated::kArgmaxBonus});
}

// No q: the verifier samples the target itself and keeps the draft when they agree. The drafts
// are the target's argmax chain, accepted with the argmax's probability.
TEST(SpecSampling, ExactMatchOfTheArgmaxChainReproducesTheTarget) {
  Model target(tiny_model("qwen3", DType::kF32, 3));
  auto inner = draft_model(target, target);
  const SamplerParams sp = full_vocab(0.5f);
  expect_lossless(target, sp, run_spec(target, *inner, {.greedy_drafts = true, .drop_q = true}, sp, 12), 0.5, 0.75);
}

}  // namespace
}  // namespace fulgur
