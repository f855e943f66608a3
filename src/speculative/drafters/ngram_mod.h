// llama.cpp's ngram-mod (common/ngram-mod.*, PR 19164): one pool of hashed n-grams shared by all
// the sequences the drafter serves (in `fulgur serve`, every slot, as llama-server does). The pool
// is a table of 4 Mi token slots; an n-gram (n = n_match) hashes to a slot that holds the token that
// last followed an n-gram with that hash (collisions overwrite; nothing checks the key).
//
// When a sequence begins (the first draft after a reset, or after a commit at an earlier position,
// i.e. a prompt-cache reuse) all the n-grams of its history are added; the pool is emptied then if
// more than a quarter of its slots are used. Later drafts add the new n-grams in chunks, once more
// than 32 tokens wait. A draft chains lookups from the last n tokens (anchor last): each token
// found extends the window; an empty slot ends the draft, and a draft shorter than n_min is
// dropped. Five drafts in a row of a sequence with less than a quarter accepted empty the pool.
#pragma once

#include <cstdint>
#include <vector>

#include "speculative/drafters/ngram_history.h"

namespace fulgur {

struct NgramModParams {
  int n_match = 24;  // n-gram size hashed (--spec-ngram-mod-n-match)
  int n_min = 48;    // shorter drafts are dropped (--spec-ngram-mod-n-min)
  int n_max = 64;    // most tokens drafted (--spec-ngram-mod-n-max)
};

class NgramModDrafter : public NgramHistoryDrafter {
 public:
  static constexpr size_t kPoolSlots = 4 * 1024 * 1024;
  // Throws fulgur::Error naming the option when a size is out of llama.cpp's ranges.
  explicit NgramModDrafter(NgramModParams params, size_t pool_slots = kPoolSlots);
  static void check(const NgramModParams& params);

  std::string name() const override { return "ngram-mod"; }
  int max_draft() const override { return params_.n_max; }

  size_t pool_used() const { return used_; }
  int pool_resets() const { return resets_; }

 protected:
  void propose(int seq, std::vector<int32_t>& history, int32_t anchor, int n_max,
               std::vector<int32_t>& out) override;
  void on_reset(int seq) override;
  void on_truncate(int seq, int64_t length) override;
  void on_accepted(int seq, int accepted, int drafted, int proposed) override;

 private:
  struct Seq {
    bool begun = false;
    int64_t added_to = 0;  // n-grams starting before this position are in the pool
    int low_streak = 0;    // drafts in a row with less than a quarter accepted
  };
  size_t slot(const int32_t* ngram) const;
  void add(const int32_t* ngram_and_next);  // ngram_and_next[n_match] follows the n-gram
  void clear_pool();

  NgramModParams params_;
  size_t n_slots_;
  std::vector<int32_t> pool_;  // [n_slots_] following token, -1: empty
  size_t used_ = 0;
  int resets_ = 0;
  std::vector<Seq> seqs_;      // [kMaxSequences]
  std::vector<int32_t> window_;
};

}  // namespace fulgur
