// Drafters whose drafts the target accepts at a controlled rate, so that losslessness tests run
// through accepted drafts, rejections at every draft position and bonus tokens, not only through
// rejections at position 0 (which any drafter with random weights gives):
//  * the target as its own draft model (every greedy draft accepted; q = p when sampling);
//  * tempered_copy(): a draft model whose logits are the target's times alpha, i.e. the target at
//    temperature T / alpha: q close to p but not equal, about half of the drafts accepted;
//  * ControlledDrafter: wraps any drafter and replaces its drafts by the target's own greedy
//    continuation (or keeps them, when they are that already) with a wrong token at a position
//    that cycles 0, 1, ..., k: under greedy verification step s of a sequence accepts exactly
//    min(s mod (k + 1), k) drafts. It records what the inner drafter proposed, so tests can also
//    check the inner drafter's state after steps that accepted several drafts.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "gguf_edit.h"
#include "model/context.h"
#include "sampling/params.h"
#include "speculative/drafter.h"
#include "speculative/stats.h"
#include "speculative/target_features.h"

namespace fulgur::testing_support {

// A copy of the f32 GGUF at `path` whose output head is alpha times the original's (the tied
// embedding becomes an untied output.weight), written beside it.
inline std::string tempered_copy(const std::string& path, float alpha) {
  const GgufReader r(path);
  const bool tied = r.find_tensor("output.weight") == nullptr;
  F32Tensor head = read_f32(r, tied ? "token_embd.weight" : "output.weight");
  for (float& x : head.data) x *= alpha;
  GgufEdit edit;
  edit.tensors["output.weight"] = std::move(head);
  return write_edited_gguf(path, path + ".tempered_" + std::to_string(alpha) + ".gguf", edit);
}

class ControlledDrafter : public Drafter {
 public:
  struct Options {
    bool corrupt = false;        // a wrong token at the cycling position (greedy verification)
    bool greedy_drafts = false;  // the inner drafter drafts its argmax chain at any temperature
    bool drop_q = false;         // no q: the verifier checks the drafts by exact match
    // Confidences that tell the truth: 0.95 for the tokens before the wrong one, 0.02 from it
    // on (what a well-trained DSpark head would say), for the confidence schedule.
    bool confidence = false;
  };
  // What one draft was: the inner drafter's answer and what was sent to verification.
  struct Record {
    int seq = 0;
    int32_t anchor = 0, anchor_pos = 0;
    std::vector<int32_t> inner;            // the inner drafter's tokens
    std::vector<float> inner_confidence;   // and confidences (DSpark)
    std::vector<int32_t> sent;             // the tokens verified
    int corrupt_at = -1;                   // index of the wrong token; -1: none
  };

  ControlledDrafter(Drafter& inner, int n_vocab, Options options)
      : inner_(inner), n_vocab_(n_vocab), options_(options), step_(kMaxSequences, 0),
        reference_(kMaxSequences) {}

  // The target's greedy tokens for `seq`, the first at position pos0: the drafts become these
  // (then options.corrupt applies), whatever the inner drafter proposed.
  void set_reference(int seq, std::vector<int32_t> tokens, int32_t pos0) {
    reference_.at(static_cast<size_t>(seq)) = {std::move(tokens), pos0};
  }

  std::string name() const override { return "controlled-" + inner_.name(); }
  std::vector<int> required_taps() const override { return inner_.required_taps(); }
  int max_draft() const override { return inner_.max_draft(); }
  void reset(int seq) override {
    step_.at(static_cast<size_t>(seq)) = 0;
    inner_.reset(seq);
  }
  void commit(int seq, std::span<const int32_t> tokens, int32_t pos0,
              const TargetFeatures& features) override {
    inner_.commit(seq, tokens, pos0, features);
  }
  void catch_up(std::span<const DraftRequest> requests) override { inner_.catch_up(adjusted(requests)); }
  void draft(const DraftRequest& request, Draft& out) override { draft_many({&request, 1}, {&out, 1}); }
  void draft_many(std::span<const DraftRequest> requests, std::span<Draft> out) override {
    inner_.draft_many(adjusted(requests), out);
    for (size_t i = 0; i < requests.size(); ++i) control(requests[i], out[i]);
  }

