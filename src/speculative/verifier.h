// The verifier (DESIGN §4): given the target's logits for the rows [anchor, d1..dk] of one
// sequence, decides how many drafted tokens to keep and which token follows them. Whatever the
// drafter proposed, every emitted token is distributed exactly as plain decoding's token would be:
//
//   greedy    accept d_{i+1} while it equals the argmax of row i; then emit row i's argmax.
//   sampling  with q (the distribution d_{i+1} was drawn from): accept with probability
//             min(1, p_i(d)/q_i(d)); on rejection emit a sample of normalize(max(p_i - q_i, 0))
//             (p_i when that is empty). Without q: sample t ~ p_i and accept iff t == d_{i+1};
//             otherwise t itself is emitted (exact-match verification, also lossless).
//   bonus     when all k drafts are accepted, emit a sample of p_k (the last row).
//
// p_i is what plain decoding would sample from at that point: the same Sampler settings applied
// to row i's logits with the history extended by d1..di (penalties see the drafts exactly as
// they would see the same tokens generated one by one).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/distribution.h"
#include "sampling/params.h"
#include "sampling/sampler.h"

namespace fulgur {

class Rng;

struct VerifyResult {
  int n_accepted = 0;  // drafted tokens kept, in [0, k]
  int32_t next = -1;   // the token emitted after them (correction or bonus)
};

class Verifier {
 public:
  // Sizes every buffer for n_vocab; verify() allocates nothing afterwards.
  Verifier(const SamplerParams& params, int n_vocab);

  const SamplerParams& params() const { return sampler_.params(); }
  // The settings of the sequence verified next (Sampler::set_params).
  void set_params(const SamplerParams& params) { sampler_.set_params(params); }

  // rows: [k + 1] logits pointers ([n_vocab] f32 each) for the batch rows anchor, d1..dk.
  // drafts: d1..dk. q: [k] distributions the drafts were drawn from, or empty (exact match).
  // history: the committed tokens (prompt + generated; penalties read it); on return the kept
  // drafts and the emitted token have been appended to it.
  VerifyResult verify(std::span<const float* const> rows, std::span<const int32_t> drafts,
                      std::span<const Distribution> q, std::vector<int32_t>& history, Rng& rng);

 private:
  Sampler sampler_;
  Distribution residual_;  // [n_vocab] normalize(max(p - q, 0)) of the rejected row
};

}  // namespace fulgur
