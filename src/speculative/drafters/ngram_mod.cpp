#include "speculative/drafters/ngram_mod.h"

#include <algorithm>

#include "core/error.h"
#include "model/batch.h"

namespace fulgur {
namespace {
constexpr int32_t kEmpty = -1;
}  // namespace

void NgramModDrafter::check(const NgramModParams& p) {
  FULGUR_CHECK(p.n_match >= 1 && p.n_match <= 1024, "--spec-ngram-mod-n-match ", p.n_match,
               " must be in [1, 1024]");
  FULGUR_CHECK(p.n_min >= 0 && p.n_min <= 1024, "--spec-ngram-mod-n-min ", p.n_min, " must be in [0, 1024]");
  FULGUR_CHECK(p.n_max >= 1 && p.n_max <= 1024, "--spec-ngram-mod-n-max ", p.n_max, " must be in [1, 1024]");
}

NgramModDrafter::NgramModDrafter(NgramModParams params, size_t pool_slots)
    : params_(params), n_slots_(pool_slots), seqs_(kMaxSequences) {
  check(params_);
  FULGUR_CHECK(n_slots_ >= 1, "ngram-mod: the pool needs at least one slot");
  // Allocated (and touched) here, at setup, as llama.cpp does: not in the first draft's time.
  pool_.assign(n_slots_, kEmpty);
}

size_t NgramModDrafter::slot(const int32_t* g) const {
  // llama.cpp's hash: a 64-bit multiplicative (LCG-style) fold of the tokens.
  uint64_t h = 0;
  for (int i = 0; i < params_.n_match; ++i) h = h * 6364136223846793005ull + static_cast<uint64_t>(static_cast<int64_t>(g[i]));
  return static_cast<size_t>(h % n_slots_);
}

void NgramModDrafter::add(const int32_t* g) {
  int32_t& s = pool_[slot(g)];
  if (s == kEmpty) ++used_;
  s = g[params_.n_match];
}

void NgramModDrafter::clear_pool() {
  std::fill(pool_.begin(), pool_.end(), kEmpty);
  used_ = 0;
  ++resets_;
}

// The shared pool keeps what it learnt (it is a guess table); the sequence begins again (its
// low-acceptance streak carries on, as in llama.cpp's begin()).
void NgramModDrafter::on_reset(int seq) {
  Seq& s = seqs_[static_cast<size_t>(seq)];
  s.begun = false;
  s.added_to = 0;
}

void NgramModDrafter::on_truncate(int seq, int64_t) { on_reset(seq); }

void NgramModDrafter::on_accepted(int seq, int accepted, int drafted, int) {
  Seq& s = seqs_[static_cast<size_t>(seq)];
  if (drafted <= 0) return;
  if (static_cast<double>(accepted) / drafted >= 0.25) {
    s.low_streak = 0;
    return;
  }
  if (++s.low_streak >= 5) {
    clear_pool();
    s.low_streak = 0;
    s.added_to = 0;  // this sequence's history goes back in at its next chunk
  }
}

void NgramModDrafter::propose(int seq, std::vector<int32_t>& h, int32_t anchor, int,
                              std::vector<int32_t>& out) {
  Seq& s = seqs_[static_cast<size_t>(seq)];
  const int64_t n = params_.n_match;
  const int64_t len = static_cast<int64_t>(h.size());
  if (!s.begun) {
    // llama.cpp's begin(): the whole history in, then the occupancy check.
    s.begun = true;
    s.added_to = 0;
    if (len >= n) {
      for (int64_t i = 0; i + n < len; ++i) add(h.data() + i);
      s.added_to = len - n;
      if (static_cast<double>(used_) / static_cast<double>(n_slots_) > 0.25) clear_pool();
    }
  }
  if (len < n) return;
  if (s.added_to + 32 < len) {
    for (int64_t i = s.added_to; i + n < len; ++i) add(h.data() + i);
    s.added_to = len - n;
  }
  // The window: the last n - 1 tokens and the anchor, then each token found.
  window_.assign(h.end() - (n - 1), h.end());
  window_.push_back(anchor);
  int found = 0;
  for (; found < params_.n_max; ++found) {
    const int32_t t = pool_[slot(window_.data() + found)];
    if (t == kEmpty) break;
    window_.push_back(t);
  }
  // An empty slot before n_min tokens drops the draft (a full n_max draft is kept).
  if (found < params_.n_max && found < params_.n_min) return;
  out.insert(out.end(), window_.begin() + n, window_.end());
}

}  // namespace fulgur
