#include "speculative/verifier.h"

#include <algorithm>

#include "core/error.h"
#include "sampling/rng.h"

namespace fulgur {

Verifier::Verifier(const SamplerParams& params, int n_vocab)
    : sampler_(params, n_vocab), residual_(n_vocab) {}

VerifyResult Verifier::verify(std::span<const float* const> rows, std::span<const int32_t> drafts,
                              std::span<const Distribution> q, std::vector<int32_t>& history,
                              Rng& rng, const Distribution* cut_q) {
  const size_t k = drafts.size();
  FULGUR_CHECK(rows.size() == k + 1, "verifier: ", rows.size(), " logits rows for ", k,
               " drafted tokens (expected ", k + 1, ")");
  FULGUR_CHECK(q.empty() || q.size() == k, "verifier: ", q.size(), " draft distributions for ", k,
               " drafted tokens (expected ", k, " or none)");
  const bool greedy = sampler_.params().greedy();
  VerifyResult r;
  for (size_t i = 0; i <= k; ++i) {
    std::span<const uint64_t> allowed;
    if (matcher_ != nullptr) {
      if (masker_.fill(*matcher_, *vocab_, mask_) == 0) return r;  // nothing may follow
      allowed = mask_;
      row_masks_.resize((i + 1) * mask_.size());
      std::copy(mask_.begin(), mask_.end(), row_masks_.begin() + static_cast<std::ptrdiff_t>(i * mask_.size()));
    }
    const Distribution& p = sampler_.distribution(rows[i], history, allowed);
    if (i == k) {  // every draft accepted: the bonus token from the last row
      if (greedy) {
        r.next = p.top();
      } else if (cut_q != nullptr) {
        residual(p, *cut_q, residual_);
        r.next = sample(residual_, rng);
      } else {
        r.next = sample(p, rng);
      }
      break;
    }
    const int32_t d = drafts[i];
    if (greedy) {
      // p is one-hot on the (penalised) argmax; a greedy target accepts exactly that token and
      // consumes no randomness, so the output is the plain greedy output token for token.
      const int32_t t = p.top();
      if (t != d) {
        r.next = t;
        break;
      }
    } else if (q.empty()) {
      // Exact match: the target's own sample decides; a mismatch emits that sample.
      const int32_t t = sample(p, rng);
      if (t != d) {
        r.next = t;
        break;
      }
    } else {
      // Accept with probability min(1, p(d)/q(d)); u * q < p avoids dividing by a tiny q.
      const double pd = p.prob(d), qd = q[i].prob(d);
      if (!(rng.uniform() * qd < pd)) {
        residual(p, q[i], residual_);
        r.next = sample(residual_, rng);
        break;
      }
    }
    history.push_back(d);
    if (matcher_ != nullptr) vocab_->accept(*matcher_, d);  // allowed: p(d) > 0 accepted it
    ++r.n_accepted;
  }
  history.push_back(r.next);
  if (matcher_ != nullptr) vocab_->accept(*matcher_, r.next);
  return r;
}

}  // namespace fulgur
