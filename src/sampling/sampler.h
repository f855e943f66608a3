// Logits -> the distribution a token is drawn from. One fixed transform order, llama.cpp's
// default chain (common_sampler: penalties, top-k, top-p, min-p, temperature, dist):
//
//   1. penalties   for each distinct token t in the last `repeat_last_n` history tokens, seen
//                  c times: logit /= repeat_penalty if logit > 0, else logit *= repeat_penalty;
//                  then logit -= c * frequency_penalty + presence_penalty.
//   2. top-k       keep the k largest logits (ties: lower id first).
//   3. top-p       softmax of the survivors at temperature 1; keep the shortest prefix in
//                  descending order whose cumulative probability reaches top_p (>= 1 token).
//   4. min-p       keep tokens whose logit >= max logit + log(min_p), i.e. p >= min_p * p_max at
//                  temperature 1 (the top token always stays).
//   5. temperature divide the survivors' logits by T and softmax them: the final distribution.
//
// As in llama.cpp, top-p and min-p see temperature-1 probabilities, so temperature only reshapes
// what survived. temperature <= 0 is greedy: all mass on the argmax of the penalised logits
// (lowest id among ties), which with penalties off (the default) is greedy(logits).
// NaN logits are treated as -inf; -inf logits never survive unless every logit is -inf.
//
// A token mask (constrained generation: grammar/token_mask.h) sets the logits of the tokens it
// does not allow to -inf before step 1, so every transform and greedy's argmax see only the
// allowed tokens.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/distribution.h"
#include "sampling/params.h"

namespace fulgur {

class Rng;

class Sampler {
 public:
  // Validates params (throws fulgur::Error naming the field) and sizes every buffer for
  // n_vocab: distribution() never allocates afterwards.
  Sampler(const SamplerParams& params, int n_vocab);

  const SamplerParams& params() const { return params_; }
  int n_vocab() const { return n_vocab_; }
  // Switches to other settings (validated; no allocation): one sampler serves sequences that
  // each have their own settings.
  void set_params(const SamplerParams& params);

  // logits: [n_vocab] f32. history: the tokens generated so far (prompt included if the caller
  // wants the prompt penalised, as llama.cpp does); ids outside [0, n_vocab) are ignored.
  // allowed: empty (no constraint) or [ceil(n_vocab / 64)] words, bit i of word w set when token
  // 64 w + i may be drawn; it must allow at least one token.
  // The returned reference stays valid until the next call.
  const Distribution& distribution(const float* logits, std::span<const int32_t> history = {},
                                   std::span<const uint64_t> allowed = {});
  // distribution() then sample(): always consumes exactly one uniform from rng.
  int32_t sample(const float* logits, std::span<const int32_t> history, Rng& rng,
                 std::span<const uint64_t> allowed = {});

 private:
  void apply_penalties(std::span<const int32_t> history);
  bool better(int32_t a, int32_t b) const {
    const float la = work_[static_cast<size_t>(a)];
    const float lb = work_[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  }

  SamplerParams params_;
  int n_vocab_;
  std::vector<float> work_;     // [n_vocab] logits after NaN cleanup and penalties
  std::vector<int32_t> order_;  // [n_vocab] candidate ids; first n entries are live
  std::vector<int32_t> counts_; // [n_vocab] history counts; all zero between calls
  Distribution dist_;           // [n_vocab] the result
};

// One-off convenience (allocates a Sampler): the distribution for logits [n_vocab].
Distribution compute_distribution(const float* logits, int n_vocab, const SamplerParams& params,
                                  std::span<const int32_t> history = {});

// Argmax of logits [n_vocab]; ties and NaNs: the lowest id with the largest non-NaN value
// (0 when there is none).
int32_t greedy(const float* logits, int n_vocab);
inline int32_t greedy(std::span<const float> logits) {
  return greedy(logits.data(), static_cast<int>(logits.size()));
}

}  // namespace fulgur
