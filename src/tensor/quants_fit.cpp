// Scale searches for the quantizers. Not ggml's exact algorithms (which weight the error by
// importance and iterate longer); these minimise the plain squared error over a small grid of
// candidate scales, each refit by least squares, which is what the round-trip tests measure.
#include <cmath>
#include <limits>

#include "tensor/quants_impl.h"

namespace fulgur::detail {
namespace {

// The grid of candidate inverse scales is nmax + kStep * k for k in -kSteps..kSteps: rounding
// boundaries move by a fraction of a level, which is where a plain max/nmax scale loses most.
constexpr int kSteps = 10;
constexpr float kStep = 0.1f;

}  // namespace

int round_clamp(float v, int lo, int hi) {
  if (!(v == v)) return 0;  // NaN
  // nearbyint rounds half to even in the default rounding mode, matching _mm*_cvtps_epi32.
  const float r = std::nearbyint(v);
  if (r <= static_cast<float>(lo)) return lo;
  if (r >= static_cast<float>(hi)) return hi;
  return static_cast<int>(r);
}

// w, or null (unweighted) when the weights give this block no weight at all.
const float* usable_weights(const float* w, int n) {
  if (w == nullptr) return nullptr;
  for (int i = 0; i < n; ++i) {
    if (w[i] > 0.0f) return w;
  }
  return nullptr;
}

float fit_scale_min(const float* x, int n, int nmax, uint8_t* L, float* min, const float* w) {
  w = usable_weights(w, n);
  float lo = 0.0f, hi = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < n; ++i) {
    if (x[i] < lo) lo = x[i];
    if (x[i] > hi) hi = x[i];
  }
  if (!(hi > lo)) {  // constant block (or NaNs): the offset alone represents it
    for (int i = 0; i < n; ++i) L[i] = 0;
    *min = (lo == lo) ? -lo : 0.0f;
    return 0.0f;
  }
  float best_err = std::numeric_limits<float>::infinity();
  float best_a = (hi - lo) / static_cast<float>(nmax), best_b = lo;
  uint8_t trial[256];  // [n] levels of the candidate being scored; n <= 256 (one super-block)
  for (int k = -kSteps; k <= kSteps; ++k) {
    const float iscale = (static_cast<float>(nmax) + kStep * static_cast<float>(k)) / (hi - lo);
    // Sums weighted by w (1 each without weights: then exactly the unweighted sums).
    double sw = 0, sl = 0, sl2 = 0, sx = 0, slx = 0;
    for (int i = 0; i < n; ++i) {
      const int l = round_clamp((x[i] - lo) * iscale, 0, nmax);
      trial[i] = static_cast<uint8_t>(l);
      const double wi = w != nullptr ? w[i] : 1.0;
      sw += wi;
      sl += wi * l;
      sl2 += wi * static_cast<double>(l) * l;
      sx += wi * x[i];
      slx += wi * static_cast<double>(l) * x[i];
    }
    // Least squares for x ~= a*l + b, then enforce b <= 0 (the stored min is unsigned).
    const double det = sw * sl2 - sl * sl;
    if (det <= 0) continue;
    double a = (sw * slx - sl * sx) / det;
    double b = (sl2 * sx - sl * slx) / det;
    if (b > 0) {
      b = 0;
      a = slx / sl2;
    }
    if (a <= 0) continue;
    double err = 0;
    for (int i = 0; i < n; ++i) {
      const double diff = a * trial[i] + b - x[i];
      err += (w != nullptr ? w[i] : 1.0) * diff * diff;
    }
    if (err < best_err) {
      best_err = static_cast<float>(err);
      best_a = static_cast<float>(a);
      best_b = static_cast<float>(b);
      for (int i = 0; i < n; ++i) L[i] = trial[i];
    }
  }
  if (best_err == std::numeric_limits<float>::infinity()) {  // no candidate fit: plain min/max
    for (int i = 0; i < n; ++i)
      L[i] = static_cast<uint8_t>(round_clamp((x[i] - lo) / best_a, 0, nmax));
  }
  *min = -best_b;
  return best_a;
}

float fit_scale_symmetric(const float* x, int n, int nneg, int npos, int8_t* L, const float* w) {
  w = usable_weights(w, n);
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  for (int i = 0; i < n; ++i) L[i] = 0;
  if (amax == 0.0f) return 0.0f;
  // The largest magnitude goes to the negative end (-nneg), which has one more level.
  double best_q = -1;
  float best_scale = 0.0f;
  int8_t trial[256];  // [n] candidate levels
  for (int k = -kSteps; k <= kSteps; ++k) {
    const float iscale = -(static_cast<float>(nneg) + kStep * static_cast<float>(k)) / max;
    double slx = 0, sl2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = round_clamp(x[i] * iscale, -nneg, npos);
      trial[i] = static_cast<int8_t>(l);
      const double wi = w != nullptr ? w[i] : 1.0;
      slx += wi * static_cast<double>(l) * x[i];
      sl2 += wi * static_cast<double>(l) * l;
    }
    if (sl2 <= 0) continue;
    // With the refit scale slx/sl2 the squared error is sum(x^2) - slx^2/sl2: maximise the latter.
    const double q = slx * slx / sl2;
    if (q > best_q) {
      best_q = q;
      best_scale = static_cast<float>(slx / sl2);
      for (int i = 0; i < n; ++i) L[i] = trial[i];
    }
  }
  return best_scale;
}

}  // namespace fulgur::detail
