// The recurrent kernels at real layer sizes: Nemotron-3-Nano's Mamba2 mixer (Hs 64 heads of
// P 64, N 128, G 8; conv over Di + 2GN = 6144 channels) and Qwen3.5 / Qwen3-Next's Gated
// DeltaNet (Hk 16, Hv 32, Dk = Dv 128; conv over 2·Hk·Dk + Hv·Dv = 8192 channels), kernel 4.
// Shapes: decode (1 token), a verification batch (8 tokens, with and without per-token
// snapshots) and prefill (512 tokens; GDN per-token and chunked).
// Counter GB/s: state traffic, one read and one write of the recurrent state (2 MiB per layer at
// these sizes) per token, per second; a per-token kernel cannot move less, so at decode it is the
// kernel's effective bandwidth, and at prefill a yardstick across forms (the chunked form touches
// the state once per 64 tokens). Snapshot planes written count as well (one more write per token).
// With layers:24 each call steps the next of 24 layers' states (48 MiB, past the L3), so states
// come from DRAM as in decode. Kernels are those kernels::active_isa() picks (FULGUR_ISA
// overrides), threads default to 2 (FULGUR_BENCH_THREADS). Keep runs short:
// --benchmark_min_time=0.2.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "bench_pool.h"
#include "core/page_buffer.h"
#include "kernels/recurrent.h"

