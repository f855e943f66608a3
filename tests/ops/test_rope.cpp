// RoPE: exact properties of the reference (identity at position 0, the two pairings, partial
// rotary, YaRN table) and every runnable ISA bitwise against rope_apply_ref.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "kernels/ops.h"
#include "ops_test_util.h"

namespace fulgur::kernels {
namespace {

using testing::expect_bitwise;
using testing::IsaGuard;
using testing::random_floats;
using testing::runnable_isas;

TEST(RopeRef, PositionZeroIsIdentity) {
  std::mt19937 rng(10);
  for (RopeMode mode : {RopeMode::kNeox, RopeMode::kNormal}) {
    const auto x = random_floats(rng, 2 * 3 * 64, -3, 3);
    auto y = x;
    const int32_t pos[2] = {0, 0};
    RopeParams p;
    p.n_rot = 64;
    p.mode = mode;
    rope_ref(y.data(), 2, 3, 64, 3 * 64, pos, p);
    expect_bitwise(y.data(), x.data(), x.size(), "rope at position 0");
  }
}

// head_dim 4, n_rot 4: θ_0 = pos, θ_1 = pos / sqrt(base). Neox rotates (x0, x2) by θ_0 and
// (x1, x3) by θ_1; normal rotates (x0, x1) by θ_0 and (x2, x3) by θ_1.
TEST(RopeRef, NeoxAndNormalPairings) {
  const float x[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  const int32_t pos = 3;
  const double base = 100.0;
  const double t0 = pos, t1 = pos / std::sqrt(base);
  auto rot = [](double a, double b, double t, double* ra, double* rb) {
    *ra = a * std::cos(t) - b * std::sin(t);
    *rb = a * std::sin(t) + b * std::cos(t);
  };
  RopeParams p;
  p.n_rot = 4;
  p.freq_base = static_cast<float>(base);

  double e[4];
  float y[4] = {x[0], x[1], x[2], x[3]};
  p.mode = RopeMode::kNeox;
  rope_ref(y, 1, 1, 4, 4, &pos, p);
  rot(x[0], x[2], t0, &e[0], &e[2]);
  rot(x[1], x[3], t1, &e[1], &e[3]);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i], e[i], 1e-6) << "neox " << i;

  float z[4] = {x[0], x[1], x[2], x[3]};
  p.mode = RopeMode::kNormal;
  rope_ref(z, 1, 1, 4, 4, &pos, p);
  rot(x[0], x[1], t0, &e[0], &e[1]);
  rot(x[2], x[3], t1, &e[2], &e[3]);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(z[i], e[i], 1e-6) << "normal " << i;
  EXPECT_GT(std::fabs(y[1] - z[1]), 0.1f) << "the two pairings must differ";
}

TEST(RopeRef, PartialRotaryKeepsTailAndNorms) {
  std::mt19937 rng(11);
  const int64_t hd = 80, n_rot = 32, heads = 2;
  const auto x = random_floats(rng, heads * hd, -2, 2);
  for (RopeMode mode : {RopeMode::kNeox, RopeMode::kNormal}) {
    auto y = x;
    const int32_t pos = 1234;
    RopeParams p;
    p.n_rot = n_rot;
    p.mode = mode;
    p.freq_base = 1e6f;
    rope_ref(y.data(), 1, heads, hd, heads * hd, &pos, p);
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = n_rot; i < hd; ++i) EXPECT_EQ(y[h * hd + i], x[h * hd + i]);
      for (int64_t i = 0; i < n_rot / 2; ++i) {  // rotations preserve each pair's length
        const int64_t a = mode == RopeMode::kNeox ? i : 2 * i;
        const int64_t b = mode == RopeMode::kNeox ? i + n_rot / 2 : 2 * i + 1;
        const double n0 = std::hypot(x[h * hd + a], x[h * hd + b]);
        const double n1 = std::hypot(y[h * hd + a], y[h * hd + b]);
        EXPECT_NEAR(n0, n1, 1e-5);
      }
    }
  }
}

