// Drafters without a model: n-gram lookup, the synthetic-acceptance drafter and its rates, and
// the --spec name list.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <numeric>

#include "core/error.h"
#include "model/model_fixture.h"
#include "sampling/draft_confidence.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"
#include "speculative/drafters/draft_model.h"
#include "speculative/drafters/ngram.h"
#include "speculative/drafters/ngram_cache.h"
#include "speculative/drafters/ngram_map.h"
#include "speculative/drafters/ngram_mod.h"
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

// llama.cpp's n-gram maps and pool keep state across drafts of a sequence: these helpers drive a
// drafter the way the generation loop does (commit, then a draft for the anchor at the next
// position, then the commit of [anchor, accepted drafts...] at the anchor's position).
void commit_tokens(Drafter& d, int seq, const std::vector<int32_t>& tokens, int32_t pos0) {
  d.commit(seq, tokens, pos0, TargetFeatures{});
}

std::vector<int32_t> draft_at(Drafter& d, int seq, int32_t anchor, int32_t anchor_pos, int n_max = 64) {
  DraftRequest req;
  req.seq = seq;
  req.anchor = anchor;
  req.anchor_pos = anchor_pos;
  req.n_max = n_max;
  Draft out;
  d.draft(req, out);
  EXPECT_TRUE(out.q.empty());
  return out.tokens;
}

// Fresh sequence 0 holding `history`, asked for a draft after `anchor`.
std::vector<int32_t> first_draft(Drafter& d, const std::vector<int32_t>& history, int32_t anchor, int n_max = 64) {
  d.reset(0);
  commit_tokens(d, 0, history, 0);
  return draft_at(d, 0, anchor, static_cast<int32_t>(history.size()), n_max);
}

using V = std::vector<int32_t>;

// ngram-map-k: the key (last n tokens, anchor last) is looked up among positions that leave a
// whole m-gram and one more token after it (start <= len - n - m - 1, position 0 never), newest
// first; the m tokens after the match are drafted. Unlike ngram-simple, a recent occurrence too
// close to the end is not used, and nothing drafts before the history holds 2n + m tokens.
TEST(NgramMap, KeyOnlyDraftsTheMGramAfterTheMatch) {
  NgramMapDrafter k({.size_n = 2, .size_m = 3}, true);
  EXPECT_EQ(k.name(), "ngram-map-k");
  EXPECT_EQ(k.max_draft(), 3);
  EXPECT_EQ(first_draft(k, {9, 1, 2, 5, 6, 7, 8, 3, 3, 3, 1}, 2), (V{5, 6, 7}));
  // "1 2" at 7 is too close to the end (7 > 11 - 6): the one at 1 drafts.
  const V h = {9, 1, 2, 5, 6, 7, 8, 1, 2, 4, 1};
  EXPECT_EQ(first_draft(k, h, 2), (V{5, 6, 7}));
  NgramDrafter simple({.size_n = 2, .min_n = 2, .size_m = 3});
  EXPECT_EQ(first_draft(simple, h, 2), (V{4, 1, 2})) << "ngram-simple takes the most recent match";
  EXPECT_EQ(first_draft(k, h, 2, 2), (V{5, 6})) << "cut to n_max";
  EXPECT_TRUE(first_draft(k, {1, 2, 5, 6, 1}, 2).empty()) << "shorter than 2n + m";
  EXPECT_TRUE(first_draft(k, {9, 1, 2, 5, 6, 7, 8, 3, 3, 3, 1}, 4).empty()) << "no match";
  EXPECT_TRUE(first_draft(k, {1, 2, 5, 6, 7, 8, 3, 3, 3, 3, 1}, 2).empty()) << "position 0 never matches";
}

// A key drafts at most as many tokens as were accepted the last time it drafted: one accepted
// makes its next draft one token long; none accepted silences it.
TEST(NgramMap, DraftLengthFollowsTheKeysLastAcceptance) {
  NgramMapDrafter k({.size_n = 2, .size_m = 3}, true);
  EXPECT_EQ(first_draft(k, {9, 1, 2, 5, 6, 7, 8, 1, 2, 4, 1}, 2), (V{5, 6, 7}));
  k.on_verified(0, 3, 1);
  commit_tokens(k, 0, {2, 5}, 11);  // the anchor and one accepted draft
  commit_tokens(k, 0, {9, 1}, 13);
  EXPECT_EQ(draft_at(k, 0, 2, 15), (V{5}));
  k.on_verified(0, 1, 0);
  commit_tokens(k, 0, {2}, 15);  // rejected
  commit_tokens(k, 0, {7, 1}, 16);
  EXPECT_TRUE(draft_at(k, 0, 2, 18).empty());
  // Another key is not affected: "5 6" matches at 3.
  commit_tokens(k, 0, {2, 3, 4, 5}, 18);
  EXPECT_EQ(draft_at(k, 0, 6, 22), (V{7, 8, 1}));
}

