// A persistent pool of worker threads. One call of run() is one op: every thread (the caller
// is thread 0) runs the job once with its index, and run() returns when all have finished,
// so an op costs exactly one barrier. Nothing is allocated per op: the job is passed by
// reference, not copied into a std::function.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

namespace fulgur {

class ThreadPool {
 public:
  // n_threads <= 0 means one thread per physical core.
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  // Jobs run so far on more than one thread, i.e. barriers: lets tests check what an op costs.
  uint32_t barriers() const { return generation_.load(std::memory_order_relaxed); }

  // Calls job(thread_index, n_threads) on every thread and waits for all.
  template <class Job>
  void run(Job&& job) {
    using J = std::remove_reference_t<Job>;
    run_erased(
        [](void* ctx, int ti, int nt) { (*static_cast<J*>(ctx))(ti, nt); },
        const_cast<void*>(static_cast<const void*>(&job)));
  }

  // Splits [0, n) into one contiguous range per thread: fn(begin, end, thread_index).
  template <class Fn>
  void parallel_for(int64_t n, Fn&& fn) {
    run([&](int ti, int nt) {
      const int64_t begin = n * ti / nt, end = n * (ti + 1) / nt;
      if (begin < end) fn(begin, end, ti);
    });
  }

 private:
  using Trampoline = void (*)(void*, int, int);
  void run_erased(Trampoline fn, void* ctx);
  void worker_loop(int index);

  int n_threads_;
  std::vector<std::thread> workers_;
  Trampoline job_fn_ = nullptr;
  void* job_ctx_ = nullptr;
  std::atomic<uint32_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace fulgur
