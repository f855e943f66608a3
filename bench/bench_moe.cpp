// The expert matrix products of one MoE layer at Qwen3-30B-A3B's shapes (hidden E = 2048, expert
// width F = 768, 128 experts, 8 used per row): gate and up {E -> F} of each expert over the rows
// routed to it, then down {F -> E} over its own rows (the SwiGLU between them is left out; it
// costs the same in every variant). Three ways, run side by side under the same load:
//   grouped    matmul_grouped: one call for every expert's gate and up, one for the downs
//   loop       per active expert: gather its rows, matmul gate, matmul up, matmul down
//   loop_many  the same with gate and up as one matmul_many
// for 1 row (decode), 8 (a verification batch) and 512 (prefill), each row's 8 experts drawn at
// random (uniform, distinct). Successive iterations cycle through 16 routings; at one row,
// consecutive routings use disjoint experts, so an expert's bytes never come from cache left by
// the iteration before.
// Counters: GB/s = weight bytes of the experts actually used (their gate, up and down in the
// file's size) per second, the figure for 1 row (bandwidth-bound); GFLOP/s = 2 * n * 8 * 3 * E * F
// per second, the figure for 8 and 512 rows; experts = distinct experts used per iteration.
// Q8_0 and Q4_K, in the file's layout and (AVX-512 only) as 16-row tiles ("packed"). Threads:
// FULGUR_BENCH_THREADS (default 2). The weights of one layer take 640 MiB (Q8_0) and are built
// once per type and layout: filter by type/layout to keep a run short.
#include <benchmark/benchmark.h>

#include "bench_main.h"
#include "bench_pool.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/matmul.h"
#include "kernels/moe.h"
#include "kernels/packed.h"
#include "tensor/quants.h"

namespace {

using fulgur::DType;
using fulgur::kernels::WeightView;
using fulgur::bench::pool;

constexpr int64_t kE = 2048, kF = 768, kExperts = 128, kUsed = 8, kRoutings = 16;

// One expert stack {cols, rows, kExperts}: every expert a copy of one quantized random matrix
// (speed does not depend on the values; quantizing 128 distinct experts would take minutes).
struct Stack {
  std::vector<uint8_t> bytes;  // [kExperts * rows][row_bytes] row-major
  std::unique_ptr<fulgur::kernels::PackedWeight> packed;
  WeightView view;  // the stack in the layout under test
  std::vector<WeightView> experts;  // [kExperts]

