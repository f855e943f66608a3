// Rejection at every draft position 0..k restores exactly the state of never having seen the
// rejected tokens: the target's next logits after the rollback equal, bit for bit, those of a
// context that only ever decoded the committed tokens; the same for the draft model's own
// memory. On attention-only and recurrent (Nemotron-H) models alike.
#include <gtest/gtest.h>

#include <cstring>

#include "speculative/drafters/draft_model.h"
#include "spec_fixture.h"

namespace fulgur {
namespace {

using testing_support::greedy_sampling;
using testing_support::plain_generate;
using testing_support::test_prompts;
using testing_support::tiny_model;

constexpr int kDrafts = 4;

// Proposes, for sequence s, the reference tokens for positions < s and wrong ones from there.
class ScriptedDrafter : public Drafter {
 public:
  ScriptedDrafter(std::vector<int32_t> reference, int n_vocab) : ref_(std::move(reference)), n_vocab_(n_vocab) {}
  std::string name() const override { return "scripted"; }
  int max_draft() const override { return kDrafts; }
  void reset(int) override {}
  void commit(int, std::span<const int32_t>, int32_t, const TargetFeatures&) override {}
  void draft(const DraftRequest& req, Draft& out) override {
    for (int i = 0; i < kDrafts; ++i) {
      const int32_t right = ref_[static_cast<size_t>(i)];
      out.tokens.push_back(i < req.seq ? right : (right + 1) % n_vocab_);
    }
  }

