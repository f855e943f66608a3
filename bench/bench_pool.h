// The thread pool the kernel benchmarks share: FULGUR_BENCH_THREADS threads (default 2, the
// machine the targets are set on).
#pragma once

#include <cstdlib>

#include "core/thread_pool.h"

namespace fulgur::bench {

inline fulgur::ThreadPool& pool() {
  static fulgur::ThreadPool p([] {
    const char* s = std::getenv("FULGUR_BENCH_THREADS");
    return s != nullptr && std::atoi(s) > 0 ? std::atoi(s) : 2;
  }());
  return p;
}

}  // namespace fulgur::bench
