// matmul throughput per weight type. Shapes are rows x cols of the weight (rows = output
// features, cols = the reduction length): 1024x1024, 4096x1024, 1024x4096, 1024x3072 (the 0.6b
// shape's ffn_down) and 2560x9728 (the 4b shape's ffn_down), with n = 1, 2, 4,
// 8, 16, 64 and 512 activation rows. Counters: GB/s = weight bytes read per call (the whole
// matrix, once, in the file's size) per second — the figure to set against bench_membw for
// n = 1, where matmul is bandwidth-bound; GFLOP/s = 2 * n * rows * cols per second — the figure
// for large n, where it is compute-bound.
// Each type with a 16-row packed layout (kernels/packed.h) also runs as "matmul_packed/...",
// right after its row-major twin, so one run compares the two layouts under the same load; the
// packed variants exist only where the active kernels have a tile kernel for the type
// (kernels::should_pack: AVX-512 and AVX2, Q8_0 / Q4_K / Q5_K / Q6_K;
// AVX2 also Q4_0 / IQ4_NL / IQ4_XS). "pack/..." times the repacking
// itself, with the plain packer and the AVX2 one.
// The kernel family is the one kernels::active_isa() picks (override with FULGUR_ISA=avx2|ref),
// threads default to 2 (FULGUR_BENCH_THREADS). Keep runs short: --benchmark_min_time=0.2.
// Successive iterations cycle through copies of the weights spanning 512 MiB, far more than any
// L3, so n = 1 measures DRAM reads as in decode, not a matrix left in cache.
// FULGUR_BENCH_FOOTPRINT_MB=0 keeps one copy instead: the weights stay in cache, and many rows
// measure the arithmetic alone, free of the DRAM bandwidth a shared host lends at the moment.
#include <benchmark/benchmark.h>

#include "bench_main.h"
#include "bench_pool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/cpu.h"
#include "core/page_buffer.h"
#include "kernels/dispatch.h"
#include "kernels/matmul.h"
#include "kernels/packed.h"
#include "tensor/quants.h"

namespace {

using fulgur::DType;
using fulgur::kernels::WeightView;

const DType kTypes[] = {DType::kQ8_0, DType::kQ4_K, DType::kQ6_K, DType::kQ4_0, DType::kF16,
                        DType::kBF16, DType::kF32,  DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                        DType::kQ2_K, DType::kQ3_K, DType::kQ5_K, DType::kIQ4_NL, DType::kIQ4_XS,
                        DType::kMXFP4, DType::kNVFP4, DType::kIQ3_XXS, DType::kIQ3_S, DType::kIQ2_XXS,
                        DType::kIQ2_XS, DType::kIQ2_S, DType::kIQ1_S, DType::kIQ1_M, DType::kTQ1_0,
                        DType::kTQ2_0};

size_t footprint() {
  const char* s = std::getenv("FULGUR_BENCH_FOOTPRINT_MB");
  return (s != nullptr ? static_cast<size_t>(std::atoll(s)) : 512) << 20;
}

using fulgur::bench::pool;

// Quantized random weights, made once per (type, rows, cols).
const std::vector<uint8_t>& weights(DType type, int64_t rows, int64_t cols) {
  static std::map<std::tuple<DType, int64_t, int64_t>, std::unique_ptr<std::vector<uint8_t>>> cache;
  auto& slot = cache[{type, rows, cols}];
  if (!slot) {
    std::mt19937 rng(42);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> src(static_cast<size_t>(cols));  // [cols] one f32 row
    const size_t rb = fulgur::row_bytes(type, cols);
    slot = std::make_unique<std::vector<uint8_t>>(rb * static_cast<size_t>(rows));
    for (int64_t o = 0; o < rows; ++o) {
      for (float& v : src) v = nd(rng);
      fulgur::quantize_row(type, src.data(), slot->data() + rb * static_cast<size_t>(o), cols);
    }
  }
  return *slot;
}

// 64-byte aligned bytes (packed tiles are read with aligned 64-byte loads in mind).
struct AlignedBytes {
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> p;
  explicit AlignedBytes(size_t n)
      : p(static_cast<uint8_t*>(std::aligned_alloc(64, (n + 63) / 64 * 64))) {}
};

void bm_matmul(benchmark::State& state, DType type, int64_t rows, int64_t cols, int64_t n,
               bool packed) {
  const std::vector<uint8_t>& master = weights(type, rows, cols);
  WeightView view;
  view.type = type;
  view.data = master.data();
  view.rows = rows;
  view.cols = cols;
  view.row_stride = fulgur::row_bytes(type, cols);
  // One copy in the layout under test; then as many copies as span the footprint, each starting
  // on a cache line.
  std::unique_ptr<fulgur::kernels::PackedWeight> pw;
  if (packed) {
    pw = std::make_unique<fulgur::kernels::PackedWeight>(view, &pool());
    view = pw->view();
  }
  const uint8_t* one = static_cast<const uint8_t*>(view.data);
  const size_t bytes = packed ? pw->bytes() : master.size();
  const size_t stride = (bytes + 63) / 64 * 64;
  const size_t copies = std::max<size_t>(footprint() / stride, 1);
  // [copies][stride], held as a loaded model holds that layout: tiles on huge pages (as
  // PackedWeight keeps them), row-major weights on the 4 KiB pages of a file mapping. It
  // matters: the hardware prefetchers stop at every 4 KiB page edge, so on small pages the
  // one-row tile kernels measured up to 2x slower than they decode (AVX2 Q8_0).
  fulgur::PageBuffer huge;
  std::optional<AlignedBytes> small;
  if (packed)
    huge = fulgur::PageBuffer(stride * copies, /*populate=*/true);
  else
    small.emplace(stride * copies);
  uint8_t* const base = packed ? huge.data() : small->p.get();
  for (size_t c = 0; c < copies; ++c) std::memcpy(base + c * stride, one, bytes);
  pw.reset();
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n * cols));  // [n][cols]
  for (float& v : x) v = nd(rng);
  std::vector<float> y(static_cast<size_t>(n * rows));  // [n][rows]
  size_t c = 0;
  for (auto _ : state) {
    view.data = base + stride * c;
    c = c + 1 == copies ? 0 : c + 1;
    fulgur::kernels::matmul(view, x.data(), n, cols, y.data(), rows, &pool());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(master.size()) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] = benchmark::Counter(2e-9 * static_cast<double>(n * rows * cols),
                                                 benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(fulgur::isa_name(fulgur::kernels::active_isa())) +
                 (packed ? "/packed" : ""));
}

