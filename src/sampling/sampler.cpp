#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"
#include "sampling/rng.h"

namespace fulgur {

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// First chunk of the incremental top-p ordering; grows 4x per round.
constexpr int kTopPFirstChunk = 256;
}  // namespace

Sampler::Sampler(const SamplerParams& params, int n_vocab)
    : params_(params),
      n_vocab_(n_vocab),
      work_(static_cast<size_t>(std::max(n_vocab, 0))),
      order_(static_cast<size_t>(std::max(n_vocab, 0))),
      counts_(static_cast<size_t>(std::max(n_vocab, 0)), 0),
      dist_(std::max(n_vocab, 0)) {
  FULGUR_CHECK(n_vocab > 0, "sampler: n_vocab ", n_vocab, " must be > 0");
  validate(params);
}

void Sampler::set_params(const SamplerParams& params) {
  validate(params);
  params_ = params;
}

void Sampler::apply_penalties(std::span<const int32_t> history) {
  size_t n_last = history.size();
  if (params_.repeat_last_n >= 0) n_last = std::min(n_last, size_t(params_.repeat_last_n));
  const auto window = history.last(n_last);
  for (int32_t id : window) {
    if (id >= 0 && id < n_vocab_) ++counts_[static_cast<size_t>(id)];
  }
  // Second pass: penalise each distinct token once, zeroing its count so duplicates are skipped
  // and counts_ is clean for the next call (no O(n_vocab) reset).
  for (int32_t id : window) {
    if (id < 0 || id >= n_vocab_) continue;
    int32_t& count = counts_[static_cast<size_t>(id)];
    if (count == 0) continue;
    float& logit = work_[static_cast<size_t>(id)];
    if (logit <= 0.0f) {
      logit *= params_.repeat_penalty;
    } else {
      logit /= params_.repeat_penalty;
    }
    logit -= static_cast<float>(count) * params_.frequency_penalty + params_.presence_penalty;
    count = 0;
  }
}

const Distribution& Sampler::distribution(const float* logits, std::span<const int32_t> history,
                                          std::span<const uint64_t> allowed) {
  const int n = n_vocab_;
  float* work = work_.data();  // [n_vocab]
  for (int i = 0; i < n; ++i) work[i] = std::isnan(logits[i]) ? kNegInf : logits[i];
  if (!allowed.empty()) {
    FULGUR_CHECK(allowed.size() * 64 >= static_cast<size_t>(n), "sampler: a token mask of ",
                 allowed.size(), " words for ", n, " tokens");
    for (int i = 0; i < n; ++i) {
      if (!((allowed[static_cast<size_t>(i) >> 6] >> (i & 63)) & 1u)) work[i] = kNegInf;
    }
  }
  if (params_.penalties_active()) apply_penalties(history);

  if (params_.greedy()) {
    dist_.set_one_hot(greedy(work, n));
    return dist_;
  }

  const auto cmp = [this](int32_t a, int32_t b) { return better(a, b); };
  int32_t* order = order_.data();  // [n_vocab] candidate ids
  int n_cand = n;
  bool sorted = false;
  if (params_.top_k > 0 && params_.top_k < n) {
    // Bounded heap scan: one comparison per token against the worst kept one, O(n log k) worst
    // case, versus sorting the whole vocabulary. With `better` as the heap order the root is the
    // worst candidate; ids arrive ascending, so an equal logit never displaces a lower id.
    const int k = params_.top_k;
    std::iota(order, order + k, 0);
    std::make_heap(order, order + k, cmp);
    for (int32_t i = k; i < n; ++i) {
      if (better(i, order[0])) {
        std::pop_heap(order, order + k, cmp);
        order[k - 1] = i;
        std::push_heap(order, order + k, cmp);
      }
    }
    std::sort(order, order + k, cmp);
    n_cand = k;
    sorted = true;
  } else {
    std::iota(order, order + n, 0);
  }

  int32_t best = order[0];
  if (!sorted) {
    for (int j = 1; j < n_cand; ++j) {
      if (better(order[j], best)) best = order[j];
    }
  }
  const float max_logit = work[best];
  if (!std::isfinite(max_logit)) {  // all -inf, or +inf present: no finite softmax exists
    dist_.set_one_hot(best);
    return dist_;
  }

  // top-p normalises over every top-k survivor, so its denominator is taken before min-p
  // shrinks the set. Both filters keep a prefix of the descending order, so applying min-p
  // first and then walking top-p's cumulative sum over what is left gives the same set as
  // llama.cpp's top-p-then-min-p, while sorting only min-p's survivors.
  const bool use_top_p = params_.top_p < 1.0f;
  double z = 0.0;
  if (use_top_p) {
    for (int j = 0; j < n_cand; ++j) z += std::exp(double(work[order[j]]) - max_logit);
  }
  if (params_.min_p > 0.0f) {
    const float threshold = max_logit + std::log(params_.min_p);
    int kept = 0;
    for (int j = 0; j < n_cand; ++j) {
      if (work[order[j]] >= threshold) order[kept++] = order[j];
    }
    n_cand = kept;  // >= 1: the max itself passes
  }
  if (use_top_p) {
    // Without top-k the candidates are unsorted, and sorting a whole vocabulary costs ~20 ms
    // at 152k tokens. Top-p usually stops after a few hundred tokens, so order the candidates
    // in growing chunks (select the next-best chunk, sort only it) until the mass is reached.
    double cum = 0.0;
    int kept = n_cand;
    int done = 0;  // order[0, done) is sorted and walked
    int chunk_end = sorted ? n_cand : std::min(n_cand, kTopPFirstChunk);
    while (done < n_cand) {
      if (!sorted) {
        std::nth_element(order + done, order + chunk_end, order + n_cand, cmp);
        std::sort(order + done, order + chunk_end, cmp);
      }
      for (; done < chunk_end; ++done) {
        cum += std::exp(double(work[order[done]]) - max_logit) / z;
        if (cum >= params_.top_p) break;
      }
      if (done < chunk_end) {
        kept = done + 1;
        break;
      }
      chunk_end = std::min(n_cand, chunk_end * 4);
    }
    n_cand = kept;
  }

  const float inv_t = 1.0f / params_.temperature;
  if (std::isinf(inv_t)) {  // a subnormal temperature: the limit T -> 0 is greedy
    dist_.set_one_hot(best);
    return dist_;
  }
  dist_.clear();
  for (int j = 0; j < n_cand; ++j) {
    const int32_t id = order[j];
    const float w = std::exp((work[id] - max_logit) * inv_t);  // <= 1; the max gives 1
    if (w > 0.0f) dist_.push(id, w);
  }
  dist_.normalize();
  return dist_;
}

int32_t Sampler::sample(const float* logits, std::span<const int32_t> history, Rng& rng,
                        std::span<const uint64_t> allowed) {
  return fulgur::sample(distribution(logits, history, allowed), rng);
}

Distribution compute_distribution(const float* logits, int n_vocab, const SamplerParams& params,
                                  std::span<const int32_t> history) {
  Sampler sampler(params, n_vocab);
  return sampler.distribution(logits, history);
}

int32_t greedy(const float* logits, int n_vocab) {
  int32_t best = 0;
  float best_logit = kNegInf;
  for (int32_t i = 0; i < n_vocab; ++i) {
    if (logits[i] > best_logit) {  // strict: ties keep the lower id; NaN never wins
      best_logit = logits[i];
      best = i;
    }
  }
  return best;
}

}  // namespace fulgur
