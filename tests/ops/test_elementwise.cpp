// rms_norm, softmax, activations, add/mul, the recurrent layers' norms and activations
// (l2_norm, rms_norm_gated, sigmoid, softplus, relu_sq) and the vectorized exp: every runnable ISA against
// the scalar refs, over odd sizes, plus exact-value checks of the refs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "kernels/layer_norm.h"
#include "kernels/ops.h"
#include "kernels/swiglu_oai.h"
#include "ops_test_util.h"

namespace fulgur::kernels {
namespace {

using testing::expect_bitwise;
using testing::expect_close;
using testing::IsaGuard;
using testing::random_floats;
using testing::runnable_isas;

const int64_t kSizes[] = {1, 3, 7, 8, 15, 16, 17, 33, 100, 257, 4096};

std::string label(Isa isa, int64_t n) { return std::string(isa_name(isa)) + " n=" + std::to_string(n); }

// Every ops test in this binary (elementwise, attention, RoPE, row fetch) loops over
// runnable_isas(); these say when an ISA is left out.
TEST(IsaCoverage, Avx2) { testing_support::expect_runnable_or_skip(Isa::kAvx2, "the AVX2 ops kernels"); }
TEST(IsaCoverage, Avx512) { testing_support::expect_runnable_or_skip(Isa::kAvx512, "the AVX-512 ops kernels"); }

TEST(OpsRef, RmsNormKnownValues) {
  const float x[4] = {1, 2, 3, 4};  // mean(x²) = 7.5
  const float w[4] = {1, 0.5f, 2, 1};
  float y[4];
  rms_norm_ref(x, w, 0.0f, y, 1, 4, 4, 4);
  const double inv = 1.0 / std::sqrt(7.5);
  EXPECT_FLOAT_EQ(y[0], static_cast<float>(1 * inv));
  EXPECT_FLOAT_EQ(y[1], static_cast<float>(2 * inv * 0.5));
  EXPECT_FLOAT_EQ(y[2], static_cast<float>(3 * inv * 2));
  EXPECT_FLOAT_EQ(y[3], static_cast<float>(4 * inv));
}

// LayerNorm (the MTP final_layernorm of Nemotron-H): known values, and a shifted row gives the
// same output (the mean is removed) while a row of equal values gives zeros.
TEST(OpsRef, LayerNormKnownValues) {
  const float x[4] = {1, 2, 3, 6};  // mean 3, variance (4 + 1 + 0 + 9) / 4 = 3.5
  const float w[4] = {1, 0.5f, 2, -1};
  float y[8];
  layer_norm(x, w, 0.0f, y, 1, 4, 4, 4);
  const double inv = 1.0 / std::sqrt(3.5);
  EXPECT_FLOAT_EQ(y[0], static_cast<float>(-2 * inv));
  EXPECT_FLOAT_EQ(y[1], static_cast<float>(-1 * inv * 0.5));
  EXPECT_FLOAT_EQ(y[2], 0.0f);
  EXPECT_FLOAT_EQ(y[3], static_cast<float>(-3 * inv));
  const float shifted[4] = {101, 102, 103, 106};
  layer_norm(shifted, w, 0.0f, y + 4, 1, 4, 4, 4);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[4 + i], y[i], 1e-5) << i;
  const float flat[3] = {5, 5, 5};
  float z[3];
  layer_norm(flat, nullptr, 1e-5f, z, 1, 3, 3, 3);
  for (float v : z) EXPECT_EQ(v, 0.0f);
  EXPECT_THROW(layer_norm(x, w, 0.0f, y, 1, 0, 4, 4), Error);
}

TEST(Ops, RmsNormMatchesRef) {
  std::mt19937 rng(1);
  for (Isa isa : runnable_isas()) {
    IsaGuard guard(isa);
    for (int64_t dim : kSizes) {
      const int64_t rows = 3, xs = dim + 5, ys = dim + 2;
      const auto x = random_floats(rng, rows * xs, -4, 4);
      const auto w = random_floats(rng, dim, -2, 2);
      for (const float* wp : {w.data(), static_cast<const float*>(nullptr)}) {
        std::vector<float> want(rows * ys, 0), got(rows * ys, 0);
        rms_norm_ref(x.data(), wp, 1e-6f, want.data(), rows, dim, xs, ys);
        rms_norm(x.data(), wp, 1e-6f, got.data(), rows, dim, xs, ys);
        expect_close(got.data(), want.data(), got.size(), 2e-6, 1e-7, "rms_norm " + label(isa, dim));
        // In place.
        std::vector<float> inplace = x;
        rms_norm(inplace.data(), wp, 1e-6f, inplace.data(), rows, dim, xs, xs);
        for (int64_t r = 0; r < rows; ++r)
          expect_close(inplace.data() + r * xs, want.data() + r * ys, dim, 2e-6, 1e-7,
                       "rms_norm in place " + label(isa, dim));
      }
    }
  }
}

TEST(OpsRef, SoftmaxSumsToOneAndHandlesInf) {
  std::mt19937 rng(2);
  auto x = random_floats(rng, 37, -30, 30);
  x[5] = -std::numeric_limits<float>::infinity();
  softmax_ref(x.data(), 1, 37, 37, 1.0f);
  double sum = 0;
  for (float p : x) sum += p;
  EXPECT_NEAR(sum, 1.0, 1e-6);
  EXPECT_EQ(x[5], 0.0f);
  std::vector<float> all_inf(9, -std::numeric_limits<float>::infinity());
  softmax_ref(all_inf.data(), 1, 9, 9, 1.0f);
  for (float p : all_inf) EXPECT_EQ(p, 0.0f);
  float two[2] = {0.0f, std::log(3.0f)};  // probabilities 1/4 and 3/4
  softmax_ref(two, 1, 2, 2, 1.0f);
  EXPECT_NEAR(two[0], 0.25f, 1e-7);
  EXPECT_NEAR(two[1], 0.75f, 1e-7);
}

TEST(Ops, SoftmaxMatchesRef) {
  std::mt19937 rng(3);
  for (Isa isa : runnable_isas()) {
    IsaGuard guard(isa);
    for (int64_t n : kSizes) {
      for (float scale : {1.0f, 0.125f, 3.0f}) {
        const int64_t rows = 4, stride = n + 3;
        auto x = random_floats(rng, rows * stride, -20, 20);
        x[1] = -std::numeric_limits<float>::infinity();  // a masked logit in row 0
        for (int64_t i = 0; i < n; ++i) x[2 * stride + i] = -std::numeric_limits<float>::infinity();
        auto want = x;
        softmax_ref(want.data(), rows, n, stride, scale);
        softmax(x.data(), rows, n, stride, scale);
        expect_close(x.data(), want.data(), x.size(), 3e-6, 1e-9, "softmax " + label(isa, n));
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(x[2 * stride + i], 0.0f) << "all -inf row";
      }
    }
  }
}

TEST(OpsRef, ActivationKnownValues) {
  const float x[3] = {0.0f, 1.0f, -2.0f};
  float y[3];
  silu_ref(x, y, 3);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_NEAR(y[1], 1.0 / (1.0 + std::exp(-1.0)), 1e-7);
  EXPECT_NEAR(y[2], -2.0 / (1.0 + std::exp(2.0)), 1e-7);
  gelu_ref(x, y, 3);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_NEAR(y[1], 0.8411920f, 1e-6);  // 0.5(1 + tanh(0.79788456·1.044715))
  EXPECT_NEAR(y[2], -0.0454023f, 1e-6);
  const float up[3] = {2.0f, 3.0f, 0.5f};
  float s[3], g[3], sref[3], gref[3];
  swiglu_ref(x, up, s, 3);
  geglu_ref(x, up, g, 3);
  silu_ref(x, sref, 3);
  gelu_ref(x, gref, 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(s[i], sref[i] * up[i], 1e-6);
    EXPECT_NEAR(g[i], gref[i] * up[i], 1e-6);
  }
}

// gpt-oss's clamped SwiGLU, by hand: gate clamped above only, up both ways, (up + 1) factor.
TEST(OpsRef, SwiGluOaiKnownValues) {
  //                 inside   gate>7  gate<-7  up>7   up<-7  zero
  const float gate[] = {0.5f, 9.0f, -9.0f, 1.0f, 2.0f, 0.0f};
  const float up[] = {-0.25f, 1.0f, 0.5f, 12.0f, -30.0f, 5.0f};
  float out[6];
  swiglu_oai(gate, up, out, 6);
  const auto want = [](double g, double u) { return g / (1.0 + std::exp(-1.702 * g)) * (u + 1.0); };
  EXPECT_NEAR(out[0], want(0.5, -0.25), 1e-6);
  EXPECT_NEAR(out[1], want(7.0, 1.0), 1e-5);     // gate 9 acts as 7
  EXPECT_NEAR(out[2], want(-9.0, 0.5), 1e-6);    // no lower clamp on the gate
  EXPECT_NEAR(out[3], want(1.0, 7.0), 1e-6);     // up 12 acts as 7
  EXPECT_NEAR(out[4], want(2.0, -7.0), 1e-6);    // up -30 acts as -7
  EXPECT_EQ(out[5], 0.0f);
  // Other constants are honoured, and out may alias gate.
  float g2[] = {3.0f};
  swiglu_oai(g2, up, g2, 1, 1.0f, 2.0f);
  EXPECT_NEAR(g2[0], 2.0 / (1.0 + std::exp(-2.0)) * (-0.25 + 1.0), 1e-6);
}

TEST(Ops, ActivationsMatchRef) {
  std::mt19937 rng(4);
  for (Isa isa : runnable_isas()) {
    IsaGuard guard(isa);
    for (int64_t n : kSizes) {
      auto x = random_floats(rng, n, -12, 12);
      if (n > 2) {
        x[0] = -100.0f;  // saturating tails
        x[1] = 100.0f;
      }
      const auto up = random_floats(rng, n, -3, 3);
      std::vector<float> want(n), got(n);
      silu_ref(x.data(), want.data(), n);
      silu(x.data(), got.data(), n);
      expect_close(got.data(), want.data(), n, 2e-6, 1e-7, "silu " + label(isa, n));
      gelu_ref(x.data(), want.data(), n);
      gelu(x.data(), got.data(), n);
      expect_close(got.data(), want.data(), n, 4e-6, 1e-7, "gelu " + label(isa, n));
      swiglu_ref(x.data(), up.data(), want.data(), n);
      swiglu(x.data(), up.data(), got.data(), n);
      expect_close(got.data(), want.data(), n, 2e-6, 1e-7, "swiglu " + label(isa, n));
      geglu_ref(x.data(), up.data(), want.data(), n);
      geglu(x.data(), up.data(), got.data(), n);
      expect_close(got.data(), want.data(), n, 4e-6, 1e-7, "geglu " + label(isa, n));
      // In place (out aliases gate).
      auto inplace = x;
      swiglu(inplace.data(), up.data(), inplace.data(), n);
      swiglu_ref(x.data(), up.data(), want.data(), n);
      expect_close(inplace.data(), want.data(), n, 2e-6, 1e-7, "swiglu in place " + label(isa, n));
    }
  }
}

TEST(Ops, AddMulBitwise) {
  std::mt19937 rng(5);
  for (Isa isa : runnable_isas()) {
    IsaGuard guard(isa);
    for (int64_t n : kSizes) {
      const auto a = random_floats(rng, n, -5, 5), b = random_floats(rng, n, -5, 5);
      std::vector<float> want(n), got(n);
      add_ref(a.data(), b.data(), want.data(), n);
      add(a.data(), b.data(), got.data(), n);
      expect_bitwise(got.data(), want.data(), n, "add " + label(isa, n));
      mul_ref(a.data(), b.data(), want.data(), n);
      mul(a.data(), b.data(), got.data(), n);
      expect_bitwise(got.data(), want.data(), n, "mul " + label(isa, n));
      auto res = a;  // residual add in place
      add(res.data(), b.data(), res.data(), n);
      add_ref(a.data(), b.data(), want.data(), n);
      expect_bitwise(res.data(), want.data(), n, "add in place " + label(isa, n));
    }
  }
}

TEST(OpsRef, RecurrentActivationKnownValues) {
  const float x[5] = {0.0f, 2.0f, -3.0f, 25.0f, -0.5f};
  float y[5];
  sigmoid_ref(x, y, 5);
  EXPECT_EQ(y[0], 0.5f);
  EXPECT_NEAR(y[1], 1.0 / (1.0 + std::exp(-2.0)), 1e-7);
  EXPECT_NEAR(y[2], 1.0 / (1.0 + std::exp(3.0)), 1e-8);
  softplus_ref(x, y, 5);
  EXPECT_NEAR(y[0], std::log(2.0), 1e-7);
  EXPECT_NEAR(y[2], std::log1p(std::exp(-3.0)), 1e-8);
  EXPECT_EQ(y[3], 25.0f);  // past the threshold softplus is the identity
  relu_sq_ref(x, y, 5);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 4.0f);
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_EQ(y[3], 625.0f);
  EXPECT_EQ(y[4], 0.0f);
}

