#include "speculative/drafters/ngram_history.h"

#include <algorithm>

#include "model/batch.h"

namespace fulgur {

bool ngram_equal(const int32_t* a, const int32_t* b, int64_t n) { return std::equal(a, a + n, b); }

NgramHistoryDrafter::NgramHistoryDrafter() : seqs_(kMaxSequences) {}

void NgramHistoryDrafter::reset(int seq) {
  Seq& s = seqs_.at(static_cast<size_t>(seq));
  s.tokens.clear();
  s.draft_anchor_pos = -1;
  s.draft_len = 0;
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
  // The commit after a verify step holds the anchor and the accepted drafts, at the anchor's
  // position: that is how many of the last draft the target took.
  if (s.draft_anchor_pos >= 0 && pos0 == s.draft_anchor_pos && !tokens.empty()) {
    const int accepted = std::min(static_cast<int>(tokens.size()) - 1, s.draft_len);
    on_accepted(seq, accepted, s.draft_len, s.proposed_len);
  }
  s.draft_anchor_pos = -1;
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
  const int n = static_cast<int>(out.tokens.size() - first);
  s.draft_anchor_pos = n > 0 ? req.anchor_pos : -1;
  s.draft_len = n;
}

}  // namespace fulgur
