#include "speculative/drafters/ngram.h"

#include <algorithm>

#include "core/error.h"
#include "model/batch.h"

namespace fulgur {

NgramDrafter::NgramDrafter(NgramParams params) : params_(params), history_(kMaxSequences) {
  FULGUR_CHECK(params_.size_n >= 1, "--spec-ngram-size-n ", params_.size_n, " must be >= 1");
  FULGUR_CHECK(params_.min_n >= 1 && params_.min_n <= params_.size_n, "--spec-ngram-min-n ",
               params_.min_n, " must be in [1, --spec-ngram-size-n = ", params_.size_n, "]");
  FULGUR_CHECK(params_.size_m >= 1, "--spec-ngram-size-m ", params_.size_m, " must be >= 1");
}

void NgramDrafter::reset(int seq) { history_.at(static_cast<size_t>(seq)).clear(); }

void NgramDrafter::commit(int seq, std::span<const int32_t> tokens, int32_t pos0,
                          const TargetFeatures&) {
  std::vector<int32_t>& h = history_.at(static_cast<size_t>(seq));
  // Positions are contiguous; a commit at an earlier position replaces what followed it.
  h.resize(std::min(h.size(), static_cast<size_t>(std::max(pos0, 0))));
  h.insert(h.end(), tokens.begin(), tokens.end());
}

void NgramDrafter::draft(const DraftRequest& req, Draft& out) {
  std::vector<int32_t>& h = history_.at(static_cast<size_t>(req.seq));
  // The anchor is committed but not yet decoded: it ends the key. h is trimmed to the anchor's
  // position first so that the lookup always sees exactly the sequence's history.
  h.resize(std::min(h.size(), static_cast<size_t>(std::max(req.anchor_pos, 0))));
  h.push_back(req.anchor);
  const int64_t len = static_cast<int64_t>(h.size());
  const int n_max = std::min(req.n_max, params_.size_m);
  for (int n = std::min<int64_t>(params_.size_n, len - 1); n >= params_.min_n; --n) {
    const int32_t* key = h.data() + (len - n);
    // Most recent earlier occurrence: start positions len-n-1 down to 0. The continuation of a
    // match starting at `s` is h[s + n ...], which exists because s + n <= len - 1.
    for (int64_t s = len - n - 1; s >= 0; --s) {
      if (!std::equal(key, key + n, h.data() + s)) continue;
      // Copy what followed, LZ77-style: once the copy reaches the end of the history it goes on
      // from its own output, so a periodic history proposes further periods.
      const int64_t from = s + n;
      for (int64_t j = 0; j < n_max; ++j) {
        const int64_t idx = from + j;
        out.tokens.push_back(idx < len ? h[static_cast<size_t>(idx)]
                                       : out.tokens[static_cast<size_t>(idx - len)]);
      }
      h.pop_back();
      return;
    }
  }
  h.pop_back();
}

}  // namespace fulgur
