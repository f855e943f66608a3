// Drafting with a separate small model that shares the target's vocabulary (llama.cpp's
// draft-simple): the draft runs its own Context whose KV mirrors each sequence's committed
// history, and proposes up to n_max tokens autoregressively. Each token is drawn from the draft's
// distribution under the target's sampler settings (greedy: its argmax), and that distribution is
// returned as q so the verifier can run exact rejection sampling.
#pragma once

#include <cstdint>
#include <vector>

#include "model/context.h"
#include "speculative/drafter.h"
#include "speculative/drafters/draft_sampling.h"

namespace fulgur {

struct DraftModelParams {
  int n_max = 3;             // most tokens per draft (llama.cpp's --spec-draft-n-max default)
  ContextParams context;     // the draft's own context (n_ctx 0 = like the target's)
};

// Throws fulgur::Error when `draft` cannot draft for `target`: a different vocabulary size or
// different token texts (tokenizer.ggml.tokens), naming the first difference.
void check_same_vocabulary(const Model& target, const Model& draft);

class DraftModelDrafter : public Drafter {
 public:
  // Checks the vocabularies first (check_same_vocabulary) and n_max >= 1.
  DraftModelDrafter(const Model& target, const Model& draft, DraftModelParams params);

  std::string name() const override { return "draft-model"; }
  int max_draft() const override { return params_.n_max; }
  void reset(int seq) override;
  void commit(int seq, std::span<const int32_t> tokens, int32_t pos0,
              const TargetFeatures& features) override;
  void catch_up(std::span<const DraftRequest> requests) override;
  void draft(const DraftRequest& request, Draft& out) override;

  Context& context() { return ctx_; }
  // Times a sequence was decoded again from its start because the draft's memory could not
  // roll back far enough (a recurrent draft whose history changed before its last n_max + 1
  // positions; never in the speculative loop).
  int64_t replays() const { return replays_; }

 private:
  // Rolls sequence seq's memory back to the longest prefix of its history it still matches (a
  // recurrent draft through its snapshots of the last n_max + 1 positions, or, further back, from
  // its empty state), then decodes the history up to anchor_pos but its last token; returns the
  // first position not in the memory.
  size_t sync(int seq, int32_t anchor_pos);

  DraftModelParams params_;
  Context ctx_;
  DraftSampler sampler_;                    // the target's settings
  std::vector<std::vector<int32_t>> history_;  // [kMaxSequences] committed tokens by position
  std::vector<std::vector<int32_t>> in_kv_;    // [kMaxSequences] tokens in ctx_'s KV by position
  std::vector<int32_t> hist_scratch_;       // committed history + drafts, for penalties
  Batch batch_;
  int64_t replays_ = 0;
};

}  // namespace fulgur
