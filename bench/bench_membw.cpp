// Memory read bandwidth: the roofline for decode (bench_matmul at n = 1 reads each weight byte
// once). Reads a 1 GiB buffer, far beyond any L3, on 1 or 2 threads with core/read_sweep.h (the
// same reads `fulgur bench --floor` times over a model's weights). Counter GB/s = bytes read per
// second.
// The buffer is on huge pages, like the packed weights and the KV cache (core/page_buffer.h):
// on 4 KiB pages this machine read ~15 % less, and a floor below what decode itself reads is
// no floor.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <span>

#include "core/page_buffer.h"
#include "core/read_sweep.h"
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

void bm_read(benchmark::State& state) {
  const std::span<const uint8_t> all(reinterpret_cast<const uint8_t*>(buffer()), kBytes);
  fulgur::ThreadPool pool(static_cast<int>(state.range(0)));
  for (auto _ : state) state.SetIterationTime(fulgur::read_seconds({&all, 1}, pool));
  state.counters["GB/s"] =
      benchmark::Counter(static_cast<double>(kBytes) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(bm_read)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseManualTime();

}  // namespace

BENCHMARK_MAIN();
