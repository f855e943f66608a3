#include "sampling/params.h"

#include <cmath>

#include "core/error.h"

namespace fulgur {

void validate(const SamplerParams& p) {
  FULGUR_CHECK(!std::isnan(p.temperature), "sampler: temperature is NaN");
  FULGUR_CHECK(p.top_p >= 0.0f && p.top_p <= 1.0f, "sampler: top_p ", p.top_p,
               " is outside [0, 1]");
  FULGUR_CHECK(p.min_p >= 0.0f && p.min_p <= 1.0f, "sampler: min_p ", p.min_p,
               " is outside [0, 1]");
  FULGUR_CHECK(p.repeat_penalty > 0.0f && std::isfinite(p.repeat_penalty),
               "sampler: repeat_penalty ", p.repeat_penalty, " must be finite and > 0");
  FULGUR_CHECK(p.repeat_last_n >= -1, "sampler: repeat_last_n ", p.repeat_last_n,
               " must be >= -1 (-1: whole history, 0: off)");
  FULGUR_CHECK(std::isfinite(p.presence_penalty), "sampler: presence_penalty ",
               p.presence_penalty, " is not finite");
  FULGUR_CHECK(std::isfinite(p.frequency_penalty), "sampler: frequency_penalty ",
               p.frequency_penalty, " is not finite");
}

}  // namespace fulgur
