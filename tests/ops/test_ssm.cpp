// The causal conv1d and the Mamba2 selective scan (kernels/recurrent.h): hand-computed values
// of the refs, every runnable ISA against the refs over odd shapes, and the determinism
// contract of the per-token kernels (one call of n tokens == n calls of one token, bitwise;
// snapshot t == the state after t + 1 tokens; the pool changes nothing).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/recurrent.h"
#include "ops_test_util.h"

namespace fulgur::kernels {
namespace {

using testing::expect_bitwise;
using testing::expect_close;
using testing::expect_close_rms;
using testing::expect_per_token_contract;
using testing::IsaGuard;
using testing::random_floats;
using testing::runnable_isas;
using testing::snapshot_planes;

// ---- conv1d ----------------------------------------------------------------------------------

struct ConvCase {
  int64_t n, channels, kernel;
  bool bias, silu;
};

struct ConvProblem {
  ConvCase c;
  int64_t xs, ys;
  std::vector<float> x, w, wt, bias, state;  // [n][xs], [C][K], [K][C], [C], [K−1][C]
  bool tap_major = false;                    // pass wt instead of w

  ConvProblem(const ConvCase& cc, std::mt19937& rng)
      : c(cc), xs(cc.channels + 3), ys(cc.channels + 1) {
    x = random_floats(rng, c.n * xs, -2, 2);
    w = random_floats(rng, c.channels * c.kernel, -1, 1);
    bias = random_floats(rng, c.channels, -1, 1);
    state = random_floats(rng, (c.kernel - 1) * c.channels, -2, 2);
    wt.resize(w.size());
    conv1d_tap_major(w.data(), c.channels, c.kernel, wt.data());
  }
  // Tokens [t0, t0 + n) on `st`.
  Conv1dArgs args(int64_t t0, int64_t n, float* st, float* y, float* const* snap) const {
    Conv1dArgs a;
    a.n = n;
    a.channels = c.channels;
    a.kernel = c.kernel;
    a.x = x.data() + t0 * xs;
    a.x_stride = xs;
    a.w = tap_major ? wt.data() : w.data();
    a.w_tap_major = tap_major;
    a.bias = c.bias ? bias.data() : nullptr;
    a.silu = c.silu;
    a.state = st;
    a.y = y + t0 * ys;
    a.y_stride = ys;
    a.snap = snap;
    return a;
  }
};

TEST(RecurrentRef, ConvKnownValues) {
  // C = 2, K = 3: y_t[c] = w0·u_{t−2} + w1·u_{t−1} + w2·u_t (+ bias).
  const float w[6] = {1, 2, 3, -1, 0.5f, 2};
  const float bias[2] = {0.5f, -1};
  float state[4] = {1, 2, 3, 4};  // u_{−2} = (1, 2), u_{−1} = (3, 4)
  const float x[4] = {5, 6, 7, 8};
  float y[4];
  Conv1dArgs a;
  a.n = 2;
  a.channels = 2;
  a.kernel = 3;
  a.x = x;
  a.x_stride = 2;
  a.w = w;
  a.bias = bias;
  a.state = state;
  a.y = y;
  a.y_stride = 2;
  conv1d_causal_ref(a);
  EXPECT_EQ(y[0], 1 * 1 + 2 * 3 + 3 * 5 + 0.5f);      // 22.5
  EXPECT_EQ(y[1], -1 * 2 + 0.5f * 4 + 2 * 6 - 1.0f);  // 11
  EXPECT_EQ(y[2], 1 * 3 + 2 * 5 + 3 * 7 + 0.5f);      // 34.5
  EXPECT_EQ(y[3], -1 * 4 + 0.5f * 6 + 2 * 8 - 1.0f);  // 14
  const float want_state[4] = {5, 6, 7, 8};
  expect_bitwise(state, want_state, 4, "conv state");
  // silu on: y = v / (1 + e^−v).
  float state2[4] = {1, 2, 3, 4};
  a.state = state2;
  a.silu = true;
  conv1d_causal_ref(a);
  EXPECT_NEAR(y[0], 22.5 / (1 + std::exp(-22.5)), 1e-5);
  EXPECT_NEAR(y[3], 14 / (1 + std::exp(-14.0)), 1e-5);
}

TEST(Recurrent, ConvMatchesRef) {
  std::mt19937 rng(11);
  const ConvCase cases[] = {{1, 1, 1, false, false},  {1, 7, 4, true, true},
                            {3, 16, 4, false, true},  {5, 33, 2, true, false},
                            {10, 100, 4, true, true}, {2, 17, 5, false, false},
                            {40, 40, 4, true, true},  {1, 300, 3, true, true}};
  for (Isa isa : runnable_isas()) {
    IsaGuard guard(isa);
    for (const ConvCase& cc : cases) {
      for (bool tap_major : {false, true}) {
        ConvProblem p(cc, rng);
        const std::string what = std::string(isa_name(isa)) + " n=" + std::to_string(cc.n) +
                                 " C=" + std::to_string(cc.channels) +
                                 " K=" + std::to_string(cc.kernel) +
                                 (tap_major ? " tap-major" : "");
        const int64_t hist = (cc.kernel - 1) * cc.channels;
        std::vector<float> y_ref(cc.n * p.ys, 0), y(cc.n * p.ys, 0), st_ref = p.state, st = p.state;
        std::vector<float> snap_ref_buf, snap_buf;
        const auto snap_ref = snapshot_planes(snap_ref_buf, cc.n, hist);
        const auto snap = snapshot_planes(snap_buf, cc.n, hist);
        conv1d_causal_ref(p.args(0, cc.n, st_ref.data(), y_ref.data(), snap_ref.data()));
        p.tap_major = tap_major;
        conv1d_causal(p.args(0, cc.n, st.data(), y.data(), snap.data()));
        // Σ|w·u| <= 2K for these ranges: the bound on the rounding of the SIMD sum.
        expect_close(y.data(), y_ref.data(), y.size(), 2e-6, 4e-6 * cc.kernel, "conv y " + what);
        expect_bitwise(st.data(), st_ref.data(), st.size(), "conv state " + what);
        expect_bitwise(snap[0], snap_ref[0], static_cast<size_t>(cc.n * hist),
                       "conv snapshots " + what);
      }
    }
  }
}

TEST(Recurrent, ConvTokenByTokenIsBitwiseTheBatch) {
  std::mt19937 rng(12);
  for (Isa isa : runnable_isas()) {
    IsaGuard guard(isa);
    for (const ConvCase& cc : {ConvCase{9, 37, 4, true, true}, ConvCase{6, 16, 1, true, false},
                               ConvCase{7, 20, 6, false, true}}) {
      const ConvProblem p(cc, rng);
      const std::string what = std::string(isa_name(isa)) + " conv K=" + std::to_string(cc.kernel);
      auto call = [&](int64_t t0, int64_t n, float* st, float* y, float* const* snap, bool) {
        conv1d_causal(p.args(t0, n, st, y, snap));
      };
      expect_per_token_contract(call, cc.n, p.state, cc.n * p.ys, 0, {2}, what);
      // Cut anywhere, the run gives the same as well (a verification batch after decode).
      std::vector<float> y_all(cc.n * p.ys, 0), y_split(cc.n * p.ys, 0);
      std::vector<float> st_all = p.state, st_split = p.state;
      conv1d_causal(p.args(0, cc.n, st_all.data(), y_all.data(), nullptr));
      conv1d_causal(p.args(0, 4, st_split.data(), y_split.data(), nullptr));
      conv1d_causal(p.args(4, cc.n - 4, st_split.data(), y_split.data(), nullptr));
      expect_bitwise(y_split.data(), y_all.data(), y_all.size(), "conv y split " + what);
      expect_bitwise(st_split.data(), st_all.data(), st_all.size(), "conv state split " + what);
    }
  }
}

TEST(Recurrent, ConvBadArgumentsThrow) {
  std::mt19937 rng(13);
  const ConvProblem p({2, 8, 4, false, false}, rng);
  std::vector<float> st = p.state, y(2 * p.ys);
  Conv1dArgs a = p.args(0, 2, st.data(), y.data(), nullptr);
  a.kernel = 0;
  EXPECT_THROW(conv1d_causal(a), Error);
  a = p.args(0, 2, st.data(), y.data(), nullptr);
  a.x_stride = 4;
  EXPECT_THROW(conv1d_causal(a), Error);
  a = p.args(0, 2, st.data(), y.data(), nullptr);
  a.state = nullptr;
  EXPECT_THROW(conv1d_causal(a), Error);
}

// ---- selective scan --------------------------------------------------------------------------

struct ScanCase {
  int64_t n, heads, head_dim, groups, d_state;
};

struct ScanProblem {
  ScanCase c;
  int64_t xs, dts, bs, ys;
  std::vector<float> x, dt, dt_bias, a, b, cc, d, state;