namespace {

using fulgur::bench::pool;
namespace k = fulgur::kernels;

constexpr int64_t kMambaHeads = 64, kMambaHeadDim = 64, kMambaState = 128, kMambaGroups = 8;
constexpr int64_t kGdnKHeads = 16, kGdnVHeads = 32, kGdnDim = 128;

std::vector<float> randoms(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// `layers` states of `plane` floats on huge pages, filled with small random values.
struct States {
  fulgur::PageBuffer buf;
  int64_t plane;
  States(int64_t layers, int64_t plane_floats)
      : buf(static_cast<size_t>(layers * plane_floats) * sizeof(float), true), plane(plane_floats) {
    auto* p = reinterpret_cast<float*>(buf.data());
    const auto v = randoms(static_cast<size_t>(plane_floats), -0.1f, 0.1f, 5);
    for (int64_t l = 0; l < layers; ++l) std::copy(v.begin(), v.end(), p + l * plane_floats);
  }
  float* layer(int64_t l) const { return reinterpret_cast<float*>(buf.data()) + l * plane; }
};

// Snapshot planes for n tokens (when wanted): [n][plane] f32.
struct Snapshots {
  std::vector<float> buf;
  std::vector<float*> ptrs;
  Snapshots(bool want, int64_t n, int64_t plane) {
    if (!want) return;
    buf.assign(static_cast<size_t>(n * plane), 0.0f);
    for (int64_t t = 0; t < n; ++t) ptrs.push_back(buf.data() + t * plane);
  }
  float* const* get() const { return ptrs.empty() ? nullptr : ptrs.data(); }
};

void set_state_counter(benchmark::State& st, int64_t n, int64_t plane, bool snap) {
  const double per_token = static_cast<double>(plane) * sizeof(float) * (snap ? 3.0 : 2.0);
  st.counters["GB/s"] = benchmark::Counter(
      per_token * static_cast<double>(n * st.iterations()) * 1e-9, benchmark::Counter::kIsRate);
  st.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(n * st.iterations()), benchmark::Counter::kIsRate);
}

// args: tokens, layers, snapshots (0/1)
void BM_mamba2_scan(benchmark::State& st) {
  const int64_t n = st.range(0), layers = st.range(1);
  const bool snap = st.range(2) != 0;
  const int64_t plane = kMambaHeads * kMambaHeadDim * kMambaState, di = kMambaHeads * kMambaHeadDim;
  const int64_t gn = kMambaGroups * kMambaState;
  States states(layers, plane);
  Snapshots snaps(snap, n, plane);
  // Rows of the conv output [x (Di) | B (GN) | C (GN)], dt rows [Hs].
  const auto xbc = randoms(static_cast<size_t>(n * (di + 2 * gn)), -1, 1, 1);
  const auto dt = randoms(static_cast<size_t>(n * kMambaHeads), -3, 1, 2);
  const auto a = randoms(kMambaHeads, -8, -0.5f, 3), d = randoms(kMambaHeads, -1, 1, 4);
  std::vector<float> y(static_cast<size_t>(n * di));
  k::SsmScanArgs s;
  s.n = n;
  s.n_heads = kMambaHeads;
  s.head_dim = kMambaHeadDim;
  s.n_groups = kMambaGroups;
  s.d_state = kMambaState;
  s.x = xbc.data();
  s.x_stride = di + 2 * gn;
  s.b = xbc.data() + di;
  s.c = xbc.data() + di + gn;
  s.b_stride = s.c_stride = di + 2 * gn;
  s.dt = dt.data();
  s.dt_stride = kMambaHeads;
  s.a = a.data();
  s.d = d.data();
  s.y = y.data();
  s.y_stride = di;
  s.snap = snaps.get();
  int64_t layer = 0;
  for (auto _ : st) {
    s.state = states.layer(layer);
    layer = (layer + 1) % layers;
    k::ssm_scan(s, &pool());
    benchmark::DoNotOptimize(y.data());
  }
  set_state_counter(st, n, plane, snap);
}

// args: tokens, layers, snapshots (0/1), chunked (0/1)
void BM_gated_delta(benchmark::State& st) {
  const int64_t n = st.range(0), layers = st.range(1);
  const bool snap = st.range(2) != 0, chunked = st.range(3) != 0;
  const int64_t plane = kGdnVHeads * kGdnDim * kGdnDim, kd = kGdnKHeads * kGdnDim,
                vd = kGdnVHeads * kGdnDim;
  States states(layers, plane);
  Snapshots snaps(snap, n, plane);
  auto qkv = randoms(static_cast<size_t>(n * (2 * kd + vd)), -1, 1, 1);  // rows [q | k | v]
  for (float& x : qkv) x *= 0.088f;  // about unit norm per head of 128
  const auto g = randoms(static_cast<size_t>(n * kGdnVHeads), -2, -0.01f, 2);
  const auto beta = randoms(static_cast<size_t>(n * kGdnVHeads), 0.05f, 0.95f, 3);
  std::vector<float> out(static_cast<size_t>(n * vd));
  k::GatedDeltaArgs a;
  a.n = n;
  a.n_k_heads = kGdnKHeads;
  a.n_v_heads = kGdnVHeads;
  a.k_dim = a.v_dim = kGdnDim;
  a.q = qkv.data();
  a.k = qkv.data() + kd;
  a.v = qkv.data() + 2 * kd;
  a.q_stride = a.k_stride = a.v_stride = 2 * kd + vd;
  a.g = g.data();
  a.beta = beta.data();
  a.g_stride = a.beta_stride = kGdnVHeads;
  a.out = out.data();
  a.out_stride = vd;
  a.snap = snaps.get();
  int64_t layer = 0;
  for (auto _ : st) {
    a.state = states.layer(layer);
    layer = (layer + 1) % layers;
    if (chunked) {
      k::gated_delta_chunked(a, &pool());
    } else {
      k::gated_delta(a, &pool());
    }
    benchmark::DoNotOptimize(out.data());
  }
  set_state_counter(st, n, plane, snap);
}

// args: tokens, channels, snapshots (0/1). Counter GB/s: x read and y written.
void BM_conv1d(benchmark::State& st) {
  const int64_t n = st.range(0), ch = st.range(1), kernel = 4;
  const bool snap = st.range(2) != 0;
  const auto x = randoms(static_cast<size_t>(n * ch), -1, 1, 1);
  const auto w = randoms(static_cast<size_t>(ch * kernel), -1, 1, 2);
  const auto bias = randoms(static_cast<size_t>(ch), -1, 1, 3);
  auto state = randoms(static_cast<size_t>((kernel - 1) * ch), -1, 1, 4);
  Snapshots snaps(snap, n, (kernel - 1) * ch);
  std::vector<float> y(static_cast<size_t>(n * ch));
  k::Conv1dArgs a;
  a.n = n;
  a.channels = ch;
  a.kernel = kernel;
  a.x = x.data();
  a.x_stride = ch;
  a.w = w.data();
  a.bias = bias.data();
  a.silu = true;
  a.state = state.data();
  a.y = y.data();
  a.y_stride = ch;
  a.snap = snaps.get();
  for (auto _ : st) {
    k::conv1d_causal(a);
    benchmark::DoNotOptimize(y.data());
  }
  st.counters["GB/s"] =
      benchmark::Counter(2.0 * sizeof(float) * static_cast<double>(n * ch * st.iterations()) * 1e-9,
                         benchmark::Counter::kIsRate);
}

BENCHMARK(BM_mamba2_scan)
    ->ArgNames({"tokens", "layers", "snap"})
    ->Args({1, 24, 0})
    ->Args({8, 24, 0})
    ->Args({8, 24, 1})
    ->Args({512, 1, 0})
    ->UseRealTime();
BENCHMARK(BM_gated_delta)
    ->ArgNames({"tokens", "layers", "snap", "chunked"})
    ->Args({1, 24, 0, 0})
    ->Args({8, 24, 0, 0})
    ->Args({8, 24, 1, 0})
    ->Args({512, 1, 0, 0})
    ->Args({512, 1, 0, 1})
    ->UseRealTime();
BENCHMARK(BM_conv1d)
    ->ArgNames({"tokens", "channels", "snap"})
    ->Args({1, 6144, 0})
    ->Args({1, 8192, 0})
    ->Args({8, 8192, 1})
    ->Args({512, 8192, 0})
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
