// Memory read bandwidth: the roofline for decode (bench_matmul at n = 1 reads each weight byte
// once). Sums a 1 GiB buffer — far beyond any L3 — split across 1 or 2 threads of a ThreadPool,
// the same way matmul splits its weight rows. Counter GB/s = bytes read per second.
// The buffer is on huge pages, like the packed weights and the KV cache (core/page_buffer.h):
// on 4 KiB pages this machine read ~15 % less, and a floor below what decode itself reads is
// no floor.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/page_buffer.h"
#include "core/thread_pool.h"

namespace {

constexpr size_t kBytes = size_t{1} << 30;

const uint64_t* buffer() {
  static const fulgur::PageBuffer buf = [] {
    fulgur::PageBuffer b(kBytes, /*populate=*/true);
    auto* w = reinterpret_cast<uint64_t*>(b.data());
    for (size_t i = 0; i < kBytes / 8; ++i) w[i] = i * 0x9E3779B97F4A7C15ull;
    return b;
  }();
  return reinterpret_cast<const uint64_t*>(buf.data());
}

// Eight independent sums keep enough loads in flight; the compiler vectorizes the body.
uint64_t sum_range(const uint64_t* p, size_t n) {
  uint64_t s[8] = {};
  for (size_t i = 0; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) s[j] += p[i + j];
  uint64_t t = 0;
  for (uint64_t v : s) t += v;
  return t;
}

void bm_read(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const uint64_t* buf = buffer();
  fulgur::ThreadPool pool(threads);
  std::vector<uint64_t> out(static_cast<size_t>(threads) * 8);  // one cache line per thread
  for (auto _ : state) {
    pool.run([&](int ti, int nt) {
      const size_t n = kBytes / 8, b = n * ti / nt / 8 * 8, e = n * (ti + 1) / nt / 8 * 8;
      out[static_cast<size_t>(ti) * 8] = sum_range(buf + b, e - b);
    });
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GB/s"] =
      benchmark::Counter(static_cast<double>(kBytes) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(bm_read)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