TEST(Ops, RecurrentActivationsMatchRef) {
  std::mt19937 rng(6);
  for (Isa isa : runnable_isas()) {
    IsaGuard guard(isa);
    for (int64_t n : kSizes) {
      auto x = random_floats(rng, n, -30, 30);
      if (n > 3) {
        x[0] = -100.0f;
        x[1] = 100.0f;
        x[2] = 20.0f;  // softplus's threshold
      }
      std::vector<float> want(n), got(n);
      sigmoid_ref(x.data(), want.data(), n);
      sigmoid(x.data(), got.data(), n);
      expect_close(got.data(), want.data(), n, 2e-6, 1e-7, "sigmoid " + label(isa, n));
      softplus_ref(x.data(), want.data(), n);
      softplus(x.data(), got.data(), n);
      expect_close(got.data(), want.data(), n, 2e-6, 1e-7, "softplus " + label(isa, n));
      relu_sq_ref(x.data(), want.data(), n);
      relu_sq(x.data(), got.data(), n);
      expect_bitwise(got.data(), want.data(), n, "relu_sq " + label(isa, n));
      auto inplace = x;
      sigmoid(inplace.data(), inplace.data(), n);
      sigmoid_ref(x.data(), want.data(), n);
      expect_close(inplace.data(), want.data(), n, 2e-6, 1e-7, "sigmoid in place " + label(isa, n));
    }
  }
}

