// Sampling parameters, with llama.cpp's defaults (common/common.h) except the seed, which is
// fixed rather than random so that a run is reproducible unless the caller picks a seed.
#pragma once

#include <cstdint>

namespace fulgur {

struct SamplerParams {
  float temperature = 0.8f;        // <= 0: greedy (all mass on the argmax after penalties)
  int top_k = 40;                  // <= 0: off
  float top_p = 0.95f;             // >= 1: off; in [0, 1]
  float min_p = 0.05f;             // <= 0: off; in [0, 1], relative to the top token's probability
  float repeat_penalty = 1.0f;     // 1: off; > 0
  int repeat_last_n = 64;          // window of the history the penalties look at; -1: all; 0: off
  float presence_penalty = 0.0f;   // 0: off
  float frequency_penalty = 0.0f;  // 0: off
  uint64_t seed = 0;

  bool greedy() const { return !(temperature > 0.0f); }
  bool penalties_active() const {
    return repeat_last_n != 0 &&
           (repeat_penalty != 1.0f || presence_penalty != 0.0f || frequency_penalty != 0.0f);
  }
};

// Throws fulgur::Error naming the field, its value and the accepted range.
void validate(const SamplerParams& params);

}  // namespace fulgur