// A draft cut short by the loop (n_max, or the schedule verifying fewer) and accepted whole
// leaves the key's length as it was; a draft dropped unverified changes nothing.
TEST(NgramMap, ACutDraftAcceptedWholeKeepsTheLength) {
  NgramMapDrafter k({.size_n = 2, .size_m = 3}, true);
  EXPECT_EQ(first_draft(k, {9, 1, 2, 5, 6, 7, 8, 1, 2, 4, 1}, 2, 2), (V{5, 6}));
  k.on_verified(0, 2, 2);
  commit_tokens(k, 0, {2, 5, 6}, 11);  // both accepted
  commit_tokens(k, 0, {9, 1}, 14);
  EXPECT_EQ(draft_at(k, 0, 2, 16), (V{5, 6, 7}));
  k.on_verified(0, 1, 1);  // the schedule verified one of three, accepted
  commit_tokens(k, 0, {2, 5}, 16);
  commit_tokens(k, 0, {9, 1}, 18);
  EXPECT_EQ(draft_at(k, 0, 2, 20), (V{5, 6, 7}));
  commit_tokens(k, 0, {2}, 20);  // dropped unverified
  commit_tokens(k, 0, {9, 1}, 21);
  EXPECT_EQ(draft_at(k, 0, 2, 23), (V{5, 6, 7}));
  k.on_verified(0, 3, 2);  // two of three accepted
  commit_tokens(k, 0, {2, 5, 6}, 23);
  commit_tokens(k, 0, {9, 1}, 26);
  EXPECT_EQ(draft_at(k, 0, 2, 28), (V{5, 6}));
}

// ngram-map-k4v counts the distinct m-grams seen after the key's occurrences and drafts only when
// the most frequent is at least twice as frequent as all others together.
TEST(NgramMap, K4vDraftsOnlyADominantContinuation) {
  NgramMapDrafter k4v({.size_n = 2, .size_m = 2, .min_hits = 1}, false);
  EXPECT_EQ(k4v.name(), "ngram-map-k4v");
  // "1 2" is followed by 7 7, 8 8, 7 7: 2 against 1, drafts.
  EXPECT_EQ(first_draft(k4v, {0, 1, 2, 7, 7, 1, 2, 8, 8, 1, 2, 7, 7, 5, 5, 5, 1}, 2), (V{7, 7}));
  // 7 7 once, 8 8 once: no dominant continuation, no draft (ngram-map-k drafts 8 8).
  const V tie = {0, 1, 2, 7, 7, 1, 2, 8, 8, 5, 5, 5, 1};
  EXPECT_TRUE(first_draft(k4v, tie, 2).empty());
  NgramMapDrafter k({.size_n = 2, .size_m = 2}, true);
  EXPECT_EQ(first_draft(k, tie, 2), (V{8, 8}));
  // As llama.cpp: the dominant continuation (7 7, twice) allows the draft, but what is copied is
  // the m-gram after the match found (8 8).
  EXPECT_EQ(first_draft(k4v, {0, 1, 2, 7, 7, 1, 2, 7, 7, 1, 2, 8, 8, 5, 5, 5, 1}, 2), (V{8, 8}));
}

TEST(NgramMap, K4vWaitsForMinHits) {
  NgramMapDrafter k4v({.size_n = 2, .size_m = 2, .min_hits = 2}, false);
  EXPECT_TRUE(first_draft(k4v, {0, 1, 2, 7, 7, 5, 5, 5, 5, 1}, 2).empty()) << "first hit";
  commit_tokens(k4v, 0, {2, 9, 1}, 10);
  EXPECT_EQ(draft_at(k4v, 0, 2, 13), (V{7, 7})) << "second hit";
  EXPECT_THROW(NgramMapDrafter({.size_n = 2, .size_m = 2, .min_hits = 0}, false), Error);
  EXPECT_THROW(NgramMapDrafter({.size_n = 0, .size_m = 2}, true), Error);
  EXPECT_THROW(NgramMapDrafter({.size_n = 2, .size_m = 1025}, true), Error);
}