TEST(OpsRef, L2NormKnownValues) {
  float x[6] = {3, 4, 9, 0, 0, 1e-9f};  // two heads of 2 in a row of 6, then a tiny head
  l2_norm_ref(x, 1, 2, 2, 6, 1e-6f);
  EXPECT_FLOAT_EQ(x[0], 0.6f);
  EXPECT_FLOAT_EQ(x[1], 0.8f);
  EXPECT_FLOAT_EQ(x[2], 1.0f);
  EXPECT_EQ(x[3], 0.0f);
  EXPECT_EQ(x[5], 1e-9f);  // outside the heads: untouched
  float tiny[2] = {3e-7f, 4e-7f};  // |x| = 5e-7 < eps: divided by eps
  l2_norm_ref(tiny, 1, 1, 2, 2, 1e-6f);
  EXPECT_FLOAT_EQ(tiny[0], 0.3f);
  EXPECT_FLOAT_EQ(tiny[1], 0.4f);
}

TEST(Ops, L2NormMatchesRef) {
  std::mt19937 rng(7);
  for (Isa isa : runnable_isas()) {
    IsaGuard guard(isa);
    for (int64_t dim : kSizes) {
      const int64_t rows = 3, heads = 3, stride = heads * dim + 4;
      const auto x = random_floats(rng, rows * stride, -3, 3);
      auto want = x, got = x;
      l2_norm_ref(want.data(), rows, heads, dim, stride, 1e-6f);
      l2_norm(got.data(), rows, heads, dim, stride, 1e-6f);
      expect_close(got.data(), want.data(), got.size(), 2e-6, 1e-7, "l2_norm " + label(isa, dim));
    }
  }
}

