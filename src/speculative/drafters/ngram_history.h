// What every n-gram drafter shares (ngram.h, ngram_map.h, ngram_mod.h, ngram_cache.h): each
// sequence's committed tokens by position, kept from commit() alone, so a drafter only ever sees
// the tokens the target accepted (never a rejected draft); a commit at an earlier position drops
// what followed it. The derived drafter gets hooks for a reset, a truncation, and for how many
// tokens of its last draft the target verified and accepted (on_verified()).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "speculative/drafter.h"

namespace fulgur {

// True when the n tokens at a and at b are the same.
bool ngram_equal(const int32_t* a, const int32_t* b, int64_t n);

class NgramHistoryDrafter : public Drafter {
 public:
  NgramHistoryDrafter();

  void reset(int seq) final;
  void on_verified(int seq, int n_verified, int n_accepted) final;
  void commit(int seq, std::span<const int32_t> tokens, int32_t pos0,
              const TargetFeatures& features) final;
  // Trims the history to the anchor's position, asks propose() and cuts its answer to n_max.
  void draft(const DraftRequest& request, Draft& out) final;

 protected:
  // The history before the anchor (positions 0 .. anchor_pos - 1), and the anchor. Append the
  // proposal to `out`; the caller cuts it to n_max. `history` may be changed if it is restored.
  virtual void propose(int seq, std::vector<int32_t>& history, int32_t anchor, int n_max,
                       std::vector<int32_t>& out) = 0;
  virtual void on_reset(int seq) { (void)seq; }
  // The history of `seq` lost its tokens from position `length` on.
  virtual void on_truncate(int seq, int64_t length) {
    (void)seq;
    (void)length;
  }
  // `accepted` of the `drafted` tokens of seq's last draft that were verified were accepted;
  // propose() had proposed `proposed` >= drafted tokens (the loop cut the rest).
  virtual void on_accepted(int seq, int accepted, int drafted, int proposed) {
    (void)seq;
    (void)accepted;
    (void)drafted;
    (void)proposed;
  }

 private:
  struct Seq {
    std::vector<int32_t> tokens;  // committed tokens by position
    bool pending = false;         // a non-empty draft awaits on_verified()
    int proposed_len = 0;         // its length as propose() gave it
  };
  void truncate(int seq, int64_t length);
  std::vector<Seq> seqs_;  // [kMaxSequences]
};

}  // namespace fulgur
