#include "speculative/drafters/ngram.h"

#include <algorithm>

#include "core/error.h"

namespace fulgur {

NgramDrafter::NgramDrafter(NgramParams params) : params_(params) {
  FULGUR_CHECK(params_.size_n >= 1, "--spec-ngram-size-n ", params_.size_n, " must be >= 1");
  FULGUR_CHECK(params_.min_n >= 1 && params_.min_n <= params_.size_n, "--spec-ngram-min-n ",
               params_.min_n, " must be in [1, --spec-ngram-size-n = ", params_.size_n, "]");
  FULGUR_CHECK(params_.size_m >= 1, "--spec-ngram-size-m ", params_.size_m, " must be >= 1");
}

void NgramDrafter::propose(int, std::vector<int32_t>& h, int32_t anchor, int n_max_req,
                           std::vector<int32_t>& out) {
  // The anchor ends the key: it goes on the history for the lookup and comes off after.
  h.push_back(anchor);
  const int64_t len = static_cast<int64_t>(h.size());
  const int n_max = std::min(n_max_req, params_.size_m);
  const size_t first = out.size();
  for (int n = std::min<int64_t>(params_.size_n, len - 1); n >= params_.min_n; --n) {
    const int32_t* key = h.data() + (len - n);
    // Most recent earlier occurrence: start positions len-n-1 down to 0. The continuation of a
    // match starting at `s` is h[s + n ...], which exists because s + n <= len - 1.
    for (int64_t s = len - n - 1; s >= 0; --s) {
      if (!ngram_equal(key, h.data() + s, n)) continue;
      // Copy what followed, LZ77-style: once the copy reaches the end of the history it goes on
      // from its own output, so a periodic history proposes further periods.
      const int64_t from = s + n;
      for (int64_t j = 0; j < n_max; ++j) {
        const int64_t idx = from + j;
        out.push_back(idx < len ? h[static_cast<size_t>(idx)]
                                : out[first + static_cast<size_t>(idx - len)]);
      }
      h.pop_back();
      return;
    }
  }
  h.pop_back();
}

}  // namespace fulgur