  Stack(DType type, int64_t rows, int64_t cols, bool pack, uint32_t seed) {
    const size_t rb = fulgur::row_bytes(type, cols), one = rb * static_cast<size_t>(rows);
    bytes.resize(one * kExperts);
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> src(static_cast<size_t>(cols));  // [cols] one f32 row
    for (int64_t o = 0; o < rows; ++o) {
      for (float& v : src) v = nd(rng);
      fulgur::quantize_row(type, src.data(), bytes.data() + rb * static_cast<size_t>(o), cols);
    }
    for (int64_t e = 1; e < kExperts; ++e) std::memcpy(bytes.data() + one * e, bytes.data(), one);
    view = {.type = type, .data = bytes.data(), .rows = kExperts * rows, .cols = cols, .row_stride = rb};
    if (pack) {
      packed = std::make_unique<fulgur::kernels::PackedWeight>(view, &pool());
      view = packed->view();
      std::vector<uint8_t>().swap(bytes);
    }
    for (int64_t e = 0; e < kExperts; ++e) experts.push_back(fulgur::kernels::expert_matrix(view, kExperts, e));
  }
};

struct Layer {
  DType type;
  bool packed;
  Stack gate, up, down;
  size_t expert_bytes;  // gate + up + down of one expert, in the file's size
  Layer(DType t, bool p)
      : type(t), packed(p), gate(t, kF, kE, p, 1), up(t, kF, kE, p, 2), down(t, kE, kF, p, 3),
        expert_bytes(fulgur::row_bytes(t, kE) * kF * 2 + fulgur::row_bytes(t, kF) * kE) {}
};

// The layer under test; one at a time (a Q8_0 layer and its packed copy would not both fit
// beside the other agents' memory).
const Layer& layer(DType type, bool packed) {
  static std::unique_ptr<Layer> current;
  if (!current || current->type != type || current->packed != packed) {
    current.reset();
    current = std::make_unique<Layer>(type, packed);
    // One pass over every expert before timing: the first benchmark after a build measured up
    // to 2x slower than the same one later (the fresh memory settling), whichever variant ran
    // first.
    std::vector<float> x(kE, 1.0f), y(kE);  // [E] one row in, [E] one row out
    for (int64_t e = 0; e < kExperts; ++e) {
      const size_t i = static_cast<size_t>(e);
      fulgur::kernels::matmul(current->gate.experts[i], x.data(), 1, kE, y.data(), kF, &pool());
      fulgur::kernels::matmul(current->up.experts[i], x.data(), 1, kE, y.data(), kF, &pool());
      fulgur::kernels::matmul(current->down.experts[i], x.data(), 1, kF, y.data(), kE, &pool());
    }
  }
  return *current;
}

// kRoutings routings of n rows, grouped by expert.
std::vector<fulgur::kernels::ExpertRows> routings(int64_t n) {
  std::mt19937 rng(static_cast<uint32_t>(n));
  std::vector<fulgur::kernels::ExpertRows> out(kRoutings);
  std::vector<int32_t> ids(static_cast<size_t>(n * kUsed)), choice;
  for (int64_t i = 0; i < kRoutings; ++i) {
    for (int64_t r = 0; r < n; ++r) {
      // One row: alternate halves of the experts, so consecutive iterations share none.
      choice.clear();
      for (int32_t e = 0; e < kExperts; ++e)
        if (n > 1 || (e < kExperts / 2) == (i % 2 == 0)) choice.push_back(e);
      std::shuffle(choice.begin(), choice.end(), rng);
      std::copy(choice.begin(), choice.begin() + kUsed, ids.begin() + r * kUsed);
    }
    out[static_cast<size_t>(i)].build(ids.data(), n, kUsed, kExperts);
  }
  return out;
}

enum class Mode { kGrouped, kLoop, kLoopMany };

void bm_moe(benchmark::State& state, DType type, bool packed, int64_t n, Mode mode) {
  using namespace fulgur::kernels;
  const Layer& l = layer(type, packed);
  const std::vector<ExpertRows> rs = routings(n);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n * kE));  // [n][E] the layer's input rows
  for (float& v : x) v = nd(rng);
  const auto pairs = static_cast<size_t>(n * kUsed);
  // [n * k][F] gate and up outputs (gate's also feeds down), [n * k][E] down outputs, and the
  // loops' gathered rows [n][E].
  std::vector<float> g(pairs * kF), u(pairs * kF), d(pairs * kE), xg(static_cast<size_t>(n * kE));
  std::vector<MatmulJob> jobs;
  jobs.reserve(2 * kExperts);
  double bytes = 0, experts = 0;
  size_t it = 0;
  for (auto _ : state) {
    const ExpertRows& er = rs[it];
    it = it + 1 == rs.size() ? 0 : it + 1;
    if (mode == Mode::kGrouped) {
      jobs.clear();
      for (int64_t e = 0; e < kExperts; ++e) {
        if (er.count(e) == 0) continue;
        const size_t i = static_cast<size_t>(e);
        jobs.push_back({&l.gate.experts[i], er.count(e), er.rows(e), nullptr, 0, g.data() + er.offset(e) * kF, kF});
        jobs.push_back({&l.up.experts[i], er.count(e), er.rows(e), nullptr, 0, u.data() + er.offset(e) * kF, kF});
      }
      matmul_grouped(jobs.data(), static_cast<int>(jobs.size()), x.data(), n, kE, &pool());
      jobs.clear();
      for (int64_t e = 0; e < kExperts; ++e)
        if (er.count(e) > 0)
          jobs.push_back({&l.down.experts[static_cast<size_t>(e)], er.count(e), nullptr,
                          g.data() + er.offset(e) * kF, kF, d.data() + er.offset(e) * kE, kE});
      matmul_grouped(jobs.data(), static_cast<int>(jobs.size()), nullptr, 0, 0, &pool());
    } else {
      for (int64_t e = 0; e < kExperts; ++e) {
        const int64_t c = er.count(e);
        if (c == 0) continue;
        const size_t i = static_cast<size_t>(e);
        for (int64_t r = 0; r < c; ++r)
          std::memcpy(xg.data() + r * kE, x.data() + er.rows(e)[r] * kE, kE * sizeof(float));
        float* ge = g.data() + er.offset(e) * kF;
        float* ue = u.data() + er.offset(e) * kF;
        if (mode == Mode::kLoopMany) {
          const MatmulOut outs[] = {{&l.gate.experts[i], ge, kF}, {&l.up.experts[i], ue, kF}};
          matmul_many(outs, 2, xg.data(), c, kE, &pool());
        } else {
          matmul(l.gate.experts[i], xg.data(), c, kE, ge, kF, &pool());
          matmul(l.up.experts[i], xg.data(), c, kE, ue, kF, &pool());
        }
      }
      for (int64_t e = 0; e < kExperts; ++e)
        if (er.count(e) > 0)
          matmul(l.down.experts[static_cast<size_t>(e)], g.data() + er.offset(e) * kF, er.count(e), kF,
                 d.data() + er.offset(e) * kE, kE, &pool());
    }
    benchmark::DoNotOptimize(d.data());
    benchmark::ClobberMemory();
    bytes += static_cast<double>(er.n_active() * l.expert_bytes);
    experts += static_cast<double>(er.n_active());
  }
  state.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(2e-9 * static_cast<double>(n * kUsed * 3 * kE * kF),
                                                 benchmark::Counter::kIsIterationInvariantRate);
  state.counters["experts"] = benchmark::Counter(experts, benchmark::Counter::kAvgIterations);
  state.SetLabel(std::string(fulgur::isa_name(active_isa())) + (packed ? "/packed" : ""));
}

void register_all() {
  const bool avx512 = fulgur::kernels::active_isa() == fulgur::Isa::kAvx512;
  const std::pair<Mode, const char*> modes[] = {
      {Mode::kGrouped, "grouped"}, {Mode::kLoop, "loop"}, {Mode::kLoopMany, "loop_many"}};
  for (DType type : {DType::kQ8_0, DType::kQ4_K})
    for (bool packed : {false, true}) {
      if (packed && !avx512) continue;
      for (int64_t n : {1, 8, 512})
        for (const auto& [mode, mode_name] : modes) {
          const std::string name = std::string("moe/") + std::string(fulgur::dtype_name(type)) +
                                   (packed ? "/packed" : "/rows") + "/n:" + std::to_string(n) +
                                   "/" + mode_name;
          benchmark::RegisterBenchmark(name.c_str(), bm_moe, type, packed, n, mode)
              ->Unit(benchmark::kMicrosecond)
              ->UseRealTime();
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  return fulgur::bench::run_benchmarks(argc, argv);
}
