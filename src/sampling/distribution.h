// The distribution a sampler really draws from: probabilities over the whole vocabulary, zero
// outside a support (the candidates that survived top-k / top-p / min-p). The speculative
// verifier needs O(1) p(token) lookups for arbitrary ids and the residual max(p - q, 0), so the
// probabilities are kept dense ([n_vocab] f32, zero off the support) next to the list of
// support ids; clearing touches only the old support, so reuse costs O(support), not O(vocab).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace fulgur {

class Rng;

class Distribution {
 public:
  Distribution() = default;
  explicit Distribution(int n_vocab);
  // Copies cost O(support) when both sides have the same n_vocab (the steady state: the
  // verifier copies one distribution per row into buffers it sized at start).
  Distribution(const Distribution& other);
  Distribution& operator=(const Distribution& other);
  Distribution(Distribution&&) noexcept = default;
  Distribution& operator=(Distribution&&) noexcept = default;

  int n_vocab() const { return static_cast<int>(dense_.size()); }
  // Support ids. Order: descending probability (ties: lower id first) when the sampler ran
  // top-k or top-p; id order otherwise (min-p alone, or no truncation); residuals keep the
  // order of their `p`. Sampling walks this order, so it is part of reproducibility.
  std::span<const int32_t> ids() const { return {ids_.data(), static_cast<size_t>(n_support_)}; }
  int size() const { return n_support_; }
  bool empty() const { return n_support_ == 0; }
  // 0 for ids outside the support, negative or >= n_vocab.
  float prob(int32_t id) const {
    return id >= 0 && id < n_vocab() ? dense_[static_cast<size_t>(id)] : 0.0f;
  }
  // [n_vocab] probabilities, zero outside the support.
  std::span<const float> dense() const { return dense_; }
  // The most probable id (lowest id among ties); -1 when empty.
  int32_t top() const;

  // --- building (used by samplers, drafters and tests) ---
  // Resizes to n_vocab (allocates only when it grows) and empties the support.
  void reset(int n_vocab);
  // Empties the support (O(support)).
  void clear();
  // All mass on one id.
  void set_one_hot(int32_t id);
  // Appends an id with an unnormalised weight > 0; call normalize() when done. Ids must be
  // distinct and in [0, n_vocab) (checked in debug builds only: this is the token loop).
  void push(int32_t id, float weight) {
    dense_[static_cast<size_t>(id)] = weight;
    ids_[static_cast<size_t>(n_support_++)] = id;
  }
  // Scales the support to sum to 1 (summed in double). Returns the sum before scaling; when it
  // is not > 0 the support is left as it was.
  double normalize();
  // Builds from dense unnormalised weights [n_vocab] (negative / NaN count as 0); support in id
  // order. Throws fulgur::Error if no weight is > 0 (API boundary: drafters feed this).
  void assign_dense(std::span<const float> weights);

 private:
  std::vector<float> dense_;   // [n_vocab] probabilities, 0 off the support
  std::vector<int32_t> ids_;   // [n_vocab] capacity; first n_support_ entries are the support
  int n_support_ = 0;
};

inline float prob(const Distribution& d, int32_t id) { return d.prob(id); }

// Draws one id: walks ids() accumulating probability until it passes u * total (u from rng,
// total the support's sum, so tiny normalisation error cannot fall off the end). Returns -1
// only for an empty distribution.
int32_t sample(const Distribution& d, Rng& rng);

// The rejection-sampling residual normalize(max(p - q, 0)), over p's support (q may have any
// support and any n_vocab; missing ids count as 0). When the residual has no mass — which
// happens exactly when p <= q everywhere, i.e. p == q — the result is a copy of p: rejection
// is then impossible in exact arithmetic, and sampling p keeps the emitted token distributed as
// the target's (DESIGN §4). `out` may not alias p or q; it is resized to p.n_vocab().
void residual(const Distribution& p, const Distribution& q, Distribution& out);
Distribution residual(const Distribution& p, const Distribution& q);

}  // namespace fulgur