  const std::vector<Record>& records() const { return records_; }
  // Per draft position: tokens sent, and tokens a greedy target accepts when the uncorrupted
  // drafts are its own greedy continuation (position i survives iff i < corrupt_at).
  std::vector<int64_t> sent_at() const { return tally(false); }
  std::vector<int64_t> expected_accepted_at() const { return tally(true); }

 private:
  struct Reference {
    std::vector<int32_t> tokens;
    int32_t pos0 = 0;
  };

  std::span<const DraftRequest> adjusted(std::span<const DraftRequest> requests) {
    if (!options_.greedy_drafts) return requests;
    requests_.assign(requests.begin(), requests.end());
    // The target's settings (penalties included) at temperature 0: the argmax chain.
    if (!requests_.empty() && requests_[0].sampling != nullptr) greedy_ = *requests_[0].sampling;
    greedy_.temperature = 0.0f;
    for (DraftRequest& r : requests_) r.sampling = &greedy_;
    return requests_;
  }

  void control(const DraftRequest& req, Draft& d) {
    Record rec{req.seq, req.anchor, req.anchor_pos, d.tokens, d.confidence, {}, -1};
    const Reference& ref = reference_.at(static_cast<size_t>(req.seq));
    if (!ref.tokens.empty()) {
      // Drafts d_1.. are the reference tokens at positions anchor_pos + 1, ...
      const int64_t first = int64_t{req.anchor_pos} + 1 - ref.pos0;
      const int64_t n = std::clamp<int64_t>(static_cast<int64_t>(ref.tokens.size()) - first, 0,
                                            static_cast<int64_t>(d.tokens.size()));
      d.tokens.assign(ref.tokens.begin() + first, ref.tokens.begin() + first + n);
      d.q.clear();
      d.confidence.clear();
    }
    if (options_.drop_q) d.q.clear();
    const int k = static_cast<int>(d.tokens.size());
    if (options_.corrupt && k > 0) {
      const int c = step_.at(static_cast<size_t>(req.seq))++ % (k + 1);
      if (c < k) {
        d.tokens[static_cast<size_t>(c)] = (d.tokens[static_cast<size_t>(c)] + 1) % n_vocab_;
        d.q.clear();  // the corrupted token was not drawn from q
        rec.corrupt_at = c;
      }
    }
    if (options_.confidence) {
      d.confidence.resize(static_cast<size_t>(k));
      for (int i = 0; i < k; ++i) {
        d.confidence[static_cast<size_t>(i)] = rec.corrupt_at >= 0 && i >= rec.corrupt_at ? 0.02f : 0.95f;
      }
    }
    rec.sent = d.tokens;
    records_.push_back(std::move(rec));
  }

  std::vector<int64_t> tally(bool accepted_only) const {
    std::vector<int64_t> at;
    for (const Record& r : records_) {
      if (at.size() < r.sent.size()) at.resize(r.sent.size(), 0);
      for (size_t i = 0; i < r.sent.size(); ++i) {
        at[i] += !accepted_only || r.corrupt_at < 0 || static_cast<int>(i) < r.corrupt_at;
      }
    }
    return at;
  }

