// A benchmark-only drafter whose drafts the target accepts with chosen per-position
// probabilities (llama.cpp's --spec-synth-rates / --spec-synth-len), so the speed of the verify
// machinery can be measured at any acceptance on random-weight models, where real drafters are
// meaningless.
//
// How it stays honest: it is given, per sequence, the target's own greedy continuation (a plain
// greedy run of the same prompt, which the benchmark times anyway as its baseline). At each draft
// position i it proposes the reference token with the conditional probability
// rates[i] / rates[i-1] as long as every earlier position was right, and a token that is
// certainly wrong (reference + 1 mod n_vocab) otherwise. Under greedy verification position i is
// then accepted with probability exactly rates[i], and the output is still the target's
// (verification does not care where drafts come from). What it measures: tokens/s of the whole
// loop — target batches of 1 + k rows, verification, KV rollback — at that acceptance, with a
// free drafter (drafting costs nothing here; real drafters add their own time).
//
// With a confidence concentration kappa > 0 it also says how sure it is, like a calibrated
// DSpark head: at position i it draws c_i ~ Beta(kappa r_i, kappa (1 - r_i)) (r_i the
// conditional rate above), reports it, and keeps the position right with probability c_i. The
// rates are unchanged (E c_i = r_i) and the confidences calibrated by construction; kappa sets
// how much they tell (large: c_i ~ r_i, nothing; small: c_i near 0 or 1, nearly everything), to
// be taken from a real head's spread (fulgur calibrate prints it).
#pragma once

#include <cstdint>
#include <vector>

#include "sampling/rng.h"
#include "speculative/drafter.h"

namespace fulgur {

// Per-position acceptance rates that give a mean accepted length L (tokens per verify step,
// the target's included) with n_max drafts: rates[i] = p^(i+1) with p^1 + ... + p^n_max = L - 1
// (llama.cpp's --spec-synth-len). Throws unless 1 <= L <= n_max + 1.
std::vector<float> synth_rates_for_length(double mean_length, int n_max);

// Parses and checks "p1,p2,...": each in [0, 1], non-increasing (unconditional probabilities).
std::vector<float> parse_synth_rates(const std::string& text);

class ReplayDrafter : public Drafter {
 public:
  ReplayDrafter(std::vector<float> rates, int n_vocab, uint64_t seed, double confidence_kappa = 0.0);

  std::string name() const override { return "synth"; }
  int max_draft() const override { return static_cast<int>(rates_.size()); }
  // The target's greedy tokens for `seq`, the first at position pos0 (the prompt's length).
  void set_reference(int seq, std::vector<int32_t> tokens, int32_t pos0);

  void reset(int) override {}
  void commit(int, std::span<const int32_t>, int32_t, const TargetFeatures&) override {}
  void draft(const DraftRequest& request, Draft& out) override;

 private:
  struct Reference {
    std::vector<int32_t> tokens;
    int32_t pos0 = 0;
  };
  std::vector<float> rates_;
  int n_vocab_;
  double kappa_;
  Rng rng_;
  std::vector<Reference> refs_;  // [kMaxSequences]
};

}  // namespace fulgur
