// Speculative-decoding statistics, per drafter and for a whole generation, with llama.cpp's
// meanings (reference/llamacpp-speculative.md §7.4): drafts, drafted tokens, accepted tokens,
// acceptance rate, mean accepted length and acceptance per position.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fulgur {

struct DrafterStats {
  std::string name;
  int64_t drafts = 0;           // non-empty drafts sent to verification (= verify steps)
  int64_t drafts_accepted = 0;  // drafts with at least one accepted token
  int64_t drafted = 0;          // drafted tokens verified (after truncation)
  int64_t accepted = 0;         // drafted tokens accepted
  std::vector<int64_t> drafted_at, accepted_at;  // [position] tokens drafted / accepted there
  double t_draft = 0.0;         // seconds in draft()
  double t_commit = 0.0;        // seconds in commit() and reset()

  // accepted / drafted (0 when nothing was drafted).
  double acceptance_rate() const;
  // Tokens committed per verify step of this drafter's drafts, the target's own token included:
  // 1 + accepted / drafts (0 when there were no drafts).
  double mean_accepted_length() const;
  // [position] accepted_at / drafted_at: the share of tokens proposed at draft position i that
  // the target kept.
  std::vector<double> acceptance_per_position() const;

  void add_verify(int n_drafted, int n_accepted);
  void merge(const DrafterStats& other);
};

struct GenerationStats {
  int64_t prompt_tokens = 0;
  int64_t generated = 0;    // tokens emitted
  int64_t decodes = 0;      // target decode calls after the prefill (each verifies all sequences)
  int64_t seq_steps = 0;    // per-sequence verify steps, with or without a draft
  double t_prefill = 0.0;   // seconds: target prefill decodes (+ drafters' commit of the prompt)
  double t_draft = 0.0;     // seconds in drafters' draft()
  double t_verify = 0.0;    // seconds: target decode of [anchor, drafts] + verification
  double t_commit = 0.0;    // seconds: KV rollback and drafters' commit()
  std::vector<DrafterStats> drafters;  // one per drafter, in priority order

  // All drafters together.
  DrafterStats total() const;
};

// llama.cpp-style one-line summary of one drafter ("statistics ngram: #gen drafts = ...").
std::string format_drafter_stats(const DrafterStats& s);

}  // namespace fulgur
