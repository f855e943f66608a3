// Drafters without a model: n-gram lookup, the synthetic-acceptance drafter and its rates, and
// the --spec name list.
#include <gtest/gtest.h>

#include <numeric>

#include "core/error.h"
#include "model/model_fixture.h"
#include "sampling/rng.h"
#include "spec/drafters/ngram.h"
#include "spec/drafters/synth.h"
#include "spec/spec_types.h"

namespace fulgur {
namespace {

// The n-gram drafter never reads the target, but commit() takes one: a tiny model's context.
const Context& no_context() {
  static const Model model(testing_support::tiny_model());
  static const Context ctx(model, {.n_ctx = 16, .n_batch = 4, .n_threads = 1});
  return ctx;
}

std::vector<int32_t> ngram_draft(NgramDrafter& d, const std::vector<int32_t>& history, int n_max) {
  d.reset(0);
  // Everything but the last token is committed; the last one is the anchor.
  d.commit(0, std::span<const int32_t>(history).first(history.size() - 1), 0, no_context(), {});
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
  d.commit(0, a, 0, no_context(), {});
  const std::vector<int32_t> b = {8, 9};
  d.commit(0, b, 2, no_context(), {});  // history is now 1 2 8 9
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
  SynthDrafter d(rates, 100, 42);
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

TEST(SpecTypes, ParsesNamesAndAliasesInOrder) {
  EXPECT_TRUE(parse_spec_types("").empty());
  EXPECT_TRUE(parse_spec_types("none").empty());
  EXPECT_EQ(parse_spec_types("ngram,draft-model"),
            (std::vector<SpecType>{SpecType::kNgram, SpecType::kDraftModel}));
  EXPECT_EQ(parse_spec_types("draft-simple,ngram-simple,draft-dflash"),
            (std::vector<SpecType>{SpecType::kDraftModel, SpecType::kNgram, SpecType::kDflash}));
  try {
    parse_spec_types("ngram,eagle9");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown speculative method 'eagle9'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_spec_types("ngram,ngram"), Error);
  EXPECT_THROW(parse_spec_types(","), Error);
}

}  // namespace
}  // namespace fulgur
