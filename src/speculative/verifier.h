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
//
// Under a grammar (set_grammar) p_i is also masked by the tokens the grammar allows after
// d1..di (the matcher advanced by them), exactly the mask plain decoding would use at that point,
// so greedy output stays identical with and without drafts and sampled output has the
// constrained target's distribution. A draft token the grammar rejects has p_i = 0 and is never
// accepted (the generator cuts drafts there before verification anyway).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "grammar/matcher.h"
#include "grammar/token_mask.h"
#include "sampling/distribution.h"
#include "sampling/params.h"
#include "sampling/sampler.h"

namespace fulgur {

class Rng;

struct VerifyResult {
  int n_accepted = 0;  // drafted tokens kept, in [0, k]
  int32_t next = -1;   // the token emitted after them (correction or bonus); -1 only when a
                       // grammar allows no token at all there (the sequence must end)
};

class Verifier {
 public:
  // Sizes every buffer for n_vocab; verify() allocates nothing afterwards.
  Verifier(const SamplerParams& params, int n_vocab);

  const SamplerParams& params() const { return sampler_.params(); }
  // The settings of the sequence verified next (Sampler::set_params).
  void set_params(const SamplerParams& params) { sampler_.set_params(params); }
  // The grammar of the sequence verified next: verify() masks each row with what `matcher`
  // allows and advances it by the kept drafts and the emitted token. nullptr: unconstrained.
  void set_grammar(GrammarMatcher* matcher, const TokenVocab* vocab) {
    matcher_ = matcher;
    vocab_ = vocab;
  }

  // rows: [k + 1] logits pointers ([n_vocab] f32 each) for the batch rows anchor, d1..dk.
  // drafts: d1..dk. q: [k] distributions the drafts were drawn from, or empty (exact match).
  // history: the committed tokens (prompt + generated; penalties read it); on return the kept
  // drafts and the emitted token have been appended to it.
  // cut_q: the distribution of a drafted token d_{k+1} that was cut off the draft because the
  // grammar rejects it (it would have p_k(d_{k+1}) = 0): when all k drafts are accepted the
  // next token is then the residual normalize(max(p_k - cut_q, 0)) of its rejection, not a
  // sample of p_k, as verifying it would have given. nullptr: no such token (or no q for it).
  VerifyResult verify(std::span<const float* const> rows, std::span<const int32_t> drafts,
                      std::span<const Distribution> q, std::vector<int32_t>& history, Rng& rng,
                      const Distribution* cut_q = nullptr);
  // After verify() under a grammar: the tokens row i allowed (bit per token), for the rows that
  // chose an emitted token; empty when unconstrained. Log-probabilities are taken under it.
  std::span<const uint64_t> row_mask(size_t i) const {
    if (matcher_ == nullptr) return {};
    return std::span<const uint64_t>(row_masks_).subspan(i * mask_.size(), mask_.size());
  }

 private:
  Sampler sampler_;
  GrammarMatcher* matcher_ = nullptr;
  const TokenVocab* vocab_ = nullptr;
  TokenMasker masker_;
  std::vector<uint64_t> mask_;  // [ceil(n_vocab / 64)] the row's allowed tokens
  std::vector<uint64_t> row_masks_;  // [rows][mask_.size()] each verified row's mask_
  Distribution residual_;  // [n_vocab] normalize(max(p - q, 0)) of the rejected row
};

}  // namespace fulgur
