// Drafters without a model: n-gram lookup, the synthetic-acceptance drafter and its rates, and
// the --spec name list.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "model/model_fixture.h"
#include "sampling/draft_confidence.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"
#include "speculative/drafters/draft_model.h"
#include "speculative/drafters/ngram.h"
#include "speculative/drafters/replay.h"
#include "speculative/spec_types.h"

namespace fulgur {
namespace {

std::vector<int32_t> ngram_draft(NgramDrafter& d, const std::vector<int32_t>& history, int n_max) {
  d.reset(0);
  // Everything but the last token is committed; the last one is the anchor.
  d.commit(0, std::span<const int32_t>(history).first(history.size() - 1), 0, TargetFeatures{});
  DraftRequest req;
  req.seq = 0;
  req.anchor = history.back();
  req.anchor_pos = static_cast<int32_t>(history.size()) - 1;
  req.n_max = n_max;
  Draft out;
  d.draft(req, out);
  EXPECT_TRUE(out.q.empty());
  return out.tokens;
}

TEST(Ngram, ProposesWhatFollowedTheMostRecentMatch) {
  NgramDrafter d({.size_n = 3, .min_n = 2, .size_m = 4});
  // Key "1 2 3" occurs at 0 (followed by 4 5 6 7) and at 6 (followed by 9 9 ...): most recent wins.
  EXPECT_EQ(ngram_draft(d, {1, 2, 3, 4, 5, 6, 1, 2, 3, 9, 9, 8, 7, 1, 2, 3}, 8),
            (std::vector<int32_t>{9, 9, 8, 7}));
  // n_max below size_m cuts the proposal.
  EXPECT_EQ(ngram_draft(d, {1, 2, 3, 4, 5, 6, 1, 2, 3}, 2), (std::vector<int32_t>{4, 5}));
}

TEST(Ngram, BacksOffToShorterKeysDownToMinN) {
  NgramDrafter d({.size_n = 4, .min_n = 2, .size_m = 3});
  // "7 2 3" never occurred, "2 3" did (followed by 4 5 6).
  EXPECT_EQ(ngram_draft(d, {1, 2, 3, 4, 5, 6, 7, 2, 3}, 8), (std::vector<int32_t>{4, 5, 6}));
  NgramDrafter strict({.size_n = 3, .min_n = 3, .size_m = 3});
  EXPECT_TRUE(ngram_draft(strict, {1, 2, 3, 4, 5, 6, 7, 2, 3}, 8).empty());
  EXPECT_TRUE(ngram_draft(d, {1, 2, 3, 4, 5}, 8).empty()) << "no repetition, no draft";
  EXPECT_TRUE(ngram_draft(d, {1}, 8).empty());
}

// A periodic history proposes further periods (the copy runs on into its own output).
TEST(Ngram, PeriodicHistoryContinuesThePeriod) {
  NgramDrafter d({.size_n = 2, .min_n = 2, .size_m = 7});
  EXPECT_EQ(ngram_draft(d, {5, 1, 2, 3, 1, 2, 3, 1, 2}, 7), (std::vector<int32_t>{3, 1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(ngram_draft(d, {4, 4, 4}, 5), (std::vector<int32_t>{4, 4, 4, 4, 4}));
}

// Commits at an earlier position replace what followed (the loop never does that, but a
// restarted sequence must not see stale tokens).
TEST(Ngram, CommitAtEarlierPositionTruncates) {
  NgramDrafter d({.size_n = 2, .min_n = 1, .size_m = 2});
  const std::vector<int32_t> a = {1, 2, 3, 1, 2, 3};
  d.reset(0);
  d.commit(0, a, 0, TargetFeatures{});
  const std::vector<int32_t> b = {8, 9};
  d.commit(0, b, 2, TargetFeatures{});  // history is now 1 2 8 9
  DraftRequest req;
  req.anchor = 1;
  req.anchor_pos = 4;
  req.n_max = 2;
  Draft out;
  d.draft(req, out);
  EXPECT_EQ(out.tokens, (std::vector<int32_t>{2, 8}));
}

TEST(Ngram, BadSizesAreErrors) {
  EXPECT_THROW(NgramDrafter({.size_n = 0, .min_n = 1, .size_m = 4}), Error);
  EXPECT_THROW(NgramDrafter({.size_n = 3, .min_n = 4, .size_m = 4}), Error);
  EXPECT_THROW(NgramDrafter({.size_n = 3, .min_n = 1, .size_m = 0}), Error);
}

TEST(Synth, RatesForLengthSumToLengthMinusOne) {
  for (double L : {1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 9.0}) {
    const std::vector<float> r = synth_rates_for_length(L, 8);
    ASSERT_EQ(r.size(), 8u);
    const double sum = std::accumulate(r.begin(), r.end(), 0.0);
    EXPECT_NEAR(sum, L - 1.0, 1e-4) << L;
    for (size_t i = 1; i < r.size(); ++i) EXPECT_LE(r[i], r[i - 1]);
  }
  EXPECT_THROW(synth_rates_for_length(0.5, 4), Error);
  EXPECT_THROW(synth_rates_for_length(5.5, 4), Error);
}

TEST(Synth, ParseRates) {
  EXPECT_EQ(parse_synth_rates("0.9,0.5,0.5,0"), (std::vector<float>{0.9f, 0.5f, 0.5f, 0.0f}));
  EXPECT_THROW(parse_synth_rates("0.5,0.9"), Error);  // increasing
  EXPECT_THROW(parse_synth_rates("1.5"), Error);
  EXPECT_THROW(parse_synth_rates("0.5,x"), Error);
  EXPECT_THROW(parse_synth_rates(""), Error);
}

// Under greedy verification position i survives iff d1..di all equal the reference: the drafter
// must make that happen with probability rates[i].
TEST(Synth, DraftsMatchTheReferenceAtTheGivenRates) {
  const std::vector<float> rates = {0.9f, 0.6f, 0.3f, 0.1f};
  ReplayDrafter d(rates, 100, 42);
  std::vector<int32_t> ref(200);
  for (size_t i = 0; i < ref.size(); ++i) ref[i] = static_cast<int32_t>((i * 37) % 100);
  d.set_reference(0, ref, 10);
  std::vector<int64_t> survived(rates.size(), 0);
  const int n = 20000;
  Draft out;
  for (int t = 0; t < n; ++t) {
    DraftRequest req;
    req.anchor_pos = 10 + (t % 150);  // the token after it is ref[t % 150 + 1]
    req.n_max = 8;
    out.clear();
    d.draft(req, out);
    ASSERT_EQ(out.tokens.size(), rates.size());
    for (size_t i = 0; i < rates.size(); ++i) {
      const int32_t right = ref[static_cast<size_t>(t % 150 + 1 + i)];
      if (out.tokens[i] != right) break;
      ++survived[i];
    }
  }
  for (size_t i = 0; i < rates.size(); ++i) {
    EXPECT_NEAR(static_cast<double>(survived[i]) / n, rates[i], 0.015) << "position " << i;
  }
  // Near the end of the reference, drafts shrink to what is known.
  DraftRequest req;
  req.anchor_pos = 10 + 198;
  req.n_max = 8;
  out.clear();
  d.draft(req, out);
  EXPECT_EQ(out.tokens.size(), 1u);
}

// With a confidence concentration the drafter reports c_i ~ Beta(k r_i, k (1 - r_i)) and keeps
// position i right with probability c_i: the rates are unchanged, the confidences calibrated
// (among the positions reported near c, a share c is right), and a smaller k spreads them more.
TEST(Synth, ConfidencesAreCalibratedAndKeepTheRates) {
  const std::vector<float> rates = {0.8f, 0.4f};
  std::vector<int32_t> ref(200);
  for (size_t i = 0; i < ref.size(); ++i) ref[i] = static_cast<int32_t>((i * 37) % 100);
  double spread[2] = {0, 0};
  for (double kappa : {2.0, 50.0}) {
    ReplayDrafter d(rates, 100, 7, kappa);
    d.set_reference(0, ref, 10);
    const int n = 20000;
    std::vector<int64_t> survived(rates.size(), 0);
    double hi_n = 0, hi_right = 0, lo_n = 0, lo_right = 0, sum2 = 0;
    Draft out;
    for (int t = 0; t < n; ++t) {
      DraftRequest req;
      req.anchor_pos = 10 + (t % 150);
      req.n_max = 8;
      out.clear();
      d.draft(req, out);
      ASSERT_EQ(out.confidence.size(), rates.size());
      const int32_t right0 = ref[static_cast<size_t>(t % 150 + 1)];
      const double c0 = out.confidence[0];
      (c0 > 0.8 ? hi_n : lo_n) += 1;
      (c0 > 0.8 ? hi_right : lo_right) += out.tokens[0] == right0;
      sum2 += (c0 - 0.8) * (c0 - 0.8);
      for (size_t i = 0; i < rates.size(); ++i) {
        if (out.tokens[i] != ref[static_cast<size_t>(t % 150 + 1 + i)]) break;
        ++survived[i];
      }
    }
    for (size_t i = 0; i < rates.size(); ++i) {
      EXPECT_NEAR(static_cast<double>(survived[i]) / n, rates[i], 0.015) << "kappa " << kappa << " position " << i;
    }
    // Calibrated: the confident drafts are right more often than the others.
    EXPECT_GT(hi_right / hi_n, 0.8) << kappa;
    EXPECT_LT(lo_right / lo_n, 0.8) << kappa;
    spread[kappa < 10 ? 0 : 1] = sum2 / n;
  }
  EXPECT_NEAR(spread[0], 0.8 * 0.2 / 3.0, 0.01);   // Beta variance r (1 - r) / (k + 1)
  EXPECT_NEAR(spread[1], 0.8 * 0.2 / 51.0, 0.002);
  EXPECT_THROW(ReplayDrafter(rates, 100, 1, -1.0), Error);
}

TEST(SpecTypes, LlamaCppNamesInLlamaCppPriority) {
  using T = SpecType;
  EXPECT_TRUE(parse_spec_types("").types.empty());
  EXPECT_FALSE(parse_spec_types("").none);
  // llama.cpp tries n-gram methods before model drafters, whatever the list's order.
  EXPECT_EQ(parse_spec_types("draft-simple,ngram-simple").types, (std::vector<T>{T::kNgram, T::kDraftModel}));
  EXPECT_EQ(parse_spec_types("draft-dspark,ngram-mod").types, (std::vector<T>{T::kNgram, T::kDflash}));
  // ... unless asked to keep the list's order.
  EXPECT_EQ(parse_spec_types("draft-simple,ngram-simple", SpecOrder::kListed).types,
            (std::vector<T>{T::kDraftModel, T::kNgram}));
  // Every name of llama.cpp's table that fulgur runs.
  for (const char* n : {"draft-simple", "draft-model"}) EXPECT_EQ(parse_spec_types(n).types, (std::vector<T>{T::kDraftModel})) << n;
  for (const char* n : {"draft-dflash", "draft-dspark", "dflash", "dspark", "dflash2"}) {
    EXPECT_EQ(parse_spec_types(n).types, (std::vector<T>{T::kDflash})) << n;
  }
  for (const char* n : {"draft-mtp", "mtp"}) EXPECT_EQ(parse_spec_types(n).types, (std::vector<T>{T::kMtp})) << n;
  for (const char* n : {"draft-eagle3", "eagle3"}) EXPECT_EQ(parse_spec_types(n).types, (std::vector<T>{T::kEagle3})) << n;
  // llama.cpp's priority: n-gram, draft-simple, draft-eagle3, draft-mtp, draft-dflash / dspark.
  EXPECT_EQ(parse_spec_types("draft-dflash,draft-mtp,ngram-simple,draft-eagle3,draft-simple").types,
            (std::vector<T>{T::kNgram, T::kDraftModel, T::kEagle3, T::kMtp, T::kDflash}));
  for (const char* n : {"ngram-simple", "ngram"}) {
    const SpecTypes t = parse_spec_types(n);
    EXPECT_EQ(t.types, (std::vector<T>{T::kNgram})) << n;
    EXPECT_TRUE(t.notes.empty()) << n;
  }
  // The n-gram variants fulgur has no implementation of run its prompt lookup, saying so.
  for (const char* n : {"ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache"}) {
    const SpecTypes t = parse_spec_types(n);
    EXPECT_EQ(t.types, (std::vector<T>{T::kNgram})) << n;
    ASSERT_EQ(t.notes.size(), 1u) << n;
    EXPECT_NE(t.notes[0].find(std::string("fulgur has no ") + n), std::string::npos) << t.notes[0];
  }
  // Two names for one fulgur drafter: tried once, with a note.
  const SpecTypes merged = parse_spec_types("ngram-simple,ngram-mod,draft-dflash,draft-dspark");
  EXPECT_EQ(merged.types, (std::vector<T>{T::kNgram, T::kDflash}));
  EXPECT_EQ(merged.notes.size(), 3u);
  const SpecTypes mtp = parse_spec_types("mtp,draft-mtp");
  EXPECT_EQ(mtp.types, (std::vector<T>{T::kMtp}));
  EXPECT_EQ(mtp.notes.size(), 1u);
}

TEST(SpecTypes, NoneOverridesTheList) {
  EXPECT_TRUE(parse_spec_types("none").none);
  const SpecTypes t = parse_spec_types("ngram-simple,none,draft-simple");
  EXPECT_TRUE(t.none);
  EXPECT_TRUE(t.types.empty());
}

TEST(SpecTypes, UnknownUnsupportedAndRepeatedNamesAreErrors) {
  auto error_of = [](const std::string& list) -> std::string {
    try {
      parse_spec_types(list);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of("ngram,eagle9").find("unknown speculative method 'eagle9'"), std::string::npos);
  EXPECT_NE(error_of("ngram,ngram").find("listed twice"), std::string::npos);
  EXPECT_NE(error_of(",").find("empty entry"), std::string::npos);
  EXPECT_NE(error_of("ngram,,draft-simple").find("empty entry"), std::string::npos);
  EXPECT_THROW(parse_spec_order("random"), Error);
  EXPECT_EQ(parse_spec_order("listed"), SpecOrder::kListed);
}

}  // namespace
}  // namespace fulgur

namespace fulgur {
namespace {

// The draft model's p_min cut is llama.cpp's: before the first token whose top probability,
// renormalised over the 10 largest logits, is below p_min (not the full softmax).
TEST(DraftModelPMin, CutsOnTheTopTenProbability) {
  const Model m(testing_support::tiny_model());
  const std::vector<int32_t> prompt = {72, 101, 108, 108, 111, 44, 32};
  // The draft's own greedy chain and the confidence of each step, computed independently.
  std::vector<float> top10, full;
  {
    Context ctx(m, {.n_ctx = 64, .n_batch = 64, .n_threads = 1});
    Batch b;
    for (size_t i = 0; i < prompt.size(); ++i) b.add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size());
    ctx.decode(b);
    int64_t row = b.size() - 1;
    for (int i = 0; i < 4; ++i) {
      const float* l = ctx.logits(row);
      const int n = static_cast<int>(m.n_vocab());
      top10.push_back(draft_confidence(l, n));
      const float mx = *std::max_element(l, l + n);
      double z = 0;
      for (int v = 0; v < n; ++v) z += std::exp(static_cast<double>(l[v]) - mx);
      full.push_back(static_cast<float>(1.0 / z));
      const int32_t tok = greedy(l, n);
      b.clear();
      b.add(tok, static_cast<int32_t>(prompt.size()) + i, 0, true);
      ctx.decode(b);
      row = 0;
    }
  }
  DraftModelDrafter d(m, m, {.n_max = 4, .context = {.n_ctx = 64, .n_batch = 64, .n_threads = 1}});
  SamplerParams sp;
  sp.temperature = 0.0f;
  auto cut = [&](float p_min) {
    d.reset(0);
    d.commit(0, std::span<const int32_t>(prompt).first(prompt.size() - 1), 0, TargetFeatures{});
    DraftRequest req;
    req.anchor = prompt.back();
    req.anchor_pos = static_cast<int32_t>(prompt.size()) - 1;
    req.n_max = 4;
    req.p_min = p_min;
    req.sampling = &sp;
    Draft out;
    d.draft(req, out);
    return out.tokens.size();
  };
  // At p_min = top10[k] the full softmax (strictly smaller) would cut at step k; top-10 does not.
  bool separated = false;
  for (size_t k = 0; k < top10.size(); ++k) {
    for (float p : {top10[k], std::nextafter(top10[k], 2.0f)}) {
      size_t expect = 0;
      while (expect < top10.size() && !(top10[expect] < p)) ++expect;
      EXPECT_EQ(cut(p), expect) << "p_min " << p;
    }
    separated = separated || full[k] < top10[k];
  }
  EXPECT_TRUE(separated) << "no step of the test model tells the two measures apart";
}

}  // namespace
}  // namespace fulgur
