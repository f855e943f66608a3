#include "core/thread_pool.h"

#include <immintrin.h>
#include <sched.h>

#include "core/cpu.h"

namespace fulgur {
namespace {
// Workers spin this many rounds before sleeping on the generation counter: token-loop ops
// follow each other within microseconds, and a futex wake-up costs more than that.
constexpr int kSpinRounds = 4000;
// Every this many spin rounds a waiting thread offers its core (sched_yield): when the pool
// has more threads than free cores (another process busy on one), pure spinning would hold the
// core the awaited thread needs for the whole spin; yielding to nobody costs well under a µs.
constexpr int kYieldEvery = 256;
}  // namespace

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(n_threads > 0 ? n_threads : physical_core_count()) {
  workers_.reserve(n_threads_ - 1);
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::run_erased(Trampoline fn, void* ctx) {
  if (n_threads_ == 1) {
    fn(ctx, 0, 1);
    return;
  }
  job_fn_ = fn;
  job_ctx_ = ctx;
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  fn(ctx, 0, n_threads_);
  // Spin briefly (the others usually finish within microseconds), then sleep: with more
  // threads than free cores a spinning caller would starve the very workers it waits for.
  for (int spin = 1; spin <= kSpinRounds; ++spin) {
    if (pending_.load(std::memory_order_acquire) == 0) return;
    _mm_pause();
    if (spin % kYieldEvery == 0) sched_yield();
  }
  for (int left = pending_.load(std::memory_order_acquire); left != 0;
       left = pending_.load(std::memory_order_acquire)) {
    pending_.wait(left, std::memory_order_acquire);
  }
}

void ThreadPool::worker_loop(int index) {
  // Generation 0 is the pool's initial state; reading it from the counter instead could miss a
  // job published before this thread got scheduled.
  uint32_t seen = 0;
  for (;;) {
    uint32_t now = seen;
    for (int spin = 1; spin <= kSpinRounds; ++spin) {
      now = generation_.load(std::memory_order_acquire);
      if (now != seen) break;
      _mm_pause();
      if (spin % kYieldEvery == 0) sched_yield();
    }
    if (now == seen) {
      generation_.wait(seen, std::memory_order_acquire);
      now = generation_.load(std::memory_order_acquire);
    }
    seen = now;
    if (stop_.load(std::memory_order_acquire)) return;
    job_fn_(job_ctx_, index, n_threads_);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

}  // namespace fulgur
