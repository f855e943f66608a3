// The draft probability --spec-p-min is compared with, as llama.cpp computes it for its model
// drafters (draft-simple, and DFlash without a confidence head; reference/llamacpp-speculative.md
// §2.6, §7.3): the draft's sampler is a top-k 10 chain whose final softmax renormalises over
// those 10 candidates, so the measure is the top candidate's softmax probability among the 10
// largest raw logits (temperature 1, whatever the request's sampling settings). It depends only
// on the logits known before the token is drawn, so cutting on it keeps verification lossless.
#pragma once

#include <cstdint>

namespace fulgur {

inline constexpr int kDraftConfidenceTopK = 10;

// max softmax probability over the kDraftConfidenceTopK largest of logits[0..n) (all of them
// when n is smaller); 1 when no logit is finite.
float draft_confidence(const float* logits, int64_t n);

}  // namespace fulgur
