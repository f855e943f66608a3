// What the server asks of the generation loop, on tiny generated models: per-sequence sampler,
// seed and drafting settings; prompts prefilled in chunks under a per-step budget; sequences
// joining between steps and cancelled from the token callback; a kept prompt prefix (prompt
// cache); log-probabilities. Output stays the plain loop's, token for token.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "speculative/drafters/draft_model.h"
#include "speculative/drafters/ngram.h"
#include "spec_fixture.h"

namespace fulgur {
namespace {

using testing_support::greedy_sampling;
using testing_support::plain_generate;
using testing_support::test_prompts;
using testing_support::tiny_model;

// A generator over a fresh context of m (together: the generator refers to its context).
struct Loop {
  Context ctx;
  Generator gen;
  Loop(const Model& m, GeneratorParams gp, std::vector<Drafter*> drafters)
      : ctx(m, {.n_ctx = 1024, .n_batch = 64, .n_threads = 1}), gen(ctx, std::move(gp), std::move(drafters)) {}
};

GeneratorParams greedy_params() {
  GeneratorParams gp;
  gp.sampling = greedy_sampling();
  return gp;
}

std::unique_ptr<DraftModelDrafter> self_draft(const Model& m) {
  DraftModelParams p;
  p.n_max = 4;
  p.context = {.n_ctx = 1024, .n_batch = 64, .n_threads = 1};
  return std::make_unique<DraftModelDrafter>(m, m, p);
}

TEST(GeneratorSeq, ChunkedPrefillAndLateJoinersGiveThePlainOutput) {
  const SamplerParams sp = greedy_sampling();
  Model m(tiny_model("qwen3", DType::kF32, 1));
  const auto prompts = test_prompts();
  NgramDrafter ngram({.size_n = 4, .min_n = 1, .size_m = 6});
  auto self = self_draft(m);
  for (std::vector<Drafter*> drafters : {std::vector<Drafter*>{}, {&ngram}, {self.get()}}) {
    GeneratorParams gp = greedy_params();
    gp.prefill_budget = 5;  // the 30-token prompt takes six steps
    Loop loop(m, gp, drafters);
    Generator& gen = loop.gen;
    gen.start(0, prompts[0], 30);
    gen.start(1, prompts[1], 30);
    EXPECT_TRUE(gen.prefilling(1));
    for (int i = 0; i < 4; ++i) gen.step();
    EXPECT_TRUE(gen.prefilling(1));  // sequence 0 decodes meanwhile
    EXPECT_FALSE(gen.output(0).empty());
    gen.start(2, prompts[2], 25);  // joins a running batch
    gen.run();
    for (int q = 0; q < 3; ++q) {
      EXPECT_EQ(gen.output(q), plain_generate(m, prompts[q], q == 2 ? 25 : 30, sp, 0))
          << "sequence " << q << ", " << drafters.size() << " drafters";
    }
  }
}

TEST(GeneratorSeq, EachSequenceHasItsOwnSamplerSeedAndDrafting) {
  Model m(tiny_model("qwen3", DType::kF32, 2));
  const auto prompts = test_prompts();
  NgramDrafter ngram({.size_n = 4, .min_n = 1, .size_m = 6});
  Context ctx(m, {.n_ctx = 1024, .n_batch = 64, .n_threads = 1});
  GeneratorParams gp;  // the generator's own settings sample; sequence 0 overrides them
  gp.sampling.temperature = 1.0f;
  // A clock that ticks per reading: on this tiny model a step is a fraction of a millisecond and
  // the draft-length choice would follow preemption (the priced probes may then wait past all 40
  // steps); with ticks it follows the acceptance (tick_clock() in test_generator.cpp).
  gp.clock = [ticks = 0.0]() mutable { return ticks += 1e-3; };
  Generator gen(ctx, gp, {&ngram});
  SeqOptions greedy;
  greedy.sampling = greedy_sampling();
  SeqOptions sampled;
  sampled.sampling = SamplerParams{};
  sampled.sampling->temperature = 0.7f;
  sampled.sampling->presence_penalty = 0.5f;
  sampled.sampling->frequency_penalty = 0.25f;
  sampled.seed = 1234;
  SeqOptions plain = greedy;
  plain.draft = false;
  gen.start(0, prompts[1], 40, greedy);
  gen.start(1, prompts[1], 40, sampled);
  gen.start(2, prompts[1], 40, plain);
  gen.run();
  EXPECT_EQ(gen.output(0), plain_generate(m, prompts[1], 40, greedy_sampling(), 0));
  EXPECT_EQ(gen.output(1), plain_generate(m, prompts[1], 40, *sampled.sampling, 1234));
  EXPECT_EQ(gen.output(2), gen.output(0));
  EXPECT_GT(gen.seq_stats(0).drafted, 0);  // the repetitive prompt gives n-gram drafts
  EXPECT_EQ(gen.seq_stats(2).drafted, 0);
  EXPECT_EQ(gen.seq_stats(2).steps, 40);
  EXPECT_LT(gen.seq_stats(0).steps, 40);
  EXPECT_EQ(gen.seq_stats(0).accepted + gen.seq_stats(0).steps, 40);
}

TEST(GeneratorSeq, DraftLengthPerSequenceIsRespected) {
  Model m(tiny_model("qwen3", DType::kF32, 1));
  const auto prompts = test_prompts();
  NgramDrafter ngram({.size_n = 4, .min_n = 1, .size_m = 8});
  GeneratorParams gp = greedy_params();
  gp.spec.schedule = SpecSchedule::kFixed;
  Loop loop(m, gp, {&ngram});
  Generator& gen = loop.gen;
  SeqOptions two;
  two.n_max = 2;
  SeqOptions picky;
  picky.n_min = 9;  // longer than the drafter ever drafts: nothing is verified
  gen.start(0, prompts[1], 40, two);
  gen.start(1, prompts[1], 40, picky);
  gen.run();
  const SeqStats& a = gen.seq_stats(0);
  EXPECT_GT(a.drafts, 0);
  EXPECT_LE(a.drafted, 2 * a.drafts);
  EXPECT_EQ(gen.seq_stats(1).drafted, 0);
  EXPECT_EQ(gen.output(0), gen.output(1));
  SeqOptions bad_p_min;
  bad_p_min.p_min = 2.0f;
  EXPECT_THROW(gen.start(2, prompts[0], 4, bad_p_min), Error);
  SeqOptions bad_sampler;
  bad_sampler.sampling = SamplerParams{};
  bad_sampler.sampling->top_p = 3.0f;
  EXPECT_THROW(gen.start(2, prompts[0], 4, bad_sampler), Error);
}

TEST(GeneratorSeq, CancelFromTheCallbackStopsOnlyThatSequence) {
  const SamplerParams sp = greedy_sampling();
  Model m(tiny_model("qwen3", DType::kF32, 3));
  const auto prompts = test_prompts();
  auto self = self_draft(m);
  GeneratorParams gp = greedy_params();
  Loop loop(m, gp, {self.get()});
  Generator& gen = loop.gen;
  std::vector<int32_t> streamed1;
  gen.on_tokens = [&](int seq, std::span<const int32_t> t) {
    if (seq != 1) return;
    streamed1.insert(streamed1.end(), t.begin(), t.end());
    if (streamed1.size() >= 5) gen.cancel(1);
  };
  gen.start(0, prompts[0], 30);
  gen.start(1, prompts[2], 30);
  gen.run();
  EXPECT_FALSE(gen.active(1));
  EXPECT_GE(streamed1.size(), 5u);
  EXPECT_LT(streamed1.size(), 30u);
  EXPECT_EQ(gen.output(0), plain_generate(m, prompts[0], 30, sp, 0));
  const std::vector<int32_t> full1 = plain_generate(m, prompts[2], 30, sp, 0);
  EXPECT_EQ(streamed1, std::vector<int32_t>(full1.begin(), full1.begin() + static_cast<long>(streamed1.size())));
}

// Runs a first request on sequence 0 and returns a follow-up turn's prompt: the old prompt, the
// first 12 tokens of the reply, new text.
std::vector<int32_t> follow_up_turn(Generator& gen, const std::vector<int32_t>& prompt, const SeqOptions& o) {
  gen.start(0, prompt, 20, o);
  gen.run();
  std::vector<int32_t> next = prompt;
  next.insert(next.end(), gen.output(0).begin(), gen.output(0).begin() + 12);
  next.insert(next.end(), {50, 51, 52});
  return next;
}

TEST(GeneratorSeq, AKeptPromptPrefixGivesThePlainOutput) {
  const SamplerParams sp = greedy_sampling();
  Model m(tiny_model("qwen3", DType::kF32, 1));
  const auto prompts = test_prompts();
  NgramDrafter ngram({.size_n = 4, .min_n = 1, .size_m = 6});
  auto self = self_draft(m);
  for (std::vector<Drafter*> drafters : {std::vector<Drafter*>{}, {&ngram, self.get()}}) {
    GeneratorParams gp = greedy_params();
    Loop loop(m, gp, drafters);
    Generator& gen = loop.gen;
    SeqOptions reuse;
    reuse.reuse_prefix = true;
    const std::vector<int32_t> next = follow_up_turn(gen, prompts[0], reuse);
    gen.start(0, next, 25, reuse);
    EXPECT_EQ(gen.seq_stats(0).reused_tokens, static_cast<int64_t>(prompts[0].size()) + 12);
    gen.run();
    EXPECT_EQ(gen.output(0), plain_generate(m, next, 25, sp, 0)) << drafters.size() << " drafters";
    // A prompt that shares nothing reuses nothing.
    gen.start(0, prompts[3], 10, reuse);
    EXPECT_EQ(gen.seq_stats(0).reused_tokens, 0);
    gen.run();
    EXPECT_EQ(gen.output(0), plain_generate(m, prompts[3], 10, sp, 0));
    // The same prompt again: all but its last token (the first anchor) is reused; with drafters
    // one more token is prefilled, whose commit rolls the drafters back to the prefix.
    gen.start(0, next, 25, reuse);
    gen.run();
    gen.start(0, next, 25, reuse);
    EXPECT_EQ(gen.seq_stats(0).reused_tokens, static_cast<int64_t>(next.size()) - (drafters.empty() ? 1 : 2));
    gen.run();
    EXPECT_EQ(gen.output(0), plain_generate(m, next, 25, sp, 0));
  }
}

// A sliding-window target (gemma4 tiny, window 16) forgets what its rows can no longer see: a
// follow-up turn that keeps the old prompt and 12 tokens of a long reply cannot restore that
// prefix (the reply's later rows moved the window past it), so the kept prefix is shorter and the
// output is still the plain loop's.
TEST(GeneratorSeq, ASlidingWindowTargetRePrefillsWhatTheWindowForgot) {
  const SamplerParams sp = greedy_sampling();
  Model m(tiny_model("gemma4", DType::kF32, 1));
  const auto prompts = test_prompts();
  NgramDrafter ngram({.size_n = 4, .min_n = 1, .size_m = 6});
  auto self = self_draft(m);
  for (std::vector<Drafter*> drafters : {std::vector<Drafter*>{}, {&ngram, self.get()}}) {
    SCOPED_TRACE(std::to_string(drafters.size()) + " drafters");
    Loop loop(m, greedy_params(), drafters);
    Generator& gen = loop.gen;
    SeqOptions reuse;
    reuse.reuse_prefix = true;
    // A 60-token reply: its last rows see nothing before about position 60, and the window
    // forgets in whole tiles of 32 positions (model/kv_cache.h).
    gen.start(0, prompts[0], 60, reuse);
    gen.run();
    std::vector<int32_t> next = prompts[0];
    next.insert(next.end(), gen.output(0).begin(), gen.output(0).begin() + 12);
    next.insert(next.end(), {50, 51, 52});
    gen.start(0, next, 25, reuse);
    EXPECT_LT(gen.seq_stats(0).reused_tokens, static_cast<int64_t>(prompts[0].size()) + 12);
    gen.run();
    EXPECT_EQ(gen.output(0), plain_generate(m, next, 25, sp, 0));
  }
}

// A recurrent target's state cannot be cut back anywhere: the kept prefix is the longest the
// memory can restore, which after a finished request is the checkpoint at the end of its
// prompt (the last verification batch's snapshots lie further on).
TEST(GeneratorSeq, ARecurrentTargetKeepsThePromptCheckpoint) {
  const SamplerParams sp = greedy_sampling();
  for (const char* arch : {"qwen35", "qwen3next", "nemotron_h_moe"}) {
    SCOPED_TRACE(arch);
    Model m(tiny_model(arch, DType::kF32, 1));
    const auto prompts = test_prompts();
    NgramDrafter ngram({.size_n = 4, .min_n = 1, .size_m = 6});
    auto self = self_draft(m);
    for (std::vector<Drafter*> drafters : {std::vector<Drafter*>{}, {&ngram, self.get()}}) {
      SCOPED_TRACE(std::to_string(drafters.size()) + " drafters");
      Loop loop(m, greedy_params(), drafters);
      Generator& gen = loop.gen;
      SeqOptions reuse;
      reuse.reuse_prefix = true;
      // The state after the reply's 12th token is gone, the one after the prompt's read part
      // (all but its last token) is not.
      const std::vector<int32_t> next = follow_up_turn(gen, prompts[0], reuse);
      gen.start(0, next, 25, reuse);
      EXPECT_EQ(gen.seq_stats(0).reused_tokens, static_cast<int64_t>(prompts[0].size()) - 1);
      gen.run();
      EXPECT_EQ(gen.output(0), plain_generate(m, next, 25, sp, 0));
      // Without the prompt option nothing is checkpointed: the same follow-up starts over.
      gen.start(0, prompts[0], 20);
      gen.run();
      gen.start(0, next, 25, reuse);
      EXPECT_EQ(gen.seq_stats(0).reused_tokens, 0);
      gen.run();
      EXPECT_EQ(gen.output(0), plain_generate(m, next, 25, sp, 0));
      // Another sequence's prompt is not this one's: nothing reused, output the plain one.
      gen.start(0, prompts[3], 10, reuse);
      EXPECT_EQ(gen.seq_stats(0).reused_tokens, 0);
      gen.run();
      EXPECT_EQ(gen.output(0), plain_generate(m, prompts[3], 10, sp, 0));
    }
  }
}

TEST(GeneratorSeq, LogprobsAreTheLogSoftmaxOfTheTargetLogits) {
  Model m(tiny_model("qwen3", DType::kF32, 1));
  const auto prompts = test_prompts();
  NgramDrafter ngram({.size_n = 4, .min_n = 1, .size_m = 6});
  GeneratorParams gp = greedy_params();
  Loop loop(m, gp, {&ngram});
  Generator& gen = loop.gen;
  std::vector<TokenLogprobs> got;
  gen.on_tokens = [&](int seq, std::span<const int32_t> t) {
    const auto lp = gen.last_logprobs(seq);
    ASSERT_EQ(lp.size(), t.size());
    for (size_t i = 0; i < t.size(); ++i) {
      EXPECT_EQ(lp[i].token, t[i]);
      got.push_back(lp[i]);
    }
  };
  SeqOptions o;
  o.n_logprobs = 3;
  gen.start(0, prompts[1], 12, o);
  gen.run();
  ASSERT_EQ(got.size(), 12u);
  // Reference: plain decoding's logits at each position, log-softmaxed here.
  Context ref(m, {.n_ctx = 1024, .n_batch = 64, .n_threads = 1});
  const int n_vocab = static_cast<int>(m.n_vocab());
  Batch b;
  for (size_t i = 0; i < prompts[1].size(); ++i) b.add(prompts[1][i], static_cast<int32_t>(i), 0, i + 1 == prompts[1].size());
  int32_t pos = static_cast<int32_t>(prompts[1].size());
  for (size_t j = 0; j < got.size(); ++j) {
    ref.decode(b);
    const float* logits = ref.logits(b.size() - 1);
    double z = 0;
    float mx = logits[0];
    for (int i = 0; i < n_vocab; ++i) mx = std::max(mx, logits[i]);
    for (int i = 0; i < n_vocab; ++i) z += std::exp(double(logits[i]) - mx);
    const auto lp = [&](int32_t id) { return float(logits[id] - mx - std::log(z)); };
    EXPECT_NEAR(got[j].logprob, lp(got[j].token), 1e-4) << "token " << j;
    ASSERT_EQ(got[j].top.size(), 3u);
    EXPECT_EQ(got[j].top[0].first, got[j].token);  // greedy: the argmax was emitted
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_NEAR(got[j].top[k].second, lp(got[j].top[k].first), 1e-4);
      if (k > 0) {
        EXPECT_GE(got[j].top[k - 1].second, got[j].top[k].second);
      }
    }
    b.clear();
    b.add(got[j].token, pos++, 0, true);
  }
}

}  // namespace
}  // namespace fulgur
