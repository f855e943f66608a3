// Log-probabilities as OpenAI's `logprobs` report them: log-softmax of the target's raw logits at
// a position (what the model thinks, before the sampler's transforms), for the emitted token and
// the most likely alternatives. Under a grammar, the softmax is over the tokens it allows: the
// constrained distribution the token was drawn from, whatever drafted it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace fulgur {

struct TokenLogprobs {
  int32_t token = 0;
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top;  // [n_top] (id, logprob), most likely first
};

// out = token's log-probability under log-softmax(logits [n_vocab]) and the n_top most likely
// tokens (ties: the lower id first); NaN logits count as -inf. scratch: [n_vocab] after the call.
// allowed: a bit per token (bit i % 64 of word i / 64), the tokens outside it count as -inf;
// empty: every token.
void token_logprobs(const float* logits, int n_vocab, int32_t token, size_t n_top,
                    std::vector<float>& scratch, TokenLogprobs& out, std::span<const uint64_t> allowed = {});

}  // namespace fulgur
