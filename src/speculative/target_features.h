// Gathers what drafters read of a target decode (drafter.h TargetFeatures): the taps one drafter
// named, side by side, for the batch rows of the tokens it is told about. The generator keeps one
// per drafter; tests and benchmarks that feed a drafter by hand use it the same way.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "speculative/drafter.h"

namespace fulgur {

class Context;

class FeatureGather {
 public:
  // taps: a drafter's required_taps(). Throws fulgur::Error unless the target context exports
  // every one of them (Context::set_taps).
  FeatureGather(const Context& target, std::vector<int> taps);

  // The features of rows[i] of the target's last decode, valid until the next gather().
  TargetFeatures gather(std::span<const int64_t> rows);

 private:
  const Context& target_;
  std::vector<int> index_;  // [taps] index into target_.taps() of each wanted tap
  int64_t n_embd_;
  std::vector<float> buf_;  // [rows][taps x n_embd], grown to the largest batch seen
};

}  // namespace fulgur