// A commit at an earlier position (a prompt-cache reuse) drops everything the map knew about the
// tokens after it; the sequences are independent.
TEST(NgramMap, RollbackForgetsDroppedTokensAndSequencesAreSeparate) {
  NgramMapDrafter k({.size_n = 2, .size_m = 3}, true);
  EXPECT_EQ(first_draft(k, {9, 1, 2, 5, 6, 7, 8, 1, 2, 4, 1}, 2), (V{5, 6, 7}));
  // Positions 2.. replaced: "1 2" is gone from the history.
  commit_tokens(k, 0, {3, 5, 6, 7, 8, 1, 2, 4, 1}, 2);
  EXPECT_TRUE(draft_at(k, 0, 2, 11).empty());
  // The same history on another sequence drafts as on a fresh one.
  k.reset(1);
  commit_tokens(k, 1, {9, 1, 2, 5, 6, 7, 8, 1, 2, 4, 1}, 0);
  EXPECT_EQ(draft_at(k, 1, 2, 11), (V{5, 6, 7}));
}

// ngram-mod: (n+1)-grams of the history go into a hashed pool; a draft chains lookups from the
// last n tokens (anchor last) until an empty slot or n_max.
TEST(NgramMod, ChainsLookupsThroughThePool) {
  NgramModDrafter mod({.n_match = 2, .n_min = 2, .n_max = 4}, 1 << 20);
  EXPECT_EQ(mod.name(), "ngram-mod");
  EXPECT_EQ(mod.max_draft(), 4);
  EXPECT_EQ(first_draft(mod, {1, 2, 3, 4, 5, 9, 1}, 2), (V{3, 4, 5, 9}));
  NgramModDrafter longer({.n_match = 2, .n_min = 2, .n_max = 6}, 1 << 20);
  // "9 1" never had a successor in the history: the chain stops there.
  EXPECT_EQ(first_draft(longer, {1, 2, 3, 4, 5, 9, 1}, 2), (V{3, 4, 5, 9, 1}));
  NgramModDrafter strict({.n_match = 2, .n_min = 4, .n_max = 6}, 1 << 20);
  EXPECT_TRUE(first_draft(strict, {1, 2, 3, 7, 1}, 2).empty()) << "3 tokens < n_min";
  NgramModDrafter loose({.n_match = 2, .n_min = 2, .n_max = 6}, 1 << 20);
  EXPECT_EQ(first_draft(loose, {1, 2, 3, 7, 1}, 2), (V{3, 7, 1}));
  EXPECT_THROW(NgramModDrafter({.n_match = 0}), Error);
  EXPECT_THROW(NgramModDrafter({.n_match = 2, .n_min = 2, .n_max = 0}), Error);
}

// One pool for all sequences: what one sequence's history taught drafts for another.
TEST(NgramMod, PoolIsSharedAcrossSequences) {
  NgramModDrafter mod({.n_match = 2, .n_min = 1, .n_max = 4}, 1 << 20);
  EXPECT_EQ(first_draft(mod, {1, 2, 3, 4, 5, 9, 1}, 2), (V{3, 4, 5, 9}));
  mod.reset(1);
  commit_tokens(mod, 1, {8, 1}, 0);
  EXPECT_EQ(draft_at(mod, 1, 2, 2), (V{3, 4, 5, 9}));
}

// New tokens join the pool in chunks (once more than 32 wait); five drafts in a row with less
// than a quarter accepted empty the pool.
TEST(NgramMod, LowAcceptanceStreakEmptiesThePool) {
  NgramModDrafter mod({.n_match = 2, .n_min = 2, .n_max = 4}, 1 << 20);
  V h = {1, 2, 1, 2, 1, 2, 1};
  EXPECT_EQ(first_draft(mod, h, 2), (V{1, 2, 1, 2}));
  const size_t used = mod.pool_used();
  EXPECT_GT(used, 0u);
  int32_t pos = static_cast<int32_t>(h.size());
  int32_t anchor = 2;
  for (int i = 0; i < 5; ++i) {
    if (i > 0) {
      EXPECT_FALSE(draft_at(mod, 0, anchor, pos).empty()) << i;
    }
    mod.on_verified(0, 4, 0);
    commit_tokens(mod, 0, {anchor}, pos);  // nothing accepted
    ++pos;
    anchor = anchor == 2 ? 1 : 2;
  }
  EXPECT_EQ(mod.pool_resets(), 1);
  EXPECT_EQ(mod.pool_used(), 0u);
  EXPECT_TRUE(draft_at(mod, 0, anchor, pos).empty()) << "history under the 32-token chunk";
}

