// The DFlash / DSpark / DFlash2 block drafter (DESIGN §4; reference/dspark-dflash-spec.md).
// One object serves every sequence: its KV cache holds, per sequence, the injected context of
// committed positions only. commit() injects the features of newly committed target rows (taps
// at dflash.target_layers); draft() runs one block per sequence and walks the heads:
//  * DFlash: argmax (T = 0) or a sample of the sampler's distribution over the block logits;
//  * DSpark: the same over the Markov-corrected logits, each position conditioned on the token
//    really drafted at the previous one; that distribution is the q handed to the verifier;
//    p_min cuts before the first position whose confidence is below it (a DSpark draft without
//    a confidence head refuses p_min > 0, as llama.cpp does; plain DFlash cuts on the top
//    probability renormalised over the 10 largest logits, llama.cpp's measure);
//  * DFlash2: the candidate selector walk over the top-k of each row.
// The kind is detected from the draft's tensors; `--spec dflash|dspark|dflash2` all land here.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "speculative/drafter.h"

namespace fulgur {

struct DflashInfo;
class Model;
class ThreadPool;

struct DflashOptions {
  int64_t n_ctx = 0;      // draft KV cells; 0 = 4096 (must cover the longest sequence)
  int n_threads = 0;      // 0 = one per physical core
  ThreadPool* shared_pool = nullptr;  // run on this pool (not owned) instead of n_threads' own
  int max_sequences = 8;  // most blocks one draft_many() call may hold
  // --spec-n-max: most drafts per step; 0 = what the block gives (B anchor-first, B - 1 for
  // 1+N). A larger value is clamped to that, with a warning.
  int n_max = 0;
  // Rows of the block run per draft: false = the trained block (B rows, whatever n_max);
  // true = llama.cpp's, just enough for n_max drafts (n_max + 1 for 1+N, n_max anchor-first).
  // The block attends bidirectionally, so the drafts differ (bench/RESULTS.md measures both).
  bool short_block = false;
};

// Refuses p_min > 0 for a DSpark draft without a confidence head, as llama.cpp does (throws
// fulgur::Error beginning with `who`).
void check_dflash_p_min(const DflashInfo& info, float p_min, std::string_view who);

// Loads and validates the draft against the target (throws fulgur::Error naming both sides of a
// mismatch). The returned drafter's name() is "dflash", "dspark" or "dflash2".
std::unique_ptr<Drafter> make_dflash_drafter(const std::string& gguf_path, const Model& target,
                                             const DflashOptions& options = {});

class DflashDrafter : public Drafter {
 public:
  DflashDrafter(const std::string& gguf_path, const Model& target, const DflashOptions& options);
  ~DflashDrafter() override;

  std::string name() const override;
  std::vector<int> required_taps() const override;
  int max_draft() const override;
  void reset(int seq) override;
  void commit(int seq, std::span<const int32_t> tokens, int32_t pos0,
              const TargetFeatures& features) override;
  void draft(const DraftRequest& request, Draft& out) override;
  // Resting: rows committed from then on stay pending, only each sequence's last kRestWindow of
  // them (up to twice that between trims), and are injected when a draft is asked for (the draft's KV then skips the positions in between: a
  // cache-resident target step costs about as much as injecting one row's features).
  void set_resting(bool resting) override;
  static constexpr int64_t kRestWindow = 64;

  // Injects the committed rows that commit() left pending (for every sequence).
  void catch_up(std::span<const DraftRequest> requests) override;
  // The blocks of several sequences in one backbone pass (out.size() == requests.size()).
  void draft_many(std::span<const DraftRequest> requests, std::span<Draft> out) override;

  // Teacher forcing (tests, measurements): runs the block at (anchor, anchor_pos) and, for each
  // of the block's prediction slots, the argmax of the corrected logits (target ids) and the
  // confidence (NaN without a head), with prediction k's previous token = k == 0 ? anchor :
  // next_tokens[k - 1] (needs next_tokens.size() >= max drafts - 1).
  void score_block(int seq, int32_t anchor, int32_t anchor_pos,
                   std::span<const int32_t> next_tokens, std::vector<int32_t>& top1,
                   std::vector<float>& confidence);

  // The draft's own model (`dflash` arch; Model::dflash() holds its block layout and heads).
  const Model& model() const;
  // Drafts one block gives (B anchor-first, B - 1 for 1+N), whatever --spec-n-max says.
  int block_drafts() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fulgur