  Drafter& inner_;
  int n_vocab_;
  Options options_;
  SamplerParams greedy_;                // the requests' settings at temperature 0
  std::vector<int> step_;               // [kMaxSequences] drafts made for the sequence
  std::vector<Reference> reference_;    // [kMaxSequences]
  std::vector<DraftRequest> requests_;  // scratch: requests with greedy sampling
  std::vector<Record> records_;
};

// Decodes history[0, n) as sequence 0 of `ctx` in one batch (with the taps `d` reads) and
// commits it to `d` as sequence `seq`'s history in one call: a drafter that never drafted.
inline void commit_history(Drafter& d, Context& ctx, int seq, const std::vector<int32_t>& history, int32_t n) {
  ctx.set_taps(d.required_taps());
  Batch b;
  std::vector<int64_t> rows;
  for (int32_t i = 0; i < n; ++i) {
    b.add(history[static_cast<size_t>(i)], i, 0, false);
    rows.push_back(i);
  }
  ctx.decode(b);
  d.reset(seq);
  FeatureGather features(ctx, d.required_taps());
  d.commit(seq, std::span(history.data(), static_cast<size_t>(n)), 0, features.gather(rows));
}

// Each of the first 12 drafts (anchors from position 2) the drafter inside `controlled` made
// equals, token for token, the draft of a fresh drafter (make_fresh()) given the committed
// history (prompt + out of its sequence, decoded by `target` in one batch) at once: what the
// steps left in the drafter's state is exactly the history. sp: the drafts' sampling (greedy).
template <class MakeFresh>
inline void expect_drafts_match_history(const Model& target, const ControlledDrafter& controlled,
                                        const std::vector<std::vector<int32_t>>& prompts,
                                        const std::vector<std::vector<int32_t>>& out, const SamplerParams& sp,
                                        MakeFresh make_fresh, const std::string& what) {
  int checked = 0;
  for (const ControlledDrafter::Record& r : controlled.records()) {
    if (r.anchor_pos < 2 || checked >= 12) continue;
    std::vector<int32_t> history = prompts.at(static_cast<size_t>(r.seq));
    history.insert(history.end(), out.at(static_cast<size_t>(r.seq)).begin(), out.at(static_cast<size_t>(r.seq)).end());
    EXPECT_EQ(history.at(static_cast<size_t>(r.anchor_pos)), r.anchor) << what;
    Context ctx(target, {.n_ctx = 256, .n_batch = 256, .n_threads = 1});
    auto fresh = make_fresh();
    commit_history(*fresh, ctx, 0, history, r.anchor_pos);
    DraftRequest req;
    req.seq = 0;
    req.anchor = r.anchor;
    req.anchor_pos = r.anchor_pos;
    req.n_max = static_cast<int>(r.inner.size());
    req.sampling = &sp;
    Draft d;
    fresh->draft(req, d);
    EXPECT_EQ(d.tokens, r.inner) << what << ", sequence " << r.seq << ", anchor at " << r.anchor_pos;
    ++checked;
  }
  EXPECT_GE(checked, 8) << what;
}

// Share of the drafts at each position that were accepted, of those that were verified at all
// (every draft before them accepted): [position].
inline std::vector<double> conditional_acceptance(const DrafterStats& s) {
  std::vector<double> r;
  for (size_t i = 0; i < s.accepted_at.size(); ++i) {
    const int64_t reached = i == 0 ? s.drafted_at[0] : s.accepted_at[i - 1];
    r.push_back(reached > 0 ? static_cast<double>(s.accepted_at[i]) / static_cast<double>(reached) : 0.0);
  }
  return r;
}

// Every draft position, once reached, was accepted at a rate in [lo, hi].
inline void expect_acceptance_between(const DrafterStats& s, size_t positions, double lo, double hi) {
  const std::vector<double> rate = conditional_acceptance(s);
  ASSERT_EQ(rate.size(), positions);
  std::printf("acceptance per draft position once reached:");
  for (double r : rate) std::printf(" %.3f", r);
  std::printf("\n");
  for (size_t i = 0; i < rate.size(); ++i) {
    EXPECT_GE(rate[i], lo) << "acceptance at draft position " << i;
    EXPECT_LE(rate[i], hi) << "acceptance at draft position " << i;
  }
}

// The acceptance at each draft position within `tol` of what was recorded for this seeded run
// (sampled acceptance with fixed seeds is deterministic: the kernel families give the same
// bits), so a drafter whose q moves, not only one that stops being accepted, is seen.
inline void expect_acceptance_near(const DrafterStats& s, const std::vector<double>& recorded, double tol) {
  const std::vector<double> rate = conditional_acceptance(s);
  ASSERT_EQ(rate.size(), recorded.size());
  for (size_t i = 0; i < rate.size(); ++i) {
    EXPECT_NEAR(rate[i], recorded[i], tol) << "acceptance at draft position " << i;
  }
}

}  // namespace fulgur::testing_support