// Repacking one matrix into 16-row tiles (what a load does per matrix, less the fresh pages):
// the plain packer or the AVX2 one, into the same buffer every iteration. GB/s: tile bytes.
void bm_pack(benchmark::State& state, DType type, int64_t rows, int64_t cols, bool avx2) {
  const std::vector<uint8_t>& master = weights(type, rows, cols);
  const WeightView view{.type = type, .data = master.data(), .rows = rows, .cols = cols,
                        .row_stride = fulgur::row_bytes(type, cols)};
  const fulgur::kernels::PackFormat* f = fulgur::kernels::pack_format(type);
  const auto pack_tile = avx2 ? f->pack_tile_avx2 : f->pack_tile;
  const size_t tile = f->tile_bytes(cols), tiles = static_cast<size_t>((rows + 15) / 16);
  AlignedBytes out(tile * tiles);
  for (auto _ : state) {
    pool().parallel_for(static_cast<int64_t>(tiles), [&](int64_t t0, int64_t t1, int) {
      for (int64_t t = t0; t < t1; ++t) pack_tile(view, t, out.p.get() + t * tile);
    });
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(tile * tiles) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(avx2 ? "avx2" : "ref");
}

void register_all() {
  const std::tuple<int64_t, int64_t> shapes[] = {{1024, 1024}, {4096, 1024}, {1024, 4096}, {1024, 3072}, {2560, 9728}};
  for (DType type : kTypes)
    for (const auto& [rows, cols] : shapes)
      for (int64_t n : {1, 2, 4, 8, 16, 64, 512})
        for (bool packed : {false, true}) {
          if (packed && !fulgur::kernels::should_pack(type)) continue;
          const std::string name = std::string(packed ? "matmul_packed/" : "matmul/") +
                                   std::string(fulgur::dtype_name(type)) + "/" +
                                   std::to_string(rows) + "x" + std::to_string(cols) +
                                   "/n:" + std::to_string(n);
          benchmark::RegisterBenchmark(name.c_str(), bm_matmul, type, rows, cols, n, packed)
              ->Unit(benchmark::kMicrosecond)
              ->UseRealTime();
        }
  for (DType type : kTypes) {
    if (fulgur::kernels::pack_format(type) == nullptr) continue;
    for (bool avx2 : {false, true}) {
      if (avx2 && !fulgur::isa_supported(fulgur::Isa::kAvx2)) continue;
      const fulgur::kernels::PackFormat* f = fulgur::kernels::pack_format(type);
      if (avx2 && f->pack_tile_avx2 == f->pack_tile) continue;  // no AVX2 packer (Q5_K)
      const std::string name = "pack/" + std::string(fulgur::dtype_name(type)) + "/2560x9728/" +
                               (avx2 ? "avx2" : "ref");
      benchmark::RegisterBenchmark(name.c_str(), bm_pack, type, 2560, 9728, avx2)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  return fulgur::bench::run_benchmarks(argc, argv);
}
