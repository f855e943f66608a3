// How a drafter that runs a language-model head (draft model, MTP) turns one row of its logits
// into a drafted token, the same way for every such drafter: under the target's sampler
// settings, so greedy drafts the token the target would most likely pick and sampled drafting
// hands the verifier the distribution q each token was really drawn from.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "sampling/sampler.h"
#include "speculative/drafter.h"

namespace fulgur {

class DraftSampler {
 public:
  explicit DraftSampler(int n_vocab) : n_vocab_(n_vocab) {}

  // Drafts the token at one position from logits [n_vocab] and appends it to out (with its q
  // when sampling); `history`: what the penalties see (may be empty). Returns false, appending
  // nothing, when req.p_min cuts the draft before this token (draft_confidence(logits) below
  // it, as llama.cpp measures it).
  bool pick(const float* logits, std::span<const int32_t> history, const DraftRequest& req, Draft& out);

  // The sampler for req's settings (rebuilt when they change).
  Sampler& sampler(const DraftRequest& req);

 private:
  int n_vocab_;
  std::unique_ptr<Sampler> sampler_;
};

// Logits over the target's vocabulary from a reduced-vocabulary draft's logits
// [d2t.size()]: each draft id's logit at its target id d2t[i], -inf elsewhere, written into
// full [target vocabulary]. An empty d2t means the same vocabulary: draft_logits is returned.
const float* in_target_ids(std::span<const int32_t> d2t, const float* draft_logits, std::span<float> full);

// Probability of the largest entry of softmax(logits [n]) at temperature 1.
float top_probability(const float* logits, int64_t n);

}  // namespace fulgur
