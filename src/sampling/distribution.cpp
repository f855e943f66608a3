#include "sampling/distribution.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "core/error.h"
#include "sampling/rng.h"

namespace fulgur {

Distribution::Distribution(int n_vocab) { reset(n_vocab); }

Distribution::Distribution(const Distribution& other) { *this = other; }

Distribution& Distribution::operator=(const Distribution& other) {
  if (this == &other) return *this;
  if (n_vocab() != other.n_vocab()) reset(other.n_vocab());
  clear();
  for (int32_t id : other.ids()) push(id, other.prob(id));
  return *this;
}

void Distribution::reset(int n_vocab) {
  FULGUR_CHECK(n_vocab >= 0, "distribution: n_vocab ", n_vocab, " is negative");
  const auto n = static_cast<size_t>(n_vocab);
  if (dense_.size() != n) {
    // assign() reuses capacity; a shrink followed by growth allocates only once per maximum.
    dense_.assign(n, 0.0f);
    ids_.assign(n, 0);
    n_support_ = 0;
    return;
  }
  clear();
}

void Distribution::clear() {
  for (int32_t id : ids()) dense_[static_cast<size_t>(id)] = 0.0f;
  n_support_ = 0;
}

void Distribution::set_one_hot(int32_t id) {
  assert(id >= 0 && id < n_vocab());
  clear();
  push(id, 1.0f);
}

int32_t Distribution::top() const {
  int32_t best = -1;
  float best_p = -1.0f;
  for (int32_t id : ids()) {
    const float p = dense_[static_cast<size_t>(id)];
    if (p > best_p || (p == best_p && id < best)) {
      best = id;
      best_p = p;
    }
  }
  return best;
}

double Distribution::normalize() {
  double sum = 0.0;
  for (int32_t id : ids()) sum += dense_[static_cast<size_t>(id)];
  if (!(sum > 0.0)) return sum;
  const double inv = 1.0 / sum;
  for (int32_t id : ids()) {
    float& p = dense_[static_cast<size_t>(id)];
    p = static_cast<float>(p * inv);
  }
  return sum;
}

void Distribution::assign_dense(std::span<const float> weights) {
  reset(static_cast<int>(weights.size()));
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] > 0.0f) push(static_cast<int32_t>(i), weights[i]);  // false for NaN
  }
  FULGUR_CHECK(!empty(), "distribution: none of the ", weights.size(), " weights is positive");
  normalize();
}

int32_t sample(const Distribution& d, Rng& rng) {
  const auto ids = d.ids();
  if (ids.empty()) return -1;
  double total = 0.0;
  for (int32_t id : ids) total += d.prob(id);
  const double target = rng.uniform() * total;
  double cum = 0.0;
  for (int32_t id : ids) {
    const float p = d.prob(id);
    cum += p;
    if (target < cum) return id;
  }
  // Only reachable through rounding (target within ulps of total): take the last id with mass.
  for (size_t i = ids.size(); i-- > 0;) {
    if (d.prob(ids[i]) > 0.0f) return ids[i];
  }
  return ids.back();
}

void residual(const Distribution& p, const Distribution& q, Distribution& out) {
  assert(&out != &p && &out != &q);
  out.reset(p.n_vocab());
  for (int32_t id : p.ids()) {
    const float r = p.prob(id) - q.prob(id);
    if (r > 0.0f) out.push(id, r);
  }
  if (out.empty() || !(out.normalize() > 0.0)) out = p;
}

Distribution residual(const Distribution& p, const Distribution& q) {
  Distribution out;
  residual(p, q, out);
  return out;
}

}  // namespace fulgur