  ScanProblem(const ScanCase& sc, std::mt19937& rng)
      : c(sc),
        xs(sc.heads * sc.head_dim + 2),
        dts(sc.heads + 1),
        bs(2 * sc.groups * sc.d_state + 3),
        ys(sc.heads * sc.head_dim + 1) {
    x = random_floats(rng, c.n * xs, -2, 2);
    dt = random_floats(rng, c.n * dts, -5, 8);
    if (c.n * dts > 3) dt[1] = 24.0f;  // past softplus's linear threshold
    dt_bias = random_floats(rng, c.heads, -1, 1);
    a = random_floats(rng, c.heads, -4, -0.05f);
    b = random_floats(rng, c.n * bs, -1, 1);  // rows hold B then C, as in the conv output
    d = random_floats(rng, c.heads, -1, 1);
    state = random_floats(rng, c.heads * c.head_dim * c.d_state, -1, 1);
  }
  SsmScanArgs args(int64_t t0, int64_t n, float* st, float* y, float* const* snap) const {
    SsmScanArgs s;
    s.n = n;
    s.n_heads = c.heads;
    s.head_dim = c.head_dim;
    s.n_groups = c.groups;
    s.d_state = c.d_state;
    s.x = x.data() + t0 * xs;
    s.x_stride = xs;
    s.dt = dt.data() + t0 * dts;
    s.dt_stride = dts;
    s.dt_bias = dt_bias.data();
    s.a = a.data();
    s.b = b.data() + t0 * bs;
    s.b_stride = bs;
    s.c = b.data() + t0 * bs + c.groups * c.d_state;
    s.c_stride = bs;
    s.d = d.data();
    s.state = st;
    s.y = y + t0 * ys;
    s.y_stride = ys;
    s.snap = snap;
    return s;
  }
};

TEST(RecurrentRef, ScanKnownValues) {
  // One head, P = 1, N = 2: Δ = softplus(0 + 0) = ln 2, dA = e^{−ln 2} = 1/2.
  const float x = 2, dt = 0, a = -1, b[2] = {3, -1}, c[2] = {0.5f, 2}, d = 0.25f;
  float state[2] = {4, 8}, y = 0;
  SsmScanArgs s;
  s.n = 1;
  s.n_heads = s.head_dim = s.n_groups = 1;
  s.d_state = 2;
  s.x = &x;
  s.dt = &dt;
  s.a = &a;
  s.b = b;
  s.c = c;
  s.d = &d;
  s.state = state;
  s.y = &y;
  s.x_stride = s.dt_stride = s.b_stride = s.c_stride = s.y_stride = 2;
  ssm_scan_ref(s);
  const double ln2 = std::log(2.0);
  const double s0 = 4 * 0.5 + 3 * 2 * ln2, s1 = 8 * 0.5 - 1 * 2 * ln2;
  EXPECT_NEAR(state[0], s0, 1e-6);
  EXPECT_NEAR(state[1], s1, 1e-6);
  EXPECT_NEAR(y, s0 * 0.5 + s1 * 2 + 0.25 * 2, 1e-6);
}

TEST(Recurrent, ScanMatchesRef) {
  std::mt19937 rng(21);
  const ScanCase cases[] = {{1, 1, 1, 1, 1},   {1, 4, 5, 2, 7},     {7, 3, 16, 1, 16},
                            {3, 8, 17, 8, 33}, {40, 4, 64, 2, 128}, {1, 2, 64, 1, 128},
                            {12, 6, 33, 3, 20}};
  for (Isa isa : runnable_isas()) {
    IsaGuard guard(isa);
    for (const ScanCase& sc : cases) {
      const ScanProblem p(sc, rng);
      const std::string what =
          std::string(isa_name(isa)) + " n=" + std::to_string(sc.n) +
          " Hs=" + std::to_string(sc.heads) + " P=" + std::to_string(sc.head_dim) +
          " G=" + std::to_string(sc.groups) + " N=" + std::to_string(sc.d_state);
      std::vector<float> y_ref(sc.n * p.ys, 0), y(sc.n * p.ys, 0), st_ref = p.state, st = p.state;
      ssm_scan_ref(p.args(0, sc.n, st_ref.data(), y_ref.data(), nullptr));
      ssm_scan(p.args(0, sc.n, st.data(), y.data(), nullptr));
      expect_close_rms(y.data(), y_ref.data(), y.size(), 1e-5, "scan y " + what);
      expect_close_rms(st.data(), st_ref.data(), st.size(), 1e-5, "scan state " + what);
    }
  }
}

TEST(Recurrent, ScanTokenByTokenIsBitwiseTheBatch) {
  std::mt19937 rng(22);
  ThreadPool pool(2);
  for (Isa isa : runnable_isas()) {
    IsaGuard guard(isa);
    // Aligned planes of whole vectors take the non-temporal path, the others plain stores.
    for (const auto& [sc, misalign] :
         {std::pair{ScanCase{9, 4, 16, 2, 32}, 0}, std::pair{ScanCase{9, 4, 16, 2, 32}, 1},
          std::pair{ScanCase{6, 3, 5, 1, 7}, 0}}) {
      const ScanProblem p(sc, rng);
      const std::string what = std::string(isa_name(isa)) +
                               " scan P=" + std::to_string(sc.head_dim) +
                               " misalign=" + std::to_string(misalign);
      auto call = [&](int64_t t0, int64_t n, float* st, float* y, float* const* snap, bool batch) {
        ssm_scan(p.args(t0, n, st, y, snap), batch ? &pool : nullptr);
      };
      // Row 3's state is not wanted; the last one lands in the state only.
      expect_per_token_contract(call, sc.n, p.state, sc.n * p.ys, misalign, {3, sc.n - 1}, what);
    }
  }
}

TEST(Recurrent, ScanBadArgumentsThrow) {
  std::mt19937 rng(23);
  const ScanProblem p({2, 4, 8, 2, 16}, rng);
  std::vector<float> st = p.state, y(2 * p.ys);
  SsmScanArgs a = p.args(0, 2, st.data(), y.data(), nullptr);
  a.n_groups = 3;
  EXPECT_THROW(ssm_scan(a), Error);
  a = p.args(0, 2, st.data(), y.data(), nullptr);
  a.y_stride = 5;
  EXPECT_THROW(ssm_scan(a), Error);
  std::vector<float*> snap = {st.data() + 1, nullptr};  // overlaps the state without being it
  a = p.args(0, 2, st.data(), y.data(), snap.data());
  EXPECT_THROW(ssm_scan(a), Error);
}

}  // namespace
}  // namespace fulgur::kernels
