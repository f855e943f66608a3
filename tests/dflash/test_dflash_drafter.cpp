// The block drafter at runtime: greedy losslessness of every kind and layout with 1 and 4
// sequences, equivalences that pin the algorithm (DSpark with W2 = 0 is DFlash, DFlash2 at
// identity init is DFlash, one set of weights in several formats drafts the same), p_min and
// n_max handling, and refusal of mismatched target/draft pairs.
#include <cmath>
#include <map>

#include "dflash/dflash_fixture.h"
#include "gguf/gguf_writer.h"
#include "sampling/rng.h"
#include "gguf/dflash_keys.h"

namespace fulgur::dflash_test {
namespace {

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

class DflashLossless : public ::testing::TestWithParam<Kind> {};

TEST_P(DflashLossless, GreedyEqualsPlainDecoding) {
  const Kind k = GetParam();
  DraftSynthOptions o = draft_options(k.format, k.markov);
  o.sample_from_anchor = k.anchor_first;
  o.draft_vocab = k.draft_vocab;
  DflashDrafter d(make_draft(std::string("lossless_") + k.name, o), *env().target, {});
  EXPECT_EQ(d.model().dflash()->sample_from_anchor,
            std::string(k.format) == "deepspec" || (std::string(k.format) == "speculators" && k.anchor_first));
  for (int n_seqs : {1, 4}) {
    const GenResult r = generate(&d, n_seqs, 24);
    EXPECT_EQ(r.out, baseline(n_seqs).out) << k.name << " with " << n_seqs << " sequences";
    EXPECT_GE(r.mean_accepted_length, 1.0);
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

TEST(DflashDrafter, SampledGenerationMatchesTheTargetDistribution) {
  // Chi-square on the first two emitted tokens: with the drafter, every emitted token must be
  // distributed as the target's. Histogram of token 2 given the first token from plain sampling
  // vs with DSpark; both are compared with the exact target distribution of token 1.
  DflashDrafter d(make_draft("chisq", draft_options("deepspec", "vanilla")), *env().target, {});
  const std::vector<int32_t> prompt = prompt_tokens(1, 8);
  Context ctx(*env().target, {.n_ctx = 256, .n_batch = 64, .n_threads = 1});
  GeneratorParams gp;
  gp.spec.adaptive = false;  // every step through rejection sampling, not plain sampling
  gp.sampling.temperature = 1.5f;
  gp.sampling.top_k = 8;
  gp.sampling.top_p = 1.0f;
  gp.sampling.min_p = 0.0f;
  // Exact p(token 1): the target's distribution after the prompt.
  Batch b;
  for (size_t i = 0; i < prompt.size(); ++i) b.add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size());
  ctx.decode(b);
  const Distribution p1 = compute_distribution(ctx.logits(b.size() - 1), static_cast<int>(env().n_vocab), gp.sampling);
  ctx.clear();
  std::map<int32_t, int> hist;
  const int kRuns = 600;
  Generator g(ctx, gp, {&d});
  for (int run = 0; run < kRuns; ++run) {
    g.start(0, prompt, 3, 1000 + run);
    g.run();
    ++hist[g.output(0)[0]];
  }
  double chi2 = 0.0;
  int dof = -1;
  for (int32_t id : p1.ids()) {
    const double e = kRuns * p1.prob(id);
    const double o = hist.count(id) ? hist[id] : 0;
    chi2 += (o - e) * (o - e) / e;
    ++dof;
  }
  for (const auto& [id, n] : hist) EXPECT_GT(p1.prob(id), 0.0f) << "token " << id << " emitted " << n;
  // 8 candidates -> 7 degrees of freedom; 24.3 is the 0.999 quantile.
  EXPECT_LT(chi2, 24.3) << "dof " << dof;
}

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
