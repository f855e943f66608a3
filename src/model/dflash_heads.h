// The per-position heads that run after the block backbone (reference/dspark-dflash-spec.md
// §2.2, §3.2-3.4), walked left to right over the prediction slots of one block:
//  * DSpark Markov heads, biasing the base logits U_k with information about the token really
//    drafted at the previous position (x_0 = anchor):
//      vanilla  β = W2 · W1[x]
//      gated    β = W2 · (σ(G [h ; W1[x]] + b) ⊙ W1[x])
//      rnn      [γg ; γc ; γo] = J [s ; W1[x] ; h] + b,  s ← σ(γg) ⊙ s + (1 − σ(γg)) ⊙ tanh(γc),
//               β = W2 · tanh(γo), with s = 0 at the start of every block;
//  * the confidence head c = σ(w · [h ; W1[x]] + b) (or w · h), known before x_k is drawn;
//  * the DFlash2 candidate selector S(a, b) = U(b) + <A[a] ⊙ (W_h h), Bc[b]> over the top-k of U.
// h is always the final-normed backbone row of the slot. All buffers are sized at construction.
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "model/model.h"

namespace fulgur {

struct DflashHeadWeights;
struct DflashInfo;

class DflashHeads {
 public:
  // model: a `dflash` model (Model::dflash() non-null).
  DflashHeads(const Model& model, ThreadPool& pool);

  // Starts a block (clears the rnn state).
  void begin_block();
  // Confidence of the slot with hidden h whose previous token is prev; the model must have a
  // confidence head. Does not advance any state.
  float confidence(const float* h, int32_t prev);
  // Adds the Markov bias for (h, prev) to logits [V_d] in place and advances the rnn state.
  // No-op without a Markov head.
  void add_markov_bias(const float* h, int32_t prev, float* logits);
  // DFlash2: candidates (top-k ids of logits [V], ties to the lower id) and their selector
  // scores given predecessor prev. ids, scores: [k].
  void select(const float* h, const float* logits, int32_t prev, int32_t* ids, float* scores);

 private:
  void markov_row(int32_t prev);  // m_ = W1[prev]

  const DflashInfo& hp_;
  const DflashHeadWeights& w_;
  int64_t n_embd_;
  ThreadPool& pool_;
  std::vector<float> m_;      // [r] W1[prev]
  std::vector<float> z_;      // [E + 2r] concatenated head inputs
  std::vector<float> act_;    // [3r] gate / joint pre-activations
  std::vector<float> state_;  // [r] rnn state
  std::vector<float> beta_;   // [V_d] Markov bias
  std::vector<float> gate_;   // [R] selector W_h h
  std::vector<float> pred_;   // [R] selector A[prev]
  std::vector<float> succ_;   // [k][R] selector Bc rows of the candidates
  std::vector<int32_t> order_;  // [V] candidate sort scratch
};

}  // namespace fulgur
