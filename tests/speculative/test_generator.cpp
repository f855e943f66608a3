// The generation loop on tiny generated models: greedy output with every drafter (and with
// several sequences at once) is byte-identical to plain greedy decoding; statistics; sampling
// without drafters is plain sampling draw for draw; bad drafters and bad combinations.
#include <gtest/gtest.h>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "speculative/drafters/draft_model.h"
#include "speculative/drafters/ngram.h"
#include "speculative/drafters/ngram_cache.h"
#include "speculative/drafters/ngram_map.h"
#include "speculative/drafters/ngram_mod.h"
#include "speculative/drafters/replay.h"
#include "controlled_drafters.h"
#include "spec_fixture.h"

namespace fulgur {
namespace {

using testing_support::ControlledDrafter;
using testing_support::greedy_sampling;
using testing_support::plain_generate;
using testing_support::spec_generate;
using testing_support::test_prompts;
using testing_support::tiny_model;

using testing_support::kNPredict;

std::unique_ptr<DraftModelDrafter> make_draft(const Model& target, const Model& draft, int n_max) {
  DraftModelParams p;
  p.n_max = n_max;
  p.context = {.n_ctx = 1024, .n_batch = 64, .n_threads = 1};
  return std::make_unique<DraftModelDrafter>(target, draft, p);
}

struct Expected {
  std::vector<std::vector<int32_t>> out;
};

Expected plain_reference(const Model& m, const SamplerParams& sp) {
  Expected e;
  const auto prompts = test_prompts();
  for (size_t i = 0; i < prompts.size(); ++i) e.out.push_back(plain_generate(m, prompts[i], kNPredict[i], sp, sp.seed + i));
  return e;
}

void expect_identical(const Expected& want, const std::vector<std::vector<int32_t>>& got, const char* what) {
  ASSERT_EQ(got.size(), want.out.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want.out[i]) << what << ", sequence " << i;
}

// A clock that ticks once per reading: every step then costs the same whatever its rows, every
// draft one tick, and the draft-length choice (speculative/scheduler.h) depends on the acceptance
// alone, not on how busy the machine is (see AdaptiveDraftLength... below).
std::function<double()> tick_clock() {
  auto ticks = std::make_shared<double>(0.0);
  return [ticks] { return *ticks += 1e-3; };
}

// A drafter whose uncorrupted drafts are the target's greedy continuation, wrapped in a
// ControlledDrafter with corruption: the accepted tokens per position are exactly what the
// corruption schedule implies, and each of the first `positions` draft positions was both
// accepted and rejected.
void expect_controlled_acceptance(const ControlledDrafter& d, const DrafterStats& s, size_t positions,
                                  const std::string& what) {
  EXPECT_EQ(s.drafted_at, d.sent_at()) << what;
  EXPECT_EQ(s.accepted_at, d.expected_accepted_at()) << what;
  ASSERT_GE(s.accepted_at.size(), positions) << what;
  for (size_t i = 0; i < positions; ++i) {
    EXPECT_GT(s.accepted_at[i], 0) << what << ", position " << i;
    EXPECT_LT(s.accepted_at[i], s.drafted_at[i]) << what << ", position " << i;
  }
}

// Every draft of a perfect drafter accepted, at each of the first `positions` draft positions.
void expect_all_accepted(const DrafterStats& s, size_t positions, const std::string& what) {
  EXPECT_GT(s.drafts, 10) << what;
  EXPECT_EQ(s.accepted_at, s.drafted_at) << what;
  ASSERT_GE(s.drafted_at.size(), positions) << what;
  for (size_t i = 0; i < positions; ++i) EXPECT_GT(s.drafted_at[i], 0) << what << ", position " << i;
}

// One and four parallel sequences, three target seeds, each schedule (fixed, adaptive, confidence), with
// drafters that are accepted: the target as its own draft (every draft accepted), the same with
// a wrong token at a position cycling through 0..k (a rejection at every position, after
// 0..k - 1 accepted drafts, and all k accepted), and those behind an n-gram drafter; plus an
// unrelated draft model (rejections at position 0). For every target architecture; on the
// Gated-DeltaNet hybrids (qwen35, qwen3next) every rejection rolls the recurrent state back
// through the snapshot planes, the target's and, when it drafts for itself, the draft's.
class GeneratorTargets : public ::testing::TestWithParam<std::string> {};

TEST_P(GeneratorTargets, GreedyIsIdenticalWithEveryDrafter) {
  const SamplerParams sp = greedy_sampling();
  const auto prompts = test_prompts();
  const int V = 489;
  Model other(tiny_model("qwen3", DType::kF32, 7));
  for (const auto& [seed, schedule] : {std::pair{1, SpecSchedule::kAdaptive}, std::pair{2, SpecSchedule::kFixed},
                                       std::pair{3, SpecSchedule::kConfidence}, std::pair{3, SpecSchedule::kFixed}}) {
    const std::string config = GetParam() + ", seed " + std::to_string(seed) + ", " + spec_schedule_name(schedule);
    SCOPED_TRACE(config);
    const SpecParams spec{.schedule = schedule};
    Model m(tiny_model(GetParam(), DType::kF32, seed));
    ASSERT_EQ(m.n_vocab(), V);
    const Expected want = plain_reference(m, sp);
    const auto run = [&](std::vector<Drafter*> drafters, GenerationStats* st = nullptr) {
      return spec_generate(m, sp, std::move(drafters), prompts, kNPredict, st, spec, tick_clock());
    };
    GenerationStats st;
    expect_identical(want, run({}), "no drafter");

    auto self = make_draft(m, m, 4);
    expect_identical(want, run({self.get()}, &st), "draft = target");
    expect_all_accepted(st.drafters.at(0), 4, config + ", draft = target");

    {
      ControlledDrafter corrupted(*self, V, {.corrupt = true});
      expect_identical(want, run({&corrupted}, &st), "draft = target, corrupted");
      expect_controlled_acceptance(corrupted, st.drafters.at(0), 4, config + ", draft = target, corrupted");
      // What the rejections left in the draft model's memory is exactly the committed history:
      // its drafts equal a fresh draft model's given that history at once.
      testing_support::expect_drafts_match_history(m, corrupted, prompts, want.out, sp,
                                                   [&] { return make_draft(m, m, 4); },
                                                   config + ", draft = target, corrupted");
    }

    NgramDrafter ngram({.size_n = 4, .min_n = 1, .size_m = 6});
    expect_identical(want, run({&ngram}), "ngram");
    {
      ControlledDrafter corrupted(*self, V, {.corrupt = true});
      expect_identical(want, run({&ngram, &corrupted}, &st), "ngram, draft = target corrupted");
      expect_controlled_acceptance(corrupted, st.drafters.at(1), 3, config + ", behind ngram");
    }

    auto wrong = make_draft(m, other, 3);
    expect_identical(want, run({wrong.get()}), "unrelated draft");

    // One sequence at a time.
    for (size_t i = 0; i < prompts.size(); ++i) {
      ControlledDrafter corrupted(*self, V, {.corrupt = true});
      const auto one = spec_generate(m, sp, {&ngram, &corrupted}, {prompts[i]}, {kNPredict[i]}, &st, spec,
                                     tick_clock());
      EXPECT_EQ(one[0], want.out[i]) << "alone, sequence " << i;
      EXPECT_EQ(st.drafters.at(1).accepted_at, corrupted.expected_accepted_at()) << "alone, sequence " << i;
      EXPECT_GT(st.total().accepted, 0) << "alone, sequence " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, GeneratorTargets,
                         ::testing::Values("qwen3", "qwen3moe", "qwen35", "qwen3next", "nemotron_h", "nemotron_h_moe", "gemma4",
                                           "gpt-oss"),
                         [](const auto& info) { return testing_support::arch_param_name(info.param); });

TEST(Generator, GreedyIsIdenticalOnQuantizedTarget) {
  const SamplerParams sp = greedy_sampling();
  Model m(tiny_model("qwen3", DType::kQ8_0, 1));
  Model draft(tiny_model("qwen3", DType::kQ4_K, 1));  // the same weights, coarser: mostly right
  const Expected want = plain_reference(m, sp);
  auto d = make_draft(m, draft, 5);
  GenerationStats st;
  expect_identical(want, spec_generate(m, sp, {d.get()}, test_prompts(), kNPredict, &st, {.schedule = SpecSchedule::kFixed}),
                   "q4_k draft");
  const DrafterStats& s = st.drafters.at(0);
  ASSERT_EQ(s.drafted_at.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_GT(s.accepted_at[i], 0) << "position " << i;
    EXPECT_LT(s.accepted_at[i], s.drafted_at[i]) << "position " << i;
  }
  // Mostly right, far above a random draft's ~0 over this vocabulary. The rate depends on the
  // kernels' rounding: 0.31 (avx512), 0.25 (avx2), 0.22 (ref) on these seeds; 0.3 failed on
  // every ISA but AVX-512, so on AVX2-only hosts.
  EXPECT_GT(s.acceptance_rate(), 0.15);
}

// Penalties: the draft model applies them as the target does, so the target as its own draft
// is accepted everywhere, and the corrupted one exactly as scheduled.
TEST(Generator, GreedyWithPenaltiesIsIdentical) {
  SamplerParams sp = greedy_sampling();
  sp.repeat_penalty = 1.3f;
  sp.presence_penalty = 0.2f;
  sp.repeat_last_n = 16;
  Model m(tiny_model("qwen3", DType::kF32, 2));
  const Expected want = plain_reference(m, sp);
  NgramDrafter ngram({.size_n = 3, .min_n = 1, .size_m = 5});
  auto self = make_draft(m, m, 4);
  const SpecParams fixed{.schedule = SpecSchedule::kFixed};
  GenerationStats st;
  expect_identical(want, spec_generate(m, sp, {&ngram}, test_prompts(), kNPredict), "ngram");
  expect_identical(want, spec_generate(m, sp, {self.get()}, test_prompts(), kNPredict, &st, fixed), "self");
  expect_all_accepted(st.drafters.at(0), 4, "self, the draft applies the same penalties");
  ControlledDrafter corrupted(*self, static_cast<int>(m.n_vocab()), {.corrupt = true});
  expect_identical(want, spec_generate(m, sp, {&corrupted}, test_prompts(), kNPredict, &st, fixed), "corrupted");
  expect_controlled_acceptance(corrupted, st.drafters.at(0), 4, "self, corrupted");
}

TEST(Generator, StatisticsOfPerfectAndWrongDrafts) {
  const SamplerParams sp = greedy_sampling();
  Model m(tiny_model("qwen3", DType::kF32, 1));
  Model other(tiny_model("qwen3", DType::kF32, 7));
  const auto prompts = test_prompts();
  GenerationStats st;
  // Fixed draft lengths: a draft that costs what the target does would not be worth drafting
  // with (speculative/scheduler.h), and these counts are about the loop, not that choice.
  const SpecParams fixed{.schedule = SpecSchedule::kFixed};
  auto self = make_draft(m, m, 4);
  spec_generate(m, sp, {self.get()}, prompts, kNPredict, &st, fixed);
  const DrafterStats& s = st.drafters.at(0);
  EXPECT_EQ(s.name, "draft-model");
  EXPECT_EQ(s.accepted, s.drafted);
  EXPECT_EQ(s.acceptance_rate(), 1.0);
  EXPECT_EQ(s.drafts_accepted, s.drafts);
  ASSERT_EQ(s.drafted_at.size(), 4u);
  for (double r : s.acceptance_per_position()) EXPECT_EQ(r, 1.0);
  // Every step but the last of each sequence verifies 4 drafts and commits 5 tokens.
  EXPECT_GT(s.mean_accepted_length(), 4.5);
  int64_t total = 0;
  for (int n : kNPredict) total += n;
  EXPECT_EQ(st.generated, total);
  // Each step commits its accepted drafts plus one token of the target's.
  EXPECT_EQ(st.seq_steps + s.accepted, total);
  EXPECT_LE(st.seq_steps - s.drafts, 4) << "only a sequence's last step may go without a draft";

  auto wrong = make_draft(m, other, 3);
  spec_generate(m, sp, {wrong.get()}, prompts, kNPredict, &st, fixed);
  EXPECT_LT(st.drafters.at(0).acceptance_rate(), 0.5);
  EXPECT_GT(st.drafters.at(0).drafts, 30);
}

// Greedy output of these tiny models now and then repeats one token (159 twelve times, 251 ten
// times in these runs); there the n-gram drafter proposes the repetition and the target accepts
// it, at every position of its 8-token drafts (n-gram drafts have no q: exact match).
TEST(Generator, NgramDraftsOnRepetitiveOutput) {
  const SamplerParams sp = greedy_sampling();
  Model m(tiny_model("qwen3", DType::kF32, 1));
  const auto prompts = test_prompts();
  const std::vector<int> n_predict = {120, 120, 120, 120};
  Expected want;
  for (size_t i = 0; i < prompts.size(); ++i) want.out.push_back(plain_generate(m, prompts[i], n_predict[i], sp, 0));
  NgramDrafter ngram({.size_n = 4, .min_n = 1, .size_m = 8});
  GenerationStats st;
  expect_identical(want, spec_generate(m, sp, {&ngram}, prompts, n_predict, &st, {.schedule = SpecSchedule::kFixed}), "ngram");
  const DrafterStats& s = st.drafters.at(0);
  EXPECT_GT(s.drafts, 50);
  ASSERT_EQ(s.accepted_at.size(), 8u);
  for (size_t i = 0; i < 8; ++i) EXPECT_GT(s.accepted_at[i], 0) << "position " << i;
  EXPECT_EQ(st.seq_steps + s.accepted, st.generated) << "each step emits its accepted drafts and one token";
}

// llama.cpp's n-gram maps, pool and cache (ngram-map-k, ngram-map-k4v, ngram-mod, ngram-cache) on the same repetitive
// greedy output: the output is the target's, byte for byte, and their drafts are proposed and
// accepted. All four sequences run at once, so ngram-mod's one pool serves them all.
TEST(Generator, LlamaCppNgramDraftersKeepGreedyOutput) {
  const SamplerParams sp = greedy_sampling();
  Model m(tiny_model("qwen3", DType::kF32, 1));
  const auto prompts = test_prompts();
  const std::vector<int> n_predict = {120, 120, 120, 120};
  Expected want;
  for (size_t i = 0; i < prompts.size(); ++i) want.out.push_back(plain_generate(m, prompts[i], n_predict[i], sp, 0));
  NgramMapDrafter map_k({.size_n = 2, .size_m = 4}, true);
  NgramMapDrafter map_k4v({.size_n = 2, .size_m = 4, .min_hits = 2}, false);
  NgramModDrafter mod({.n_match = 2, .n_min = 1, .n_max = 8}, 1 << 20);
  NgramCacheDrafter cache(NgramCache{}, NgramCache{});
  for (Drafter* d : std::vector<Drafter*>{&map_k, &map_k4v, &mod, &cache}) {
    GenerationStats st;
    const std::string what = d->name();
    expect_identical(want, spec_generate(m, sp, {d}, prompts, n_predict, &st, {.schedule = SpecSchedule::kFixed}),
                     what.c_str());
    const DrafterStats& s = st.drafters.at(0);
    EXPECT_GT(s.drafted, 0) << what;
    EXPECT_GT(s.accepted, 0) << what;
    EXPECT_EQ(st.seq_steps + s.accepted, st.generated) << what;
  }
}

// The draft length adapts (speculative/scheduler.h): a drafter that is never right ends up asked for
// drafts only to re-check now and then; one that is always right and free keeps drafting its
// maximum. The output stays the target's either way. The choice runs on measured times, which on
// this tiny model are a few hundred microseconds a step and at the mercy of whatever else runs
// (a CI run once saw a perfect drafter draft in 57 steps of 96), so the generator gets
// tick_clock(). How it weighs real costs is DraftScheduler's own tests, with simulated times.
TEST(Generator, AdaptiveDraftLengthDropsAUselessDrafterAndKeepsAPerfectOne) {
  const SamplerParams sp = greedy_sampling();
  Model m(tiny_model("qwen3", DType::kF32, 1));
  const std::vector<int32_t> prompt = test_prompts()[0];
  const int n = 300;
  const std::vector<int32_t> want = plain_generate(m, prompt, n, sp, sp.seed);
  const auto run = [&](const std::vector<float>& rates, SpecParams spec, GenerationStats* st) {
    ReplayDrafter synth(rates, static_cast<int>(m.n_vocab()), 1);
    synth.set_reference(0, want, static_cast<int32_t>(prompt.size()));
    return spec_generate(m, sp, {&synth}, {prompt}, {n}, st, spec, tick_clock()).at(0);
  };
  GenerationStats st;
  EXPECT_EQ(run({0, 0, 0, 0}, {.schedule = SpecSchedule::kFixed}, &st), want);
  EXPECT_GE(st.drafters.at(0).drafts, st.seq_steps - 1) << "fixed: a draft every step";
  EXPECT_EQ(run({0, 0, 0, 0}, {}, &st), want);
  EXPECT_LT(st.drafters.at(0).drafts, st.seq_steps / 4) << "adaptive: hardly ever drafts";
  EXPECT_GT(st.drafters.at(0).drafts, 0) << "adaptive: but still re-checks";
  EXPECT_EQ(run({1, 1, 1, 1}, {}, &st), want);
  // It starts at one token and grows the length while that pays; one step in
  // DraftScheduler::kPlainEvery drafts nothing.
  EXPECT_GT(st.drafters.at(0).mean_accepted_length(), 3.5) << "adaptive: drafts 4 whenever it can";
  EXPECT_GE(st.drafters.at(0).drafts, st.seq_steps * 9 / 10);
}

// The confidence schedule cuts each draft to the prefix its confidences say will survive: with
// confidences that tell the truth (0.95 before the wrong token, 0.02 from it on) and rows at a
// quarter of a decode (the step-time table), every verified token is accepted, over four
// sequences, and the output is still the plain one. The same drafts under the fixed and adaptive
// schedules, which do not read confidences, verify the wrong tokens too.
TEST(Generator, ConfidenceScheduleVerifiesTheConfidentPrefix) {
  const SamplerParams sp = greedy_sampling();
  Model m(tiny_model("qwen3", DType::kF32, 1));
  const Expected want = plain_reference(m, sp);
  auto self = make_draft(m, m, 6);
  StepTable steep;
  for (int64_t r = 1; r <= 64; r *= 2) {
    steep.rows.push_back(r);
    steep.seconds.push_back(1.0 + 0.25 * static_cast<double>(r));
  }
  for (SpecSchedule schedule : {SpecSchedule::kConfidence, SpecSchedule::kAdaptive, SpecSchedule::kFixed}) {
    SCOPED_TRACE(spec_schedule_name(schedule));
    ControlledDrafter d(*self, static_cast<int>(m.n_vocab()), {.corrupt = true, .confidence = true});
    GenerationStats st;
    const SpecParams spec{.schedule = schedule, .step_table = steep};
    expect_identical(want, spec_generate(m, sp, {&d}, test_prompts(), kNPredict, &st, spec, tick_clock()),
                     spec_schedule_name(schedule));
    const DrafterStats& s = st.drafters.at(0);
    EXPECT_GT(s.drafts, 10);
    if (schedule == SpecSchedule::kConfidence) {
      EXPECT_EQ(s.accepted, s.drafted) << "a wrong token was verified";
      ASSERT_GE(s.accepted_at.size(), 3u);
      for (size_t i = 0; i < 3; ++i) EXPECT_GT(s.accepted_at[i], 0) << "position " << i;
    } else {
      EXPECT_LT(s.accepted, s.drafted * 9 / 10) << "the wrong tokens are verified too";
    }
  }
}

// With no drafter, sequence i samples exactly what a plain loop seeded seed + i samples.
TEST(Generator, SamplingWithoutDrafterIsPlainSampling) {
  SamplerParams sp;
  sp.temperature = 0.9f;
  sp.seed = 11;
  sp.repeat_penalty = 1.1f;
  Model m(tiny_model("qwen3", DType::kF32, 3));
  const Expected want = plain_reference(m, sp);
  expect_identical(want, spec_generate(m, sp, {}, test_prompts(), kNPredict), "sampling, no drafter");
}

// q = p exactly when the draft is the target: every draft is accepted, at any temperature.
TEST(Generator, SamplingWithTargetAsDraftAcceptsEverything) {
  SamplerParams sp;
  sp.temperature = 1.0f;
  sp.seed = 5;
  Model m(tiny_model("qwen3", DType::kF32, 2));
  auto self = make_draft(m, m, 3);
  GenerationStats st;
  const auto out = spec_generate(m, sp, {self.get()}, test_prompts(), kNPredict, &st);
  EXPECT_EQ(st.total().acceptance_rate(), 1.0);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i].size(), static_cast<size_t>(kNPredict[i]));
}

TEST(Generator, EndOfGenerationStopsTheSequence) {
  const SamplerParams sp = greedy_sampling();
  Model m(tiny_model("qwen3", DType::kF32, 1));
  const auto prompts = test_prompts();
  const std::vector<int32_t> full = plain_generate(m, prompts[0], 40, sp, 0);
  const int32_t stop = full[17];
  const auto is_eog = [stop](int32_t t) { return t == stop; };
  const std::vector<int32_t> want = plain_generate(m, prompts[0], 40, sp, 0, is_eog);
  ASSERT_LT(want.size(), full.size());
  Context ctx(m, {.n_ctx = 512, .n_batch = 64, .n_threads = 1});
  auto self = make_draft(m, m, 6);
  GeneratorParams gp;
  gp.sampling = sp;
  gp.spec.schedule = SpecSchedule::kFixed;  // drafts that run past the end-of-generation token, every step
  gp.is_eog = is_eog;
  Generator gen(ctx, gp, {self.get()});
  std::vector<int32_t> streamed;
  gen.on_tokens = [&](int seq, std::span<const int32_t> t) {
    EXPECT_EQ(seq, 0);
    streamed.insert(streamed.end(), t.begin(), t.end());
  };
  gen.start(0, prompts[0], 40);
  gen.run();
  EXPECT_EQ(gen.output(0), want);
  EXPECT_EQ(streamed, want);
  EXPECT_FALSE(gen.active(0));
  // Every draft was accepted (the target is its own draft), the last one past the end token.
  const DrafterStats& s = gen.stats().drafters.at(0);
  EXPECT_GE(s.drafts, 2);
  EXPECT_EQ(s.accepted, s.drafted);
}

// A drafter proposing garbage (ids outside the vocabulary, q of the wrong size is an error) can
// slow generation down but never change it.
class GarbageDrafter : public Drafter {
 public:
  std::string name() const override { return "garbage"; }
  int max_draft() const override { return 64; }
  void reset(int) override {}
  void commit(int, std::span<const int32_t>, int32_t, const TargetFeatures&) override {}
  void draft(const DraftRequest& req, Draft& out) override {
    for (int i = 0; i < req.n_max + 3; ++i) out.tokens.push_back(i == 2 ? -5 : (req.anchor * 7 + i) % 489);
  }
};

TEST(Generator, GarbageDraftsDoNotChangeTheOutput) {
  const SamplerParams sp = greedy_sampling();
  Model m(tiny_model("qwen3", DType::kF32, 1));
  const Expected want = plain_reference(m, sp);
  GarbageDrafter g;
  expect_identical(want, spec_generate(m, sp, {&g}, test_prompts(), kNPredict), "garbage");
  // n_min discards every (2-token, cut at the bad id) garbage draft.
  GenerationStats st;
  expect_identical(want, spec_generate(m, sp, {&g}, test_prompts(), kNPredict, &st, {.n_min = 3}), "n_min");
  EXPECT_EQ(st.drafters.at(0).drafts, 0);
}

class TapHungryDrafter : public GarbageDrafter {
 public:
  explicit TapHungryDrafter(std::vector<int> taps) : taps_(std::move(taps)) {}
  std::string name() const override { return "tap-hungry"; }
  std::vector<int> required_taps() const override { return taps_; }