// ngram-cache: the context cache counts 1..4-grams of the history; the longest n-gram whose most
// frequent follower has enough samples and share (lax: 2/66% for 1-grams, 2/50% for 2-grams,
// 1/50% for 3- and 4-grams) gives each token, up to 8.
TEST(NgramCache, ContextCacheDraftsTheDominantFollower) {
  NgramCacheDrafter d(NgramCache{}, NgramCache{});
  EXPECT_EQ(d.name(), "ngram-cache");
  EXPECT_EQ(d.max_draft(), 8);
  // "1 2 3" was followed by 4 once (a 3-gram needs one sample); then the 4-grams "1 2 3 4" -> 5,
  // "2 3 4 5" -> 6, ... carry the draft on around the period.
  EXPECT_EQ(first_draft(d, {1, 2, 3, 4, 5, 6, 1, 2}, 3, 8), (V{4, 5, 6, 1, 2, 3, 4, 5}));
  EXPECT_EQ(first_draft(d, {1, 2, 3, 4, 5, 6, 1, 2}, 3, 3), (V{4, 5, 6})) << "cut to n_max";
  EXPECT_TRUE(first_draft(d, {1, 2, 3, 4}, 9).empty()) << "9 never seen";
  // "7 8" is followed by 1 and by 2: 1 of 2 is 50%, which passes the 2-gram threshold; the
  // smaller token wins the tie.
  EXPECT_EQ(first_draft(d, {7, 8, 1, 0, 7, 8, 2, 0, 3, 7}, 8, 1), (V{1}));
  // Three followers of "7 8" (1, 2, 3): 33% fails the 2-gram share, 1-gram "8" too: nothing.
  EXPECT_TRUE(first_draft(d, {7, 8, 1, 0, 7, 8, 2, 0, 7, 8, 3, 0, 4, 7}, 8, 1).empty());
}

// Tokens committed one step at a time are counted after the n-grams before them (llama-lookup's
// update; llama.cpp's speculative driver would count within each step's new tokens only, and
// draft just 4 here).
TEST(NgramCache, GeneratedTokensJoinTheContextCache) {
  NgramCacheDrafter d(NgramCache{}, NgramCache{});
  first_draft(d, {1, 2, 3}, 4);
  const V next = {4, 5, 1, 2, 3};  // each step commits one token and drafts after the next
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(next.size()) - 1; ++i) {
    commit_tokens(d, 0, {next[static_cast<size_t>(i)]}, 3 + i);
    draft_at(d, 0, next[static_cast<size_t>(i) + 1], 4 + i);
  }
  commit_tokens(d, 0, {2}, 6);
  // History 1 2 3 4 5 1 2, anchor 3: "1 2 3" -> 4, then the 4-grams counted step by step.
  EXPECT_EQ(draft_at(d, 0, 3, 7, 8), (V{4, 5, 1, 2, 3, 4, 5, 1}));
}

// The dynamic cache drafts when the context cache has nothing, with the strict thresholds (a
// 2-gram needs 3 samples and a 66% share).
TEST(NgramCache, DynamicCacheUsesStrictThresholds) {
  const auto dynamic = [](int32_t count7, int32_t count9) {
    NgramCache c;
    const NgramCache::Ngram g = NgramCache::make(std::vector<int32_t>{5, 6}.data(), 2);
    c.add_count(g, 7, count7);
    if (count9 > 0) c.add_count(g, 9, count9);
    return c;
  };
  NgramCacheDrafter two(NgramCache{}, dynamic(2, 0));
  EXPECT_TRUE(first_draft(two, {1, 5}, 6).empty()) << "2 samples < 3";
  NgramCacheDrafter three(NgramCache{}, dynamic(3, 0));
  EXPECT_EQ(first_draft(three, {1, 5}, 6), (V{7}));
  NgramCacheDrafter split(NgramCache{}, dynamic(3, 2));
  EXPECT_TRUE(first_draft(split, {1, 5}, 6).empty()) << "60% < 66%";
}

