// DESIGN invariant 5: no allocation in the token loop. Counts global operator new calls (this
// binary replaces it) around steady-state calls of every sampler path and the verifier helpers.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "sampling/distribution.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

void* operator new(size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace fulgur {
namespace {

TEST(NoAlloc, SteadyStateSamplingAndResidual) {
  constexpr int kVocab = 5000;
  Rng rng(11);
  std::vector<float> logits(kVocab);  // [n_vocab]
  for (float& x : logits) x = static_cast<float>(rng.uniform() * 10.0);
  const std::vector<int32_t> history = {1, 2, 3, 2, 4999, 17};

  struct Case { float t; int k; float top_p, min_p, rep; };
  const Case cases[] = {{0.8f, 40, 0.95f, 0.05f, 1.0f}, {0.0f, 40, 0.95f, 0.05f, 1.1f},
                        {1.0f, 0, 0.9f, 0.0f, 1.3f}, {1.0f, 0, 1.0f, 0.1f, 1.0f},
                        {1.0f, 0, 1.0f, 0.0f, 1.0f}};
  for (const Case& c : cases) {
    SamplerParams p;
    p.temperature = c.t;
    p.top_k = c.k;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    p.repeat_penalty = c.rep;
    Sampler s(p, kVocab);
    Distribution q(kVocab), r(kVocab), keep(kVocab);
    const long before = g_allocations.load();
    for (int i = 0; i < 3; ++i) {
      logits[static_cast<size_t>(i)] += 0.5f;  // a different row each time
      const Distribution& d = s.distribution(logits.data(), history);
      keep = d;                 // the verifier stores one distribution per row
      q.set_one_hot(d.top());   // a greedy drafter's q
      residual(keep, q, r);
      (void)sample(r, rng);
      (void)s.sample(logits.data(), history, rng);
    }
    EXPECT_EQ(g_allocations.load(), before) << "T " << c.t << " k " << c.k;
  }
}

}  // namespace
}  // namespace fulgur