 private:
  std::vector<int> taps_;
};

TEST(Generator, DrafterNeedingTapsTheTargetLacksIsAnError) {
  Model m(tiny_model("qwen3", DType::kF32, 1));
  Context ctx(m, {.n_ctx = 64, .n_batch = 8, .n_threads = 1});
  GeneratorParams gp;
  gp.sampling = greedy_sampling();
  TapHungryDrafter bad({1, 7});  // the tiny model has 2 layers: taps 0..2
  try {
    Generator gen(ctx, gp, {&bad});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("drafter 'tap-hungry' needs the target's layer input 7"),
              std::string::npos) << e.what();
  }
  TapHungryDrafter good({0, 2});
  Generator gen(ctx, gp, {&good});
  EXPECT_EQ(ctx.taps(), (std::vector<int>{0, 2}));
}

TEST(Generator, BadParametersAreErrors) {
  Model m(tiny_model("qwen3", DType::kF32, 1));
  Context ctx(m, {.n_ctx = 64, .n_batch = 8, .n_threads = 1});
  GeneratorParams gp;
  gp.sampling = greedy_sampling();
  gp.spec.n_min = -1;
  EXPECT_THROW(Generator(ctx, gp, {}), Error);
  gp.spec.n_min = 0;
  Generator gen(ctx, gp, {});
  EXPECT_THROW(gen.start(0, {}, 4), Error);
  EXPECT_THROW(gen.start(0, {1, 2}, 0), Error);
  EXPECT_THROW(gen.start(64, {1, 2}, 4), Error);
  EXPECT_THROW(gen.start(0, {1, 9999}, 4), Error);
  DraftModelParams p;
  p.n_max = 0;
  EXPECT_THROW(DraftModelDrafter(m, m, p), Error);
}

// Writes a copy of a GGUF with edited metadata and, optionally, fewer embedding rows.
std::string edited_copy(const std::string& src, const std::string& name,
                        const std::function<void(GgufWriter&)>& edit, int64_t keep_rows = -1) {
  GgufReader r(src);
  GgufWriter w;
  w.copy_metadata(r);
  edit(w);
  for (const GgufTensorInfo& t : r.tensors()) {
    std::vector<int64_t> shape = t.shape();
    uint64_t nbytes = t.nbytes;
    if (t.name == "token_embd.weight" && keep_rows > 0) {
      nbytes = nbytes / static_cast<uint64_t>(shape[1]) * static_cast<uint64_t>(keep_rows);
      shape[1] = keep_rows;
    }
    w.add_tensor(t.name, t.type, shape, t.data, nbytes);
  }
  const std::string path = ::testing::TempDir() + "/fulgur_spec_" + name + ".gguf";
  w.write(path);
  return path;
}

TEST(Generator, DraftWithADifferentVocabularyIsRefused) {
  const std::string target_path = tiny_model("qwen3", DType::kF32, 1);
  Model target(target_path);
  GgufReader r(target_path);
  std::vector<std::string> tokens = r.get_string_array("tokenizer.ggml.tokens");
  tokens[100] = "zzz";
  Model renamed(edited_copy(target_path, "renamed", [&](GgufWriter& w) {
    w.set_string_array("tokenizer.ggml.tokens", tokens);
  }));
  try {
    check_same_vocabulary(target, renamed);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token 100 is 'zzz' in the draft model"), std::string::npos) << e.what();
  }
  Model smaller(edited_copy(target_path, "smaller", [](GgufWriter&) {}, 400));
  try {
    DraftModelDrafter d(target, smaller, {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vocabulary has 400 tokens, the target's 489"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(check_same_vocabulary(target, target));
}

}  // namespace
}  // namespace fulgur
