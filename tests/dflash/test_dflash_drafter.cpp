// The block drafter at runtime: greedy losslessness of every kind and layout with 1 and 4
// sequences through accepted drafts, its state after them, the distribution of every token
// sampled with its drafts (DFlash's, DSpark's chain and DFlash2's selector q), equivalences that pin the algorithm (DSpark with W2 = 0 is DFlash, DFlash2 at
// identity init is DFlash, one set of weights in several formats drafts the same), p_min and
// n_max handling, and refusal of mismatched target/draft pairs.
#include <cmath>
#include <map>

#include "dflash/dflash_fixture.h"
#include "gguf/gguf_writer.h"
#include "sampling/rng.h"
#include "gguf/dflash_keys.h"
#include "speculative/controlled_drafters.h"
#include "speculative/emission_check.h"

namespace fulgur::dflash_test {
namespace {

using testing_support::ControlledDrafter;

const std::vector<int32_t>& sample_prompt() {
  static const std::vector<int32_t> p = prompt_tokens(3, 14);
  return p;
}

// Plain greedy outputs (no drafter), computed once.
const GenResult& baseline(int n_seqs) {
  static std::map<int, GenResult> cache;
  auto it = cache.find(n_seqs);
  if (it == cache.end()) it = cache.emplace(n_seqs, generate(nullptr, n_seqs, 24)).first;
  return it->second;
}

struct Kind {
  const char* name;
  const char* format;
  const char* markov;
  bool anchor_first;  // speculators only
  int64_t draft_vocab;
};

void PrintTo(const Kind& k, std::ostream* os) { *os << k.name; }

class DflashLossless : public ::testing::TestWithParam<Kind> {};

// The draft's block after a run of accepted and rejected steps equals, token for token and
// confidence for confidence (bitwise), the block of a drafter that was given the committed
// history in one commit: what commit() and the rollback of rejected rows leave in the draft's
// cache is exactly the committed context. Checked for every draft the drafter made in `run`,
// replayed in reverse order, so that nothing a drafter wrongly carries from one block to the
// next (a recurrent head's state) can make the two agree.
void expect_state_matches_history(DflashDrafter& fresh, const ControlledDrafter& run,
                                  const std::vector<std::vector<int32_t>>& out, const char* kind) {
  int checked = 0;
  for (auto it = run.records().rbegin(); it != run.records().rend(); ++it) {
    const ControlledDrafter::Record& r = *it;
    Context ctx(*env().target, {.n_ctx = 512, .n_batch = 512, .n_threads = 1});
    std::vector<int32_t> history = prompt_tokens(r.seq, 9 + 3 * r.seq);
    history.insert(history.end(), out.at(static_cast<size_t>(r.seq)).begin(), out.at(static_cast<size_t>(r.seq)).end());
    ASSERT_LT(static_cast<size_t>(r.anchor_pos), history.size());
    ASSERT_EQ(history[static_cast<size_t>(r.anchor_pos)], r.anchor);
    testing_support::commit_history(fresh, ctx, r.seq, history, r.anchor_pos);
    DraftRequest req;
    req.seq = r.seq;
    req.anchor = r.anchor;
    req.anchor_pos = r.anchor_pos;
    req.n_max = static_cast<int>(r.inner.size());
    Draft d;
    fresh.draft(req, d);
    EXPECT_EQ(d.tokens, r.inner) << kind << ", sequence " << r.seq << ", anchor at " << r.anchor_pos;
    ASSERT_EQ(d.confidence.size(), r.inner_confidence.size());
    for (size_t i = 0; i < d.confidence.size(); ++i) {
      EXPECT_EQ(d.confidence[i], r.inner_confidence[i]) << kind << ", sequence " << r.seq << ", anchor at "
                                                        << r.anchor_pos << ", slot " << i;
    }
    ++checked;
  }
  EXPECT_GE(checked, 8) << kind;
}

// Random draft weights agree with the target almost never, so the drafts sent to verification
// are the target's own greedy continuation with a wrong token at a position cycling through
// 0..k (testing_support::ControlledDrafter): every step accepts a known number of drafts,
// 0..k, while the drafter runs as in any generation (it drafts every block, and each step
// commits the anchor and the accepted drafts to it). The output must be plain decoding's, the
// acceptance at every draft position exactly as scheduled, and the drafter's state afterwards
// that of a drafter given the committed history at once.
TEST_P(DflashLossless, GreedyEqualsPlainDecodingThroughAcceptedDrafts) {
  const Kind k = GetParam();
  DraftSynthOptions o = draft_options(k.format, k.markov);
  o.sample_from_anchor = k.anchor_first;
  o.draft_vocab = k.draft_vocab;
  const std::string path = make_draft(std::string("lossless_") + k.name, o);
  DflashDrafter d(path, *env().target, {.n_threads = 1});
  DflashDrafter fresh(path, *env().target, {.n_threads = 1});
  EXPECT_EQ(d.model().dflash()->sample_from_anchor,
            std::string(k.format) == "deepspec" || (std::string(k.format) == "speculators" && k.anchor_first));
  const size_t n_drafts = static_cast<size_t>(d.max_draft());
  for (int n_seqs : {1, 4}) {
    SCOPED_TRACE(::testing::Message() << k.name << " with " << n_seqs << " sequences");
    const GenResult& plain = baseline(n_seqs);
    ControlledDrafter controlled(d, static_cast<int>(env().n_vocab), {.corrupt = true});
    for (int s = 0; s < n_seqs; ++s) controlled.set_reference(s, plain.out[s], 9 + 3 * s);
    const GenResult r = generate(&controlled, n_seqs, 24);
    EXPECT_EQ(r.out, plain.out);
    EXPECT_EQ(r.stats.drafted_at, controlled.sent_at());
    EXPECT_EQ(r.stats.accepted_at, controlled.expected_accepted_at());
    ASSERT_EQ(r.stats.accepted_at.size(), n_drafts);
    for (size_t i = 0; i < n_drafts; ++i) {
      EXPECT_GT(r.stats.accepted_at[i], 0) << "draft position " << i;
      EXPECT_LT(r.stats.accepted_at[i], r.stats.drafted_at[i]) << "draft position " << i;
    }
    expect_state_matches_history(fresh, controlled, r.out, k.name);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, DflashLossless,
    ::testing::Values(Kind{"dflash_zlab", "zlab", "", false, 0},
                      Kind{"dflash_deepspec", "deepspec", "", true, 0},
                      Kind{"dspark_vanilla", "deepspec", "vanilla", true, 0},
                      Kind{"dspark_gated", "deepspec", "gated", true, 0},
                      Kind{"dspark_rnn", "deepspec", "rnn", true, 0},
                      Kind{"dspark_specforge", "specforge", "vanilla", false, 0},
                      Kind{"dspark_spec_d2t", "speculators", "vanilla", true, 64},
                      Kind{"dflash_spec_1n", "speculators", "", false, 0},
                      Kind{"dflash2", "dflash2", "", false, 0}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(DflashDrafter, KindIsDetectedFromTensors) {
  DflashDrafter plain(make_draft("kind_dflash", draft_options("zlab", "")), *env().target, {});
  EXPECT_EQ(plain.name(), "dflash");
  EXPECT_EQ(plain.block_drafts(), 3);  // 1+N: B - 1
  EXPECT_EQ(plain.required_taps(), (std::vector<int>{1, 2}));
  DflashDrafter spark(make_draft("kind_dspark", draft_options("deepspec", "vanilla")), *env().target, {});
  EXPECT_EQ(spark.name(), "dspark");
  EXPECT_EQ(spark.block_drafts(), 4);  // anchor-first: B
  DflashDrafter d2(make_draft("kind_dflash2", draft_options("dflash2", "")), *env().target, {});
  EXPECT_EQ(d2.name(), "dflash2");
}

// llama.cpp's block (short_block): n_max + 1 rows for 1+N, n_max anchor-first. With n_max the
// whole block it is the trained block; shorter, its drafts come from a shorter bidirectional
// block (the teacher-forced top-1 of the short block) and greedy decoding stays lossless.
TEST(DflashDrafter, ShortBlockAsLlamaCpp) {
  for (const char* format : {"zlab", "deepspec"}) {
    SCOPED_TRACE(format);
    const std::string path = make_draft(std::string("short_") + format,
                                        draft_options(format, std::string(format) == "deepspec" ? "vanilla" : ""));
    DflashDrafter trained(path, *env().target, {.n_threads = 1});
    const int full = trained.block_drafts();
    DflashDrafter whole(path, *env().target, {.n_threads = 1, .n_max = full, .short_block = true});
    EXPECT_EQ(draft_after(whole, sample_prompt(), full), draft_after(trained, sample_prompt(), full));
    DflashDrafter shorter(path, *env().target, {.n_threads = 1, .n_max = 2, .short_block = true});
    const std::vector<int32_t> d = draft_after(shorter, sample_prompt(), 2);
    ASSERT_EQ(d.size(), 2u);
    std::vector<int32_t> top1;
    std::vector<float> conf;
    shorter.score_block(0, sample_prompt().back(), 13, {&d[0], 1}, top1, conf);
    ASSERT_EQ(top1.size(), 2u);  // the short block's two prediction slots
    EXPECT_EQ(top1, d);
    const std::vector<int32_t> t = draft_after(trained, sample_prompt(), 2);
    trained.score_block(0, sample_prompt().back(), 13, std::vector<int32_t>(static_cast<size_t>(full), d[0]), top1, conf);
    EXPECT_EQ(top1.size(), static_cast<size_t>(full));
    for (int n_seqs : {1, 4}) {  // through accepted drafts (the controlled drafter corrects some)
      const GenResult& plain = baseline(n_seqs);
      ControlledDrafter controlled(shorter, static_cast<int>(env().n_vocab), {.corrupt = true});
      for (int s = 0; s < n_seqs; ++s) controlled.set_reference(s, plain.out[s], 9 + 3 * s);
      const GenResult r = generate(&controlled, n_seqs, 24);
      EXPECT_EQ(r.out, plain.out);
      EXPECT_GT(r.stats.accepted_at.at(1), 0);
    }
  }
}

TEST(DflashDrafter, DsparkWithZeroW2DraftsWhatDflashDrafts) {
  DraftSynthOptions spark = draft_options("deepspec", "vanilla");
  spark.zero_w2 = true;
  DraftSynthOptions plain = draft_options("deepspec", "");
  DflashDrafter a(make_draft("w2zero_spark", spark), *env().target, {});
  DflashDrafter b(make_draft("w2zero_plain", plain), *env().target, {});
  const std::vector<int32_t> da = draft_after(a, sample_prompt(), 4);
  EXPECT_EQ(da.size(), 4u);
  EXPECT_EQ(da, draft_after(b, sample_prompt(), 4));
  // And the Markov head matters when W2 != 0 (otherwise the test above proves nothing).
  DflashDrafter c(make_draft("w2_spark", draft_options("deepspec", "vanilla")), *env().target, {});
  std::vector<int32_t> top_a, top_c;
  std::vector<float> conf;
  const std::vector<int32_t> next = {40, 41, 42};
  draft_after(a, sample_prompt(), 1);
  a.score_block(0, sample_prompt().back(), 13, next, top_a, conf);
  draft_after(c, sample_prompt(), 1);
  c.score_block(0, sample_prompt().back(), 13, next, top_c, conf);
  EXPECT_NE(top_a, top_c);
}

// A resting drafter (the scheduler judges its drafts losing) keeps only each sequence's last
// kRestWindow committed rows pending and injects them when a draft is asked for: its block is
// then exactly that of a drafter given the prompt and those rows alone (a gap of positions in
// between), and not that of one given every row (else this test would prove nothing).
TEST(DflashDrafter, RestingKeepsTheRecentWindowOnly) {
  const std::string path = make_draft("resting", draft_options("deepspec", "vanilla"));
  constexpr int kPrompt = 8, kIdle = 200;  // past twice the window: trimmed on the way too
  const int64_t W = DflashDrafter::kRestWindow;
  ASSERT_GT(kIdle, 2 * W);
  const std::vector<int32_t> history = prompt_tokens(3, kPrompt + kIdle + 1);
  Context ctx(*env().target, {.n_ctx = 512, .n_batch = 512, .n_threads = 1});
  DflashDrafter rested(path, *env().target, {}), gapped(path, *env().target, {}), whole(path, *env().target, {});
  ctx.set_taps(rested.required_taps());
  Batch b;
  for (int i = 0; i < kPrompt + kIdle; ++i) b.add(history[static_cast<size_t>(i)], i, 0, false);
  ctx.decode(b);
  FeatureGather features(ctx, rested.required_taps());
  const auto commit = [&](DflashDrafter& d, int from, int to) {  // rows [from, to) in one commit
    std::vector<int64_t> rows;
    for (int i = from; i < to; ++i) rows.push_back(i);
    d.commit(0, std::span(history).subspan(static_cast<size_t>(from), static_cast<size_t>(to - from)), from,
             features.gather(rows));
  };
  for (DflashDrafter* d : {&rested, &gapped, &whole}) {
    d->reset(0);
    commit(*d, 0, kPrompt);
  }
  rested.set_resting(true);
  for (int i = kPrompt; i < kPrompt + kIdle; ++i) {
    commit(rested, i, i + 1);
    commit(whole, i, i + 1);
  }
  commit(gapped, kPrompt + kIdle - static_cast<int>(W), kPrompt + kIdle);
  const int32_t anchor = history[kPrompt + kIdle];
  const std::vector<int32_t> next = {40, 41, 42};
  std::vector<int32_t> top_r, top_g, top_w;
  std::vector<float> conf_r, conf_g, conf_w;
  rested.score_block(0, anchor, kPrompt + kIdle, next, top_r, conf_r);
  gapped.score_block(0, anchor, kPrompt + kIdle, next, top_g, conf_g);
  whole.score_block(0, anchor, kPrompt + kIdle, next, top_w, conf_w);
  EXPECT_EQ(top_r, top_g);
  ASSERT_EQ(conf_r.size(), conf_g.size());
  for (size_t k = 0; k < conf_r.size(); ++k) EXPECT_EQ(conf_r[k], conf_g[k]) << "slot " << k;
  EXPECT_NE(conf_r, conf_w) << "the rows before the window changed nothing: the test proves nothing";
  // Rested or not, drafting stays lossless: generation through a drafter resting from the start.
  DflashDrafter from_start(path, *env().target, {});
  from_start.set_resting(true);
  EXPECT_EQ(generate(&from_start, 2, 90).out, generate(nullptr, 2, 90).out);
}

TEST(DflashDrafter, Dflash2AtIdentityDraftsWhatDflashDrafts) {
  DraftSynthOptions d2 = draft_options("dflash2", "");
  d2.dflash2_identity = true;
  DflashDrafter a(make_draft("ident_dflash2", d2), *env().target, {});
  DflashDrafter b(make_draft("ident_zlab", draft_options("zlab", "")), *env().target, {});
  const std::vector<int32_t> da = draft_after(a, sample_prompt(), 3);
  EXPECT_EQ(da.size(), 3u);
  EXPECT_EQ(da, draft_after(b, sample_prompt(), 3));
  DflashDrafter c(make_draft("nonident_dflash2", draft_options("dflash2", "")), *env().target, {});
  EXPECT_NE(draft_after(c, sample_prompt(), 3), da);
}

TEST(DflashDrafter, SameWeightsInDifferentFormatsDraftTheSame) {
  // Anchor-first DSpark: DeepSpec and speculators (sample_from_anchor = true).
  DflashDrafter ds(make_draft("same_deepspec", draft_options("deepspec", "gated")), *env().target, {});
  DraftSynthOptions sp = draft_options("speculators", "gated");
  sp.sample_from_anchor = true;
  DflashDrafter spk(make_draft("same_spec_af", sp), *env().target, {});
  const std::vector<int32_t> a = draft_after(ds, sample_prompt(), 4);
  EXPECT_EQ(a.size(), 4u);
  EXPECT_EQ(a, draft_after(spk, sample_prompt(), 4));
  // 1+N DSpark: SpecForge and speculators (sample_from_anchor = false).
  DflashDrafter sf(make_draft("same_specforge", draft_options("specforge", "gated")), *env().target, {});
  sp.sample_from_anchor = false;
  DflashDrafter sp1n(make_draft("same_spec_1n", sp), *env().target, {});
  const std::vector<int32_t> b = draft_after(sf, sample_prompt(), 3);
  EXPECT_EQ(b.size(), 3u);
  EXPECT_EQ(b, draft_after(sp1n, sample_prompt(), 3));
  // 1+N DFlash: z-lab and speculators DFlash.
  DflashDrafter zl(make_draft("same_zlab", draft_options("zlab", "")), *env().target, {});
  DraftSynthOptions spd = draft_options("speculators", "");
  spd.sample_from_anchor = false;
  DflashDrafter spd1(make_draft("same_spec_dflash", spd), *env().target, {});
  const std::vector<int32_t> c = draft_after(zl, sample_prompt(), 3);
  EXPECT_EQ(c, draft_after(spd1, sample_prompt(), 3));
}

TEST(DflashDrafter, ReducedVocabularyDraftsOnlyMappedTokens) {
  DraftSynthOptions o = draft_options("speculators", "vanilla");
  o.draft_vocab = 64;
  DflashDrafter d(make_draft("d2t_only", o), *env().target, {});
  for (int s = 0; s < 4; ++s) {
    for (int32_t t : draft_after(d, prompt_tokens(s, 10), 4)) {
      EXPECT_EQ(t % 2, 0);  // synth keeps the even ids 0..126
      EXPECT_LT(t, 128);
    }
  }
}

TEST(DflashDrafter, PMinCutsAtTheFirstLowConfidence) {
  DflashDrafter d(make_draft("pmin", draft_options("deepspec", "vanilla")), *env().target, {});
  const std::vector<int32_t> full = draft_after(d, sample_prompt(), 4);
  ASSERT_EQ(full.size(), 4u);
  std::vector<int32_t> top1;
  std::vector<float> conf;
  d.score_block(0, sample_prompt().back(), 13, full, top1, conf);
  EXPECT_EQ(top1, full);  // the chain fed its own drafts reproduces them
  for (float p : {0.0f, 0.3f, 0.5f, 0.7f, 0.99f}) {
    size_t expect = 0;
    while (expect < conf.size() && !(conf[expect] < p)) ++expect;
    const std::vector<int32_t> cut = draft_after(d, sample_prompt(), 4, p);
    EXPECT_EQ(cut.size(), expect) << "p_min " << p;
    EXPECT_TRUE(std::equal(cut.begin(), cut.end(), full.begin()));
  }
}

// As llama.cpp: a DSpark draft without a confidence head refuses p_min > 0; plain DFlash cuts
// on the top-10-renormalised probability (1.0 cuts everything a spread of logits allows).
TEST(DflashDrafter, PMinWithoutConfidenceHead) {
  DraftSynthOptions o = draft_options("deepspec", "vanilla");
  o.confidence = false;
  DflashDrafter dspark(make_draft("pmin_noconf", o), *env().target, {});
  EXPECT_EQ(draft_after(dspark, sample_prompt(), 4).size(), 4u);
  try {
    draft_after(dspark, sample_prompt(), 4, 0.5f);
    ADD_FAILURE() << "p_min > 0 accepted without a confidence head";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no confidence head"), std::string::npos) << e.what();
  }
  DflashDrafter plain(make_draft("pmin_plain", draft_options("zlab", "")), *env().target, {});
  EXPECT_EQ(draft_after(plain, sample_prompt(), 3, 0.0f).size(), 3u);
  EXPECT_TRUE(draft_after(plain, sample_prompt(), 3, 1.0f).empty());
}

TEST(DflashDrafter, NMaxIsClampedToTheBlock) {
  const std::string path = make_draft("clamp", draft_options("zlab", ""));
  DflashDrafter wide(path, *env().target, {.n_max = 10});
  EXPECT_EQ(draft_after(wide, sample_prompt(), 100).size(), 3u);  // 1+N block of 4
  DflashDrafter narrow(path, *env().target, {.n_max = 2});
  EXPECT_EQ(draft_after(narrow, sample_prompt(), 100).size(), 2u);
  EXPECT_EQ(draft_after(narrow, sample_prompt(), 1).size(), 1u);  // the loop's limit wins
  EXPECT_THROW(DflashDrafter(path, *env().target, {.n_max = -1}), Error);
}

TEST(DflashDrafter, SampledDraftsComeWithTheirDistribution) {
  DflashDrafter d(make_draft("sampled", draft_options("deepspec", "rnn")), *env().target, {});
  draft_after(d, sample_prompt(), 1);  // leaves the prompt committed on sequence 0
  SamplerParams sp;
  sp.temperature = 0.9f;
  Rng rng(5);
  DraftRequest req;
  req.seq = 0;
  req.anchor = sample_prompt().back();
  req.anchor_pos = 13;
  req.n_max = 4;
  req.sampling = &sp;
  req.rng = &rng;
  Draft out;
  d.draft(req, out);
  ASSERT_EQ(out.tokens.size(), 4u);
  ASSERT_EQ(out.q.size(), 4u);
  for (size_t i = 0; i < out.tokens.size(); ++i) EXPECT_GT(out.q[i].prob(out.tokens[i]), 0.0f);
}

// Sampling with a block draft: every emitted token, at every index of its step, has the
// target's distribution (speculative/emission_check.h), for each way the drafter draws: DFlash samples
// its block logits, DSpark a chain whose q depends on the token drafted before (vanilla, gated
// and rnn Markov heads), DFlash2 its selector over the top-k candidates. The target is unigram()
// and the drafts start from exactly its logits (unigram_draft()), moved away by a chosen scale so
// that about half of them are accepted at every draft position. The same runs with an argmax
// bonus token, or p sampled after a rejection, fail the check. The acceptance at each position
// is held within 0.02 of the seeded run's recorded figure (the same on ref, avx2 and avx512): a
// DSpark chain fed the wrong previous token moves it by 0.03-0.05 on the vanilla and gated heads
// while staying lossless.
struct SampledKind {
  const char* name;
  const char* format;
  const char* markov;
  std::map<std::string, float> scales;
  std::vector<double> rates;  // recorded acceptance at each draft position (seeded, deterministic)
};

void PrintTo(const SampledKind& k, std::ostream* os) { *os << k.name; }

class DflashSampling : public ::testing::TestWithParam<SampledKind> {};

TEST_P(DflashSampling, EveryEmittedTokenHasTheTargetsDistribution) {
  const SampledKind k = GetParam();
  const Model& target = *unigram().model;
  DflashDrafter d(unigram_draft(std::string("sampled_") + k.name, draft_options(k.format, k.markov), k.scales),
                  target, {.n_threads = 1});
  ControlledDrafter logged(d, static_cast<int>(env().n_vocab), {});
  SamplerParams sp;
  sp.temperature = 1.0f;
  sp.top_k = 4;  // DFlash2's selector_top_k: the selector's candidates are the target's top 4
  sp.top_p = 1.0f;
  sp.min_p = 0.0f;
  Context ctx(target, {.n_ctx = 1024, .n_batch = 128, .n_threads = 1});
  GeneratorParams gp;
  gp.sampling = sp;
  gp.spec.schedule = SpecSchedule::kFixed;  // every step drafts a whole block
  Generator gen(ctx, gp, {&logged});
  testing_support::EmissionLog log(gen, logged);
  run_logged_rounds(gen, log);
  const size_t n = static_cast<size_t>(d.max_draft());
  testing_support::expect_emissions_lossless(
      target, sp, log.trajectories(), n, 100,
      {testing_support::Simulated::kArgmaxBonus, testing_support::Simulated::kResampleP});
  ASSERT_EQ(k.rates.size(), n);
  testing_support::expect_acceptance_near(gen.stats().drafters.at(0), k.rates, 0.02);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, DflashSampling,
    ::testing::Values(SampledKind{"dflash", "zlab", "", {{"output.scale", 3.0f}}, {0.609, 0.632, 0.632}},
                      SampledKind{"dspark_vanilla", "deepspec", "vanilla",
                                  {{"output.scale", 2.0f}, {"markov_w2.scale", 0.6f}}, {0.657, 0.659, 0.674, 0.671}},
                      SampledKind{"dspark_gated", "deepspec", "gated",
                                  {{"output.scale", 3.0f}, {"markov_w2.scale", 1.5f}}, {0.617, 0.726, 0.703, 0.755}},
                      SampledKind{"dspark_rnn", "deepspec", "rnn",
                                  {{"output.scale", 2.0f}, {"markov_w2.scale", 0.3f}}, {0.537, 0.548, 0.545, 0.565}},
                      SampledKind{"dflash2", "dflash2", "",
                                  {{"output.scale", 3.0f}, {"selector_successor.scale", 0.05f}}, {0.637, 0.591, 0.592}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(DflashDrafter, MismatchesAreRefusedNamingBothSides) {
  // A draft for a 4-layer target whose taps reach layer input 4 cannot serve a 2-layer target.
  DraftSynthOptions o = draft_options("deepspec", "vanilla");
  o.n_target_layers = 4;
  o.target_layer_ids = {1, 3};
  const std::string path = make_draft("mismatch_taps", o);
  try {
    DflashDrafter d(path, *env().target, {});
    ADD_FAILURE() << "accepted taps beyond the target";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("beyond the target's 2 layers"), std::string::npos) << msg;
    EXPECT_NE(msg.find("target.gguf"), std::string::npos) << msg;
    EXPECT_NE(msg.find("mismatch_taps.gguf"), std::string::npos) << msg;
  }
  // A draft of another width.
  DraftSynthOptions w = draft_options("zlab", "");
  w.n_embd = 128;
  w.embed.clear();
  w.lm_head.clear();
  try {
    DflashDrafter d(make_draft("mismatch_width", w), *env().target, {});
    ADD_FAILURE() << "accepted a draft of another width";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("hidden size 128"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fulgur::dflash_test

namespace fulgur::dflash_test {
namespace {

// A DFlash and a DSpark draft for a Gated-DeltaNet target (the tiny qwen35: taps of its layer
// inputs 1 and 3, across a GDN and the attention layer), with the drafts replaced by the
// target's continuation corrupted at a cycling position: greedy output is plain decoding's with
// 1 and 4 sequences, every draft position accepted and rejected, so every step rolls the
// target's recurrent state back through its snapshot planes, and the drafter's cache keeps up.
TEST(DflashDrafter, LosslessOnAGatedDeltaNetTarget) {
  SynthOptions so;
  so.arch = "qwen35";
  so.shape = "tiny";
  so.seed = 5;
  so.out = env().dir + "/gdn_target.gguf";
  so.tokenizer_json = "builtin";
  synth_model(so);
  Model target(so.out);
  const GgufTensorInfo& t = target.gguf().tensor("token_embd.weight");
  std::vector<float> embed(static_cast<size_t>(t.n_elements()));
  std::memcpy(embed.data(), t.data, embed.size() * sizeof(float));
  const int V = static_cast<int>(target.n_vocab());
  const auto generate_on = [&](Drafter* d, int n_seqs) { return generate(d, n_seqs, 24, 0.0f, 0.0f, &target); };
  for (const char* markov : {"", "vanilla"}) {
    DraftSynthOptions o = draft_options("deepspec", markov);
    o.n_target_layers = 4;
    o.target_layer_ids = {0, 2};
    o.embed = embed;
    o.lm_head = embed;  // tied target
    const std::string path = make_draft(std::string("gdn_target_") + (*markov ? markov : "dflash"), o);
    DflashDrafter d(path, target, {.n_threads = 1});
    EXPECT_EQ(d.required_taps(), (std::vector<int>{1, 3}));
    for (int n_seqs : {1, 4}) {
      SCOPED_TRACE(::testing::Message() << d.name() << " with " << n_seqs << " sequences");
      const GenResult plain = generate_on(nullptr, n_seqs);
      ControlledDrafter controlled(d, V, {.corrupt = true});
      for (int s = 0; s < n_seqs; ++s) controlled.set_reference(s, plain.out[s], 9 + 3 * s);
      const GenResult r = generate_on(&controlled, n_seqs);
      EXPECT_EQ(r.out, plain.out);
      EXPECT_EQ(r.stats.accepted_at, controlled.expected_accepted_at());
      ASSERT_EQ(r.stats.accepted_at.size(), static_cast<size_t>(d.max_draft()));
      for (size_t i = 0; i < r.stats.accepted_at.size(); ++i) {
        EXPECT_GT(r.stats.accepted_at[i], 0) << "draft position " << i;
        EXPECT_LT(r.stats.accepted_at[i], r.stats.drafted_at[i]) << "draft position " << i;
      }
      // The drafter's own (random) drafts, unreplaced: rejected, output unchanged.
      EXPECT_EQ(generate_on(&d, n_seqs).out, plain.out);
    }
  }
}

}  // namespace
}  // namespace fulgur::dflash_test