 private:
  std::vector<int32_t> ref_;
  int n_vocab_;
};

bool same_bits(const float* a, const float* b, int64_t n) { return std::memcmp(a, b, sizeof(float) * n) == 0; }

// For an attention-only target and a recurrent one (Mamba2 + attention + MoE).
class TargetRollback : public ::testing::TestWithParam<std::string> {};

TEST_P(TargetRollback, TargetStateAfterRejectionAtEveryPosition) {
  for (DType type : {DType::kF32, DType::kQ8_0}) {
    Model m(tiny_model(GetParam(), type, 1));
    const int64_t V = m.n_vocab();
    const std::vector<int32_t> prompt = test_prompts()[0];
    const std::vector<int32_t> ref = plain_generate(m, prompt, kDrafts + 1, greedy_sampling(), 0);
    Context ctx(m, {.n_ctx = 512, .n_batch = 64, .n_threads = 1, .n_seq_max = kDrafts + 1});
    GeneratorParams gp;
    gp.sampling = greedy_sampling();
    gp.spec.schedule = SpecSchedule::kFixed;  // every sequence gets its whole scripted draft in the first step
    ScriptedDrafter scripted(ref, static_cast<int>(V));
    Generator gen(ctx, gp, {&scripted});
    // Sequence j is rejected at draft position j (j = kDrafts: all accepted, bonus token).
    for (int j = 0; j <= kDrafts; ++j) gen.start(j, prompt, 64);
    gen.step();
    const int32_t anchor_pos = static_cast<int32_t>(prompt.size()) - 1;
    Batch next;
    for (int j = 0; j <= kDrafts; ++j) {
      const std::vector<int32_t> want(ref.begin(), ref.begin() + j + 1);
      ASSERT_EQ(gen.output(j), want) << "sequence " << j;
      EXPECT_EQ(ctx.seq_pos_max(j), anchor_pos + j) << "the anchor and " << j << " drafts stay";
      next.add(want.back(), anchor_pos + j + 1, j, true);
    }
    // Decode every sequence's next token in one batch and compare with clean contexts.
    ctx.decode(next);
    for (int j = 0; j <= kDrafts; ++j) {
      Context clean(m, {.n_ctx = 512, .n_batch = 64, .n_threads = 1});
      Batch b;
      std::vector<int32_t> seen = prompt;
      seen.insert(seen.end(), ref.begin(), ref.begin() + j + 1);
      for (size_t i = 0; i < seen.size(); ++i) b.add(seen[i], static_cast<int32_t>(i), 0, i + 1 == seen.size());
      clean.decode(b);
      EXPECT_TRUE(same_bits(ctx.logits(j), clean.logits(b.size() - 1), V))
          << dtype_name(type) << ", rejection at position " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, TargetRollback, ::testing::Values("qwen3", "nemotron_h_moe", "gemma4", "gpt-oss"),
                         [](const auto& info) { return testing_support::arch_param_name(info.param); });

// The draft model's memory after a rejection at position j equals that of a drafter that only
// ever saw the committed tokens (and caught up with them in catch_up(), a batch apart from the
// anchor's): its next draft and q distributions are bitwise the same. For an attention-only
// draft (KV truncated) and a recurrent one (restored from the state kept after each draft,
// without decoding the history again).
class DraftRollback : public ::testing::TestWithParam<std::string> {};

TEST_P(DraftRollback, DraftModelStateAfterRejectionAtEveryPosition) {
  Model target(tiny_model("qwen3", DType::kF32, 1));
  Model draft_model(tiny_model(GetParam(), DType::kQ8_0, 2));
  const std::vector<int32_t> prompt = test_prompts()[0];
  const std::span<const int32_t> committed(prompt.data(), prompt.size() - 1);
  for (bool sampling : {false, true}) {
    SamplerParams sp = greedy_sampling();
    if (sampling) {
      sp.temperature = 0.8f;
      sp.repeat_penalty = 1.2f;
    }
    for (int j = 0; j <= kDrafts; ++j) {
      DraftModelParams p;
      p.n_max = kDrafts;
      p.context = {.n_ctx = 256, .n_batch = 64, .n_threads = 1};
      DraftModelDrafter used(target, draft_model, p), fresh(target, draft_model, p);
      Rng rng(9);
      DraftRequest req;
      req.seq = 2;
      req.anchor = prompt.back();
      req.anchor_pos = static_cast<int32_t>(prompt.size()) - 1;
      req.n_max = kDrafts;
      req.sampling = &sp;
      req.rng = &rng;
      used.reset(2);
      used.commit(2, committed, 0, TargetFeatures{});
      Draft d1;
      used.draft(req, d1);
      ASSERT_EQ(d1.tokens.size(), static_cast<size_t>(kDrafts));
      // The target kept j drafts and then emitted its own token (here: a fixed one).
      std::vector<int32_t> kept = {prompt.back()};
      kept.insert(kept.end(), d1.tokens.begin(), d1.tokens.begin() + j);
      used.commit(2, kept, req.anchor_pos, TargetFeatures{});
      std::vector<int32_t> history = prompt;
      history.insert(history.end(), d1.tokens.begin(), d1.tokens.begin() + j);
      DraftRequest req2 = req;
      req2.anchor = 33;
      req2.anchor_pos = static_cast<int32_t>(history.size());
      Rng rng_a(4), rng_b(4);
      Draft a, b;
      req2.rng = &rng_a;
      used.draft(req2, a);
      fresh.reset(2);
      fresh.commit(2, history, 0, TargetFeatures{});
      fresh.catch_up({&req2, 1});
      req2.rng = &rng_b;
      fresh.draft(req2, b);
      ASSERT_EQ(a.tokens, b.tokens) << "rejection at " << j;
      ASSERT_EQ(a.q.size(), b.q.size());
      for (size_t i = 0; i < a.q.size(); ++i) {
        EXPECT_TRUE(same_bits(a.q[i].dense().data(), b.q[i].dense().data(), target.n_vocab()))
            << (sampling ? "sampling" : "greedy") << ", rejection at " << j << ", q " << i;
      }
      EXPECT_EQ(used.replays(), 0) << "rejection at " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, DraftRollback, ::testing::Values("qwen3", "nemotron_h"),
                         [](const auto& info) { return info.param; });

// A history that changes before the recurrent draft's kept states (a commit at an earlier
// position): the draft decodes the history again from its start and drafts what a fresh
// drafter does.
TEST(Rollback, RecurrentDraftModelReplaysAHistoryThatChangedFurtherBack) {
  Model target(tiny_model("qwen3", DType::kF32, 1));
  Model draft_model(tiny_model("nemotron_h", DType::kF32, 2));
  const std::vector<int32_t> prompt = test_prompts()[0];
  DraftModelParams p;
  p.n_max = kDrafts;
  p.context = {.n_ctx = 256, .n_batch = 64, .n_threads = 1};
  DraftModelDrafter used(target, draft_model, p), fresh(target, draft_model, p);
  const SamplerParams sp = greedy_sampling();
  DraftRequest req;
  req.anchor = prompt.back();
  req.anchor_pos = static_cast<int32_t>(prompt.size()) - 1;
  req.n_max = kDrafts;
  req.sampling = &sp;
  used.reset(0);
  used.commit(0, std::span(prompt.data(), prompt.size() - 1), 0, TargetFeatures{});
  Draft first;
  used.draft(req, first);
  // Positions 2.. replaced: the draft's state after position 1 is long gone.
  std::vector<int32_t> history = prompt;
  history[2] = 7;
  used.commit(0, std::span(history.data() + 2, history.size() - 3), 2, TargetFeatures{});
  Draft a, b;
  used.draft(req, a);
  EXPECT_EQ(used.replays(), 1);
  fresh.reset(0);
  fresh.commit(0, std::span(history.data(), history.size() - 1), 0, TargetFeatures{});
  fresh.draft(req, b);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(fresh.replays(), 0);
}

}  // namespace
}  // namespace fulgur
