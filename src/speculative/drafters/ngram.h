// Prompt-lookup drafting (llama.cpp's ngram-simple, extended to back off to shorter keys): take
// the last n tokens of the sequence (the anchor included) as a key, find its most recent earlier
// occurrence in the sequence's own history, and propose the tokens that followed it. Keys are
// tried from size_n down to min_n tokens; the first (longest) match wins. No distribution is
// given, so the verifier checks the drafts by exact match against the target's own sample.
#pragma once

#include <cstdint>
#include <vector>

#include "speculative/drafters/ngram_history.h"

namespace fulgur {

struct NgramParams {
  int size_n = 12;  // longest key, in tokens (llama.cpp's --spec-ngram-size-n default)
  int min_n = 2;    // shortest key tried (fulgur extension; = size_n gives llama.cpp's behaviour)
  int size_m = 48;  // most tokens proposed (llama.cpp's --spec-ngram-size-m default)
};

class NgramDrafter : public NgramHistoryDrafter {
 public:
  // Throws fulgur::Error naming the option when a size is out of range.
  explicit NgramDrafter(NgramParams params);

  std::string name() const override { return "ngram"; }
  int max_draft() const override { return params_.size_m; }

 protected:
  void propose(int seq, std::vector<int32_t>& history, int32_t anchor, int n_max,
               std::vector<int32_t>& out) override;

 private:
  NgramParams params_;
};

}  // namespace fulgur
