// Helpers shared by the ops tests: the ISAs this CPU runs (saying which it cannot), a guard that restores the active
// ISA, seeded random data and a tolerance check that names the failing element.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "core/cpu.h"
#include "isa_coverage.h"
#include "kernels/dispatch.h"

namespace fulgur::kernels::testing {

// The kernel families this CPU runs; one it cannot is logged once, and the IsaCoverage.* tests
// (test_elementwise.cpp) are skipped for it.
inline std::vector<Isa> runnable_isas() {
  return fulgur::testing_support::runnable({Isa::kRef, Isa::kAvx2, Isa::kAvx512}, "ops kernels of that ISA");
}

class IsaGuard {
 public:
  explicit IsaGuard(Isa isa) : saved_(active_isa()) { set_active_isa(isa); }
  ~IsaGuard() { set_active_isa(saved_); }
  IsaGuard(const IsaGuard&) = delete;
  IsaGuard& operator=(const IsaGuard&) = delete;

 private:
  Isa saved_;
};

inline std::vector<float> random_floats(std::mt19937& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// |got − want| <= rel·|want| + abs for every element; reports the first few failures.
inline void expect_close(const float* got, const float* want, size_t n, double rel, double abs,
                         const std::string& what) {
  int reported = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - want[i]);
    const bool ok = got[i] == want[i] || d <= rel * std::fabs(static_cast<double>(want[i])) + abs ||
                    (std::isnan(got[i]) && std::isnan(want[i]));
    if (!ok && reported++ < 5) {
      ADD_FAILURE() << what << ": element " << i << " got " << got[i] << " want " << want[i]
                    << " (|d| = " << d << ")";
    }
  }
}

// |got − want| <= rel·(|want| + rms(want)) for every element: for recurrent states and
// outputs, whose small entries come from cancellation and carry the error of the large ones.
inline void expect_close_rms(const float* got, const float* want, size_t n, double rel,
                             const std::string& what) {
  double ss = 0.0;
  for (size_t i = 0; i < n; ++i) ss += static_cast<double>(want[i]) * want[i];
  const double rms = n > 0 ? std::sqrt(ss / static_cast<double>(n)) : 0.0;
  expect_close(got, want, n, rel, rel * rms, what);
}

// n snapshot planes of `size` floats in buf, pointers returned. Plane 0 starts `misalign` floats
// past a 64-byte boundary (0: every plane aligned when size is a multiple of 16, as the SIMD
// kernels' non-temporal path wants). Filled with -1 so a plane never written shows.
inline std::vector<float*> snapshot_planes(std::vector<float>& buf, int64_t n, int64_t size,
                                           int64_t misalign = 0) {
  buf.assign(static_cast<size_t>(n * size + 16 + misalign), -1.0f);
  const auto addr = reinterpret_cast<uintptr_t>(buf.data());
  float* base = buf.data() + (64 - addr % 64) % 64 / sizeof(float) + misalign;
  std::vector<float*> p(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) p[t] = base + t * size;
  return p;
}

inline void expect_bitwise(const float* got, const float* want, size_t n, const std::string& what) {
  int reported = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!(got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i]))) && reported++ < 5) {
      ADD_FAILURE() << what << ": element " << i << " got " << got[i] << " want " << want[i];
    }
  }
}

// The determinism contract of a per-token recurrent kernel (kernels/recurrent.h).
// call(t0, n, state, out, snap, batch) runs tokens [t0, t0 + n) on `state`, writing their rows of
// `out` (the buffer of all n tokens' outputs); batch says whether it is the one-call run (which
// should use a pool, the one-token calls not). One call over the n tokens, keeping snapshots
// except at `unwanted` rows, must give bitwise the outputs and state of n one-token calls, and
// snapshot t the state those leave after token t.
template <class Call>
void expect_per_token_contract(Call&& call, int64_t n, const std::vector<float>& state0,
                               size_t out_size, int64_t misalign,
                               std::initializer_list<int64_t> unwanted, const std::string& what) {
  std::vector<float> out_all(out_size, 0), out_one(out_size, 0), st_all = state0, st_one = state0;
  std::vector<float> buf;
  const auto plane = static_cast<int64_t>(state0.size());
  auto snap = snapshot_planes(buf, n, plane, misalign);
  for (int64_t t : unwanted) snap[t] = nullptr;
  call(0, n, st_all.data(), out_all.data(), snap.data(), true);
  for (int64_t t = 0; t < n; ++t) {
    call(t, 1, st_one.data(), out_one.data(), nullptr, false);
    if (snap[t] != nullptr)
      expect_bitwise(snap[t], st_one.data(), state0.size(), what + " snapshot " + std::to_string(t));
  }
  expect_bitwise(out_all.data(), out_one.data(), out_size, what + " out");
  expect_bitwise(st_all.data(), st_one.data(), state0.size(), what + " state");
}

}  // namespace fulgur::kernels::testing
