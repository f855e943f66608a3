#include "speculative/drafters/draft_sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "sampling/draft_confidence.h"
#include "sampling/rng.h"

namespace fulgur {
namespace {

bool same_settings(const SamplerParams& a, const SamplerParams& b) {
  return a.temperature == b.temperature && a.top_k == b.top_k && a.top_p == b.top_p &&
         a.min_p == b.min_p && a.repeat_penalty == b.repeat_penalty &&
         a.repeat_last_n == b.repeat_last_n && a.presence_penalty == b.presence_penalty &&
         a.frequency_penalty == b.frequency_penalty;
}

}  // namespace

float top_probability(const float* logits, int64_t n) {
  float max_logit = -INFINITY;
  for (int64_t i = 0; i < n; ++i) max_logit = std::max(max_logit, logits[i]);
  if (!std::isfinite(max_logit)) return 1.0f;
  double z = 0.0;
  for (int64_t i = 0; i < n; ++i) z += std::exp(static_cast<double>(logits[i]) - max_logit);
  return static_cast<float>(1.0 / z);
}

Sampler& DraftSampler::sampler(const DraftRequest& req) {
  FULGUR_CHECK(req.sampling != nullptr, "drafter: no sampler settings in the request");
  if (!sampler_ || !same_settings(*req.sampling, sampler_->params())) {
    sampler_ = std::make_unique<Sampler>(*req.sampling, n_vocab_);
  }
  return *sampler_;
}

bool DraftSampler::pick(const float* logits, std::span<const int32_t> history, const DraftRequest& req,
                        Draft& out) {
  Sampler& s = sampler(req);
  const bool greedy = s.params().greedy();
  const Distribution& dist = s.distribution(logits, history);
  // llama.cpp's measure (sampling/draft_confidence.h): the top probability renormalised over
  // the 10 largest raw logits, whatever the sampling settings; known before the token is drawn.
  if (req.p_min > 0.0f && draft_confidence(logits, n_vocab_) < req.p_min) return false;
  FULGUR_CHECK(greedy || req.rng != nullptr, "drafter: sampling needs a random generator in the request");
  out.tokens.push_back(greedy ? dist.top() : sample(dist, *req.rng));
  out.add_q(n_vocab_) = dist;
  return true;
}

const float* in_target_ids(std::span<const int32_t> d2t, const float* draft_logits, std::span<float> full) {
  if (d2t.empty()) return draft_logits;
  std::fill(full.begin(), full.end(), -std::numeric_limits<float>::infinity());
  for (size_t i = 0; i < d2t.size(); ++i) full[static_cast<size_t>(d2t[i])] = draft_logits[i];
  return full.data();
}

}  // namespace fulgur
