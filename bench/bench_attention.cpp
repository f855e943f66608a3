// Attention throughput over an f16 KV cache, in the shapes that decode and verification see:
// Qwen3-0.6b (16 heads over 8 KV heads) and Qwen3-4b (32 over 8), head_dim 128, rows = 1
// (decode) and 8 (a verification batch), at depths 64, 512 and 2048 cells, causal, one
// sequence. Counters: GFLOP/s = 4 · rows · heads · cells · head_dim per second (q·k and p·v),
// and GB/s of K and V read (each cell's K and V once per call).
// Kernels are those kernels::active_isa() picks (FULGUR_ISA=avx2|ref overrides), threads
// default to 2 (FULGUR_BENCH_THREADS). Keep runs short: --benchmark_min_time=0.2.
// K and V live in a model::KvCache, in the layout decode reads (blocks of 256 cells, every
// layer's block b side by side). With layers:28 each call reads the next of 28 layers (28 · 2 MB
// at 512 cells), so K and V come from DRAM as in decode, not from the L2/L3 that holds a single
// layer's cache.
#include <benchmark/benchmark.h>

#include "bench_pool.h"

#include <cstdlib>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "kernels/attention.h"
#include "model/kv_cache.h"

namespace {

using fulgur::kernels::AttentionArgs;

using fulgur::bench::pool;

// args: rows, heads, kv heads, cells (the rows are the last `rows` positions), layers: how many
// separate KV caches the calls cycle through.
void BM_attention(benchmark::State& state) {
  const int64_t rows = state.range(0), heads = state.range(1), kv_heads = state.range(2);
  const int64_t cells = state.range(3), layers = state.range(4), head_dim = 128;
  fulgur::KvCache kv(std::vector<int64_t>(static_cast<size_t>(layers), kv_heads),
                     std::vector<int64_t>(static_cast<size_t>(layers), head_dim), cells);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t l = 0; l < layers; ++l) {
    for (uint16_t* base : {kv.k(l), kv.v(l)}) {
      for (int64_t g = 0; g < kv_heads; ++g) {
        for (int64_t c = 0; c < cells; ++c) {
          uint16_t* row = base + kv.row(l, g, c);
          for (int64_t i = 0; i < head_dim; ++i) row[i] = fulgur::f32_to_f16(nd(rng));
        }
      }
    }
  }
  std::vector<float> q(static_cast<size_t>(rows * heads * head_dim));
  for (float& x : q) x = nd(rng);
  std::vector<int32_t> cell(static_cast<size_t>(cells)), pos(cell.size()), row_pos(static_cast<size_t>(rows));
  for (int64_t j = 0; j < cells; ++j) cell[j] = pos[j] = static_cast<int32_t>(j);
  for (int64_t r = 0; r < rows; ++r) row_pos[r] = static_cast<int32_t>(cells - rows + r);
  std::vector<float> out(q.size());

  AttentionArgs a;
  a.q = q.data();
  a.q_row_stride = heads * head_dim;
  a.n_rows = rows;
  a.n_heads = heads;
  a.n_kv_heads = kv_heads;
  a.head_dim = head_dim;
  a.n_ctx = kv.n_ctx();
  a.kv_block_cells = kv.block_cells();
  a.kv_block_stride = kv.block_stride();
  a.cells = cell.data();
  a.cell_pos = pos.data();
  a.n_cells = cells;
  a.row_pos = row_pos.data();
  a.out = out.data();
  a.out_row_stride = heads * head_dim;
  int64_t layer = 0;
  for (auto _ : state) {
    a.k = kv.k(layer);
    a.v = kv.v(layer);
    layer = (layer + 1) % layers;
    fulgur::kernels::attention(a, &pool());
    benchmark::DoNotOptimize(out.data());
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["GFLOP/s"] = benchmark::Counter(
      4.0 * static_cast<double>(rows * heads * cells * head_dim) * iters * 1e-9,
      benchmark::Counter::kIsRate);
  state.counters["GB/s"] = benchmark::Counter(
      2.0 * 2.0 * static_cast<double>(kv_heads * cells * head_dim) * iters * 1e-9,
      benchmark::Counter::kIsRate);
}

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"rows", "heads", "kv", "cells", "layers"});
  for (int64_t heads : {16, 32}) {
    for (int64_t cells : {64, 512, 2048}) {
      for (int64_t rows : {1, 8}) b->Args({rows, heads, 8, cells, 1});
    }
  }
  // Decode as the model sees it: K and V from DRAM.
  b->Args({1, 16, 8, 512, 28})->Args({1, 16, 8, 2048, 28})->Args({1, 32, 8, 512, 28});
  // Verification batches of 8 rows (0.6b and 4b head counts).
  b->Args({8, 16, 8, 512, 28})->Args({8, 32, 8, 512, 36});
}

BENCHMARK(BM_attention)->Apply(shapes)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
