// Log-probabilities as OpenAI's `logprobs` report them: log-softmax of the target's raw logits at
// a position (what the model thinks, before the sampler's transforms), for the emitted token and
// the most likely alternatives.
#pragma once

#include <cstddef>
#include <cstdint>
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
void token_logprobs(const float* logits, int n_vocab, int32_t token, size_t n_top,
                    std::vector<float>& scratch, TokenLogprobs& out);

}  // namespace fulgur
