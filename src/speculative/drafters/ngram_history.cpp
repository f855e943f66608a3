#include "speculative/drafters/ngram_history.h"

#include <algorithm>

#include "model/batch.h"

namespace fulgur {

bool ngram_equal(const int32_t* a, const int32_t* b, int64_t n) { return std::equal(a, a + n, b); }

NgramHistoryDrafter::NgramHistoryDrafter() : seqs_(kMaxSequences) {}

void NgramHistoryDrafter::reset(int seq) {
  Seq& s = seqs_.at(static_cast<size_t>(seq));
  s.tokens.clear();
  s.pending = false;
  on_reset(seq);
}

void NgramHistoryDrafter::truncate(int seq, int64_t length) {
  Seq& s = seqs_[static_cast<size_t>(seq)];
  length = std::max<int64_t>(length, 0);
  if (length >= static_cast<int64_t>(s.tokens.size())) return;
  s.tokens.resize(static_cast<size_t>(length));
  on_truncate(seq, length);
}

void NgramHistoryDrafter::commit(int seq, std::span<const int32_t> tokens, int32_t pos0,
                                 const TargetFeatures&) {
  Seq& s = seqs_.at(static_cast<size_t>(seq));
  s.pending = false;
  // Positions are contiguous; a commit at an earlier position replaces what followed it.
  truncate(seq, pos0);
  s.tokens.insert(s.tokens.end(), tokens.begin(), tokens.end());
}

void NgramHistoryDrafter::draft(const DraftRequest& req, Draft& out) {
  Seq& s = seqs_.at(static_cast<size_t>(req.seq));
  // The anchor is committed but not yet decoded; the history is trimmed to the anchor's position
  // so that the lookup always sees exactly the sequence's tokens before it.
  truncate(req.seq, req.anchor_pos);
  const size_t first = out.tokens.size();
  propose(req.seq, s.tokens, req.anchor, req.n_max, out.tokens);
  s.proposed_len = static_cast<int>(out.tokens.size() - first);
  if (out.tokens.size() > first + static_cast<size_t>(std::max(req.n_max, 0))) {
    out.tokens.resize(first + static_cast<size_t>(std::max(req.n_max, 0)));
  }
  s.pending = out.tokens.size() > first;
}

void NgramHistoryDrafter::on_verified(int seq, int n_verified, int n_accepted) {
  Seq& s = seqs_.at(static_cast<size_t>(seq));
  if (!s.pending) return;
  s.pending = false;
  on_accepted(seq, std::min(n_accepted, n_verified), n_verified, std::max(s.proposed_len, n_verified));
}

}  // namespace fulgur