TEST(RopeRef, CacheLayoutAndYarn) {
  RopeParams p;
  p.n_rot = 8;
  p.freq_base = 10000.0f;
  const int32_t pos = 5;
  std::vector<float> cs(16);
  rope_cache(p, &pos, 1, cs.data());
  // Neox: cos at j and j+4 equal, sin −/+.
  for (int i = 0; i < 4; ++i) {
    const double t = pos * std::pow(10000.0, -2.0 * i / 8);
    EXPECT_NEAR(cs[i], std::cos(t), 1e-7);
    EXPECT_EQ(cs[i + 4], cs[i]);
    EXPECT_NEAR(cs[8 + i], -std::sin(t), 1e-7);
    EXPECT_EQ(cs[8 + i + 4], -cs[8 + i]);
  }
  // freq_factors divide θ.
  const float ff[4] = {1, 2, 4, 8};
  p.freq_factors = ff;
  rope_cache(p, &pos, 1, cs.data());
  EXPECT_NEAR(cs[3], std::cos(pos * std::pow(10000.0, -6.0 / 8) / 8), 1e-7);
  // YaRN: low pairs extrapolate (θ unchanged), high pairs interpolate (θ·freq_scale), and
  // the magnitude is attn_factor·(1 + 0.1 ln(1/freq_scale)).
  p.freq_factors = nullptr;
  p.n_rot = 128;
  p.freq_scale = 0.25f;
  p.ext_factor = 1.0f;
  p.n_ctx_orig = 4096;
  std::vector<float> big(256);
  rope_cache(p, &pos, 1, big.data());
  const double m = 1.0 + 0.1 * std::log(4.0);
  EXPECT_NEAR(big[0], std::cos(5.0) * m, 1e-6);                  // pair 0 (θ = pos)
  const double t63 = pos * std::pow(10000.0, -126.0 / 128) * 0.25;  // pair 63
  EXPECT_NEAR(big[63], std::cos(t63) * m, 1e-6);
  EXPECT_NEAR(big[128 + 63], -std::sin(t63) * m, 1e-6);
}

TEST(Rope, RejectsBadParams) {
  float x[8] = {};
  const int32_t pos = 0;
  RopeParams p;
  p.n_rot = 3;
  EXPECT_THROW(rope(x, 1, 1, 8, 8, &pos, p), Error);
  p.n_rot = 10;  // > head_dim
  EXPECT_THROW(rope(x, 1, 1, 8, 8, &pos, p), Error);
  p.n_rot = 8;
  p.freq_base = 0.0f;
  EXPECT_THROW(rope(x, 1, 1, 8, 8, &pos, p), Error);
}

TEST(Rope, MatchesRefBitwise) {
  std::mt19937 rng(12);
  struct Shape {
    int64_t head_dim, n_rot, heads;
  };
  const Shape shapes[] = {{64, 64, 4},  {80, 80, 3}, {128, 128, 2}, {128, 64, 5},
                          {80, 32, 1},  {6, 6, 7},   {34, 2, 3},    {36, 18, 2},
                          {256, 256, 1}, {100, 40, 3}};
  for (Isa isa : runnable_isas()) {
    IsaGuard guard(isa);
    for (const Shape& s : shapes) {
      for (RopeMode mode : {RopeMode::kNeox, RopeMode::kNormal}) {
        const int64_t rows = 5, stride = s.heads * s.head_dim + 7;
        const auto x = random_floats(rng, rows * stride, -4, 4);
        const int32_t pos[rows] = {0, 1, 17, 4095, 131071};
        RopeParams p;
        p.n_rot = s.n_rot;
        p.mode = mode;
        p.freq_base = 1e6f;
        auto want = x, got = x, got2 = x;
        rope_ref(want.data(), rows, s.heads, s.head_dim, stride, pos, p);
        rope(got.data(), rows, s.heads, s.head_dim, stride, pos, p);
        const std::string what = std::string("rope ") + isa_name(isa) + " hd=" +
                                 std::to_string(s.head_dim) + " rot=" + std::to_string(s.n_rot) +
                                 (mode == RopeMode::kNeox ? " neox" : " normal");
        expect_bitwise(got.data(), want.data(), got.size(), what);
        // The table path gives the same bits.
        std::vector<float> cs(rows * 2 * s.n_rot);
        rope_cache(p, pos, rows, cs.data());
        rope_apply(got2.data(), rows, s.heads, s.head_dim, stride, s.n_rot, mode, cs.data());
        expect_bitwise(got2.data(), want.data(), got2.size(), what + " (cache)");
      }
    }
  }
}

}  // namespace
}  // namespace fulgur::kernels