TEST(OpsRef, RmsNormGatedKnownValues) {
  const float x[4] = {1, 2, 3, 4}, z[4] = {0, 1, -1, 2}, w[4] = {1, 0.5f, 2, 1};
  auto silu = [](double v) { return v / (1.0 + std::exp(-v)); };
  float y[4];
  // Norm then gate, one group: y = x / sqrt(mean(x²) + 0) · w · silu(z).
  rms_norm_gated_ref(x, z, w, 0.0f, GateOrder::kNormThenGate, y, 1, 4, 1, 4, 4, 4);
  const double inv = 1.0 / std::sqrt(7.5);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i], x[i] * inv * w[i] * silu(z[i]), 1e-6) << i;
  // Gate then norm, two groups of 2: u = x·silu(z), each pair normalised on its own.
  rms_norm_gated_ref(x, z, w, 0.0f, GateOrder::kGateThenNorm, y, 1, 4, 2, 4, 4, 4);
  for (int g = 0; g < 2; ++g) {
    const double u0 = x[2 * g] * silu(z[2 * g]), u1 = x[2 * g + 1] * silu(z[2 * g + 1]);
    const double ig = 1.0 / std::sqrt((u0 * u0 + u1 * u1) / 2);
    EXPECT_NEAR(y[2 * g], u0 * ig * w[2 * g], 1e-6) << g;
    EXPECT_NEAR(y[2 * g + 1], u1 * ig * w[2 * g + 1], 1e-6) << g;
  }
}