// The static cache (llama.cpp's file) weights the followers and drafts when the context has
// nothing; files round-trip in llama.cpp's format.
TEST(NgramCache, StaticCacheFileAndWeighting) {
  const std::string path = testing::TempDir() + "/fulgur_ngram_static.bin";
  NgramCache st;
  // "5 6" -> 7 three times, -> 9 once (75%, 4 samples: passes the lax 2-gram thresholds).
  st.add_count(NgramCache::make(std::vector<int32_t>{5, 6}.data(), 2), 7, 3);
  st.add_count(NgramCache::make(std::vector<int32_t>{5, 6}.data(), 2), 9, 1);
  st.add_count(NgramCache::make(std::vector<int32_t>{6, 7}.data(), 2), 8, 2);
  st.save(path);
  const NgramCache loaded = NgramCache::load(path);
  ASSERT_EQ(loaded.size(), 2u);
  const NgramCache::Followers* f = loaded.find(NgramCache::make(std::vector<int32_t>{5, 6}.data(), 2));
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(*f, (NgramCache::Followers{{7, 3}, {9, 1}}));
  // The file is llama.cpp's: 4 int32 n-gram tokens (-1 padded), count of followers, pairs.
  {
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(bytes.size(), 2 * (16 + 4) + 3 * 8u);
  }
  NgramCacheDrafter d(NgramCacheParams{.static_path = path, .dynamic_path = ""});
  // Nothing in the context: the static cache drafts 7, then "6 7" -> 8, then "7 8": nothing.
  EXPECT_EQ(first_draft(d, {1, 5}, 6), (V{7, 8}));
  // The context has "5 6" -> 4 once and -> 7 once: alone, the tie goes to 4; the static cache's
  // weight (100 x 3 for 7, 1 for 4) makes it 7.
  const V h = {5, 6, 4, 1, 5, 6, 7, 2, 3, 5};
  EXPECT_EQ(first_draft(d, h, 6, 1), (V{7}));
  NgramCacheDrafter plain(NgramCache{}, NgramCache{});
  EXPECT_EQ(first_draft(plain, h, 6, 1), (V{4}));
  // A cut-short file is an error naming it.
  { std::ofstream(path, std::ios::binary).write("\x01\x00", 2); }
  try {
    NgramCache::load(path);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cut short"), std::string::npos) << e.what();
  }
  EXPECT_THROW(NgramCacheDrafter(NgramCacheParams{.static_path = path + ".missing", .dynamic_path = ""}), Error);
}

TEST(SpecTypes, LlamaCppNamesInLlamaCppPriority) {
  using T = SpecType;
  EXPECT_TRUE(parse_spec_types("").types.empty());
  EXPECT_FALSE(parse_spec_types("").none);
  // llama.cpp tries n-gram methods before model drafters, whatever the list's order.
  EXPECT_EQ(parse_spec_types("draft-simple,ngram-simple").types, (std::vector<T>{T::kNgram, T::kDraftModel}));
  EXPECT_EQ(parse_spec_types("draft-dspark,ngram-mod").types, (std::vector<T>{T::kNgramMod, T::kDflash}));
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
  // llama.cpp's n-gram maps, pool and caches, each its own drafter, in llama.cpp's order.
  EXPECT_EQ(parse_spec_types("ngram-cache,ngram-mod,ngram-map-k4v,ngram-map-k,ngram-simple").types,
            (std::vector<T>{T::kNgram, T::kNgramMapK, T::kNgramMapK4v, T::kNgramMod, T::kNgramCache}));
  for (const char* n : {"ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache"}) {
    EXPECT_TRUE(parse_spec_types(n).notes.empty()) << n;
  }
  // Two names for one fulgur drafter: tried once, with a note.
  const SpecTypes merged = parse_spec_types("ngram-simple,ngram,draft-dflash,draft-dspark");
  EXPECT_EQ(merged.types, (std::vector<T>{T::kNgram, T::kDflash}));
  EXPECT_EQ(merged.notes.size(), 2u);
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
