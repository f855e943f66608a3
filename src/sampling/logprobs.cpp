#include "sampling/logprobs.h"

#include <algorithm>
#include <cmath>

namespace fulgur {

void token_logprobs(const float* logits, int n_vocab, int32_t token, size_t n_top,
                    std::vector<float>& scratch, TokenLogprobs& out, std::span<const uint64_t> allowed) {
  scratch.resize(static_cast<size_t>(n_vocab));
  for (int i = 0; i < n_vocab; ++i) {
    const bool in = allowed.empty() || (allowed[static_cast<size_t>(i) / 64] >> (i % 64) & 1u);
    scratch[static_cast<size_t>(i)] = !in || std::isnan(logits[i]) ? -INFINITY : logits[i];
  }
  float mx = -INFINITY;
  for (int i = 0; i < n_vocab; ++i) mx = std::max(mx, scratch[static_cast<size_t>(i)]);
  double z = 0.0;
  for (int i = 0; i < n_vocab; ++i) z += std::exp(static_cast<double>(scratch[static_cast<size_t>(i)]) - mx);
  const float log_z = mx + static_cast<float>(std::log(z));
  for (int i = 0; i < n_vocab; ++i) scratch[static_cast<size_t>(i)] -= log_z;
  out.token = token;
  out.logprob = scratch[static_cast<size_t>(token)];
  out.top.clear();
  for (int i = 0; i < n_vocab; ++i) {  // keep the n_top best, ties: lower id first
    const float lp = scratch[static_cast<size_t>(i)];
    if (lp == -INFINITY) continue;  // not a candidate (masked out, or a NaN logit)
    if (out.top.size() == n_top && (n_top == 0 || !(lp > out.top.back().second))) continue;
    auto at = std::upper_bound(out.top.begin(), out.top.end(), lp,
                               [](float v, const std::pair<int32_t, float>& e) { return v > e.second; });
    out.top.insert(at, {i, lp});
    if (out.top.size() > n_top) out.top.pop_back();
  }
}

}  // namespace fulgur