TEST(Ops, RmsNormGatedMatchesRef) {
  std::mt19937 rng(8);
  for (Isa isa : runnable_isas()) {
    IsaGuard guard(isa);
    for (int64_t gd : kSizes) {
      for (int64_t groups : {1, 3}) {
        const int64_t rows = 3, dim = gd * groups, xs = dim + 5, zs = dim + 2, ys = dim + 1;
        const auto x = random_floats(rng, rows * xs, -4, 4);
        const auto z = random_floats(rng, rows * zs, -6, 6);
        const auto w = random_floats(rng, dim, -2, 2);
        for (GateOrder order : {GateOrder::kNormThenGate, GateOrder::kGateThenNorm}) {
          for (const float* wp : {w.data(), static_cast<const float*>(nullptr)}) {
            const std::string what = "rms_norm_gated " + label(isa, gd) + " groups=" + std::to_string(groups) +
                                     (order == GateOrder::kNormThenGate ? " norm-gate" : " gate-norm");
            std::vector<float> want(rows * ys, 0), got(rows * ys, 0);
            rms_norm_gated_ref(x.data(), z.data(), wp, 1e-5f, order, want.data(), rows, dim, groups, xs, zs, ys);
            rms_norm_gated(x.data(), z.data(), wp, 1e-5f, order, got.data(), rows, dim, groups, xs, zs, ys);
            expect_close(got.data(), want.data(), got.size(), 4e-6, 1e-7, what);
            auto inplace = x;  // y == x
            rms_norm_gated(inplace.data(), z.data(), wp, 1e-5f, order, inplace.data(), rows, dim, groups, xs, zs, xs);
            for (int64_t r = 0; r < rows; ++r)
              expect_close(inplace.data() + r * xs, want.data() + r * ys, dim, 4e-6, 1e-7, what + " in place");
          }
        }
      }
    }
  }
}

TEST(Ops, RmsNormGatedRejectsBadGroups) {
  float x[6] = {}, y[6];
  EXPECT_THROW(rms_norm_gated(x, x, nullptr, 1e-5f, GateOrder::kGateThenNorm, y, 1, 6, 4, 6, 6, 6), Error);
  EXPECT_THROW(l2_norm(x, 1, 2, 3, 5, 1e-6f), Error);
}

TEST(Ops, VectorExpAccuracy) {
  std::vector<float> x;
  for (double v = -87.3; v <= 88.0; v += 0.0137) x.push_back(static_cast<float>(v));
  for (float v : {0.0f, -0.0f, 1e-8f, -1e-8f, 0.34657f, -0.34658f, 88.0f}) x.push_back(v);
  const float below[3] = {-87.4f, -1000.0f, -std::numeric_limits<float>::infinity()};
  for (Isa isa : runnable_isas()) {
    IsaGuard guard(isa);
    std::vector<float> y(x.size());
    vec_exp(x.data(), y.data(), static_cast<int64_t>(x.size()));
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = std::exp(static_cast<double>(x[i]));
      worst = std::max(worst, std::fabs(y[i] - want) / want);
    }
    EXPECT_LT(worst, 4e-7) << isa_name(isa);
    if (isa != Isa::kRef) {
      float z[3];
      vec_exp(below, z, 3);
      for (float v : z) EXPECT_EQ(v, 0.0f) << isa_name(isa);
    }
  }
}

}  // namespace
}  // namespace fulgur::kernels

namespace fulgur::kernels {
namespace {

TEST(Ops, ToF16MatchesScalarConversion) {
  std::mt19937 rng(6);
  std::vector<float> x = testing::random_floats(rng, 1000, -70000.0f, 70000.0f);
  auto small = testing::random_floats(rng, 300, -1e-4f, 1e-4f);  // f16 subnormals
  x.insert(x.end(), small.begin(), small.end());
  for (float v : {0.0f, -0.0f, 65504.0f, 65519.0f, 65520.0f, 1e-8f, 5.9604645e-8f, 2.9802322e-8f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()})
    x.push_back(v);
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{17}, static_cast<int64_t>(x.size())}) {
    std::vector<uint16_t> want(n), got(n);
    to_f16_ref(x.data(), want.data(), n);
    for (Isa isa : testing::runnable_isas()) {
      testing::IsaGuard guard(isa);
      std::fill(got.begin(), got.end(), 0xFFFF);
      to_f16(x.data(), got.data(), n);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(got[i], want[i]) << isa_name(isa) << " x=" << x[i] << " n=" << n;
    }
  }
}

}  // namespace
}  // namespace fulgur::kernels
