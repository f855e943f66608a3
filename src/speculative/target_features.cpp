#include "speculative/target_features.h"

#include <algorithm>

#include "core/error.h"
#include "model/context.h"

namespace fulgur {

FeatureGather::FeatureGather(const Context& target, std::vector<int> taps)
    : target_(target), n_embd_(target.model().n_embd()) {
  const std::vector<int>& have = target.taps();
  for (int t : taps) {
    const auto it = std::find(have.begin(), have.end(), t);
    FULGUR_CHECK(it != have.end(), "the target context does not export layer input ", t,
                 " (set_taps must include every tap a drafter requires)");
    index_.push_back(static_cast<int>(it - have.begin()));
  }
}

TargetFeatures FeatureGather::gather(std::span<const int64_t> rows) {
  const int64_t width = static_cast<int64_t>(index_.size()) * n_embd_;
  const size_t need = rows.size() * static_cast<size_t>(width);
  if (buf_.size() < need) buf_.resize(need);
  for (size_t i = 0; i < rows.size(); ++i) {
    float* out = buf_.data() + i * static_cast<size_t>(width);
    for (size_t t = 0; t < index_.size(); ++t) {
      std::copy_n(target_.tap(index_[t], rows[i]), n_embd_, out + t * static_cast<size_t>(n_embd_));
    }
  }
  return {.data = buf_.data(), .rows = static_cast<int64_t>(rows.size()), .width = width};
}

}  // namespace fulgur
