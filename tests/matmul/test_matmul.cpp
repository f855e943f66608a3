// matmul: every ISA path this CPU can run against matmul_ref, for every weight type, odd shapes
// and batch sizes; thread-count and batch-size invariance; argument errors.
//
// Tolerances (err = |y - y_ref| for one output, x = the activation row, w = the dequantized
// weight row):
//  - F32 / F16 / BF16 (f32 FMA, activations used as given): only the summation order differs
//    from the double-precision reference, so err <= 2e-5 * sum_i |x_i w_i| (about K/32 + 32
//    dependent roundings of 2^-24 each for K <= 4096 — 1e-5 — with a factor 2 of margin).
//  - int8 paths: each activation block of 32 is rounded to q = round(x / d), d = amax / 127, so
//    e_i = x_i - d q_i has |e_i| <= d / 2 = amax / 254. Then |sum_i w_i e_i| <= |w| |e| and
//    |e|^2 <= sum_blocks 32 (amax / 254)^2 <= (32 / 254^2) |x|^2, i.e. err <= 0.0223 |x| |w|:
//    a hard bound, checked at 0.025 |x| |w|. The codebook and ternary types quantize blocks of
//    256 (act_block): the same argument gives 0.063 |x| |w|, checked at 0.025 sqrt(8) |x| |w|.
//    It is loose, so the RMS over all outputs of
//    err / (|x| |w|) is also checked: for random x the rounding errors are independent and
//    uniform, giving about d_rms / (sqrt(12) x_rms) ~ 2.2 / (127 * 3.46) ~ 0.005; checked < 0.01.
//  - int8 paths with activations that are exact in int8 (integers, one +-127 per block so
//    d = 1): the quantization is lossless, the integer dot products exact, and only the f32
//    scale products and sums round; the offset/min correction cancels terms up to 128x the
//    element size, so err <= 1e-4 * sum_i |x_i w_i|. This is the sharp test: any indexing,
//    nibble-order or scale-mapping mistake shows up as errors of order 1/blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <random>
#include <vector>

#include "core/cpu.h"
#include "core/error.h"
#include "isa_coverage.h"
#include "kernels/dispatch.h"
#include "kernels/matmul.h"
#include "kernels/packed.h"
#include "matmul/matmul_fixtures.h"
#include "tensor/quants.h"

namespace fulgur::kernels {
namespace {

// Every matmul test in this binary (test_matmul, test_matmul_grouped) loops over fast_isas()
// (matmul_fixtures.h); these say when an ISA is left out.
TEST(IsaCoverage, Avx2) {
  testing_support::expect_runnable_or_skip(Isa::kAvx2, "the AVX2 matmul kernels and their 16-row tile kernels (Q8_0, Q4_0, IQ4_NL, IQ4_XS, Q4_K, Q5_K, Q6_K tiles)");
}

TEST(IsaCoverage, Avx512) {
  testing_support::expect_runnable_or_skip(
      Isa::kAvx512, "the AVX-512 matmul kernels and the 16-row packed layouts (Q8_0, Q4_K, Q5_K, Q6_K tiles)");
}

struct Shape {
  int64_t rows, cols;
};

// Runs every fast ISA over the batch sizes and compares with the reference.
void check_type(DType type, const Shape& s, bool exact, uint32_t seed) {
  static const int64_t kNs[] = {1, 2, 3, 5, 7, 8, 9, 16, 17, 33, 100};
  const int64_t nmax = 100, ldx = s.cols + 3, ldy = s.rows + 5;
  const Weights w = make_weights(type, s.rows, s.cols, seed, /*pad=*/seed % 2 ? 6 : 0);
  const std::vector<float> x = make_x(nmax, s.cols, ldx, seed + 1, exact);
  std::vector<float> yref(static_cast<size_t>(nmax * ldy), 0.0f);
  matmul_ref(w.view, x.data(), nmax, ldx, yref.data(), ldy, nullptr);

  std::vector<OutputNorms> norms(static_cast<size_t>(nmax * s.rows));  // [nmax][rows]
  for (int64_t r = 0; r < nmax; ++r)
    for (int64_t o = 0; o < s.rows; ++o)
      norms[static_cast<size_t>(r * s.rows + o)] =
          output_norms(x.data() + r * ldx, w.deq.data() + o * s.cols, s.cols, w.view.scale);

  IsaGuard guard;
  for (const Variant& v : variants(w.view)) {
    const Isa isa = v.isa;
    set_active_isa(isa);
    for (int64_t n : kNs) {
      std::vector<float> y(static_cast<size_t>(n * ldy), -7.0f);  // sentinel in the ldy padding
      matmul(v.view(), x.data(), n, ldx, y.data(), ldy, nullptr);
      double worst = 0, sum_sq = 0;
      for (int64_t r = 0; r < n; ++r) {
        for (int64_t o = s.rows; o < ldy; ++o)
          ASSERT_EQ(y[static_cast<size_t>(r * ldy + o)], -7.0f) << "wrote past rows";
        for (int64_t o = 0; o < s.rows; ++o) {
          const size_t k = static_cast<size_t>(r * s.rows + o);
          const double err = std::fabs(static_cast<double>(y[static_cast<size_t>(r * ldy + o)]) -
                                       yref[static_cast<size_t>(r * ldy + o)]);
          ASSERT_TRUE(std::isfinite(err)) << "r=" << r << " o=" << o;
          const double bound = error_bound(type, exact, norms[k]), l2 = norms[k].l2;
          worst = std::max(worst, err / bound);
          if (!exact && !is_float_type(type) && l2 > 0) sum_sq += (err / l2) * (err / l2);
          ASSERT_LE(err, bound) << v.name() << " " << dtype_name(type) << " rows=" << s.rows
                                << " cols=" << s.cols << " n=" << n << " r=" << r << " o=" << o
                                << " y=" << y[static_cast<size_t>(r * ldy + o)]
                                << " ref=" << yref[static_cast<size_t>(r * ldy + o)];
        }
      }
      if (!exact && !is_float_type(type)) {
        const double rms = std::sqrt(sum_sq / static_cast<double>(n * s.rows));
        EXPECT_LT(rms, 0.01) << v.name() << " " << dtype_name(type) << " n=" << n;
      }
    }
  }
}

std::vector<Shape> shapes_for(DType type) {
  const int64_t bs = dtype_info(type).block_size;
  const int64_t b = bs == 1 ? 16 : bs;  // float types: also try cols that are no multiple of 16
  std::vector<Shape> out;
  const int64_t cols_list[] = {bs == 1 ? 7 : b, 2 * b + (bs == 1 ? 3 : 0), 3 * b, 4 * b,
                               bs == 256 ? 2048 : (bs == 64 ? 1088 : 1056)};
  const int64_t rows_list[] = {1, 3, 17, 67};
  for (int64_t c : cols_list)
    for (int64_t r : rows_list) out.push_back({r, c});
  return out;
}

class MatmulTypes : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulTypes, RandomActivationsMatchReference) {
  uint32_t seed = 1000 + static_cast<uint32_t>(GetParam());
  for (const Shape& s : shapes_for(GetParam())) check_type(GetParam(), s, false, seed++);
}

TEST_P(MatmulTypes, Int8ExactActivationsMatchReferenceTightly) {
  if (is_float_type(GetParam())) GTEST_SKIP() << "no activation quantization on this path";
  uint32_t seed = 2000 + static_cast<uint32_t>(GetParam());
  for (const Shape& s : shapes_for(GetParam())) check_type(GetParam(), s, true, seed++);
}

// Each output must not depend on the thread count nor on the other rows of the batch (the
// model's plain-vs-batched equality builds on this), bit for bit.
TEST_P(MatmulTypes, ThreadAndBatchInvariant) {
  const DType type = GetParam();
  const int64_t cols = dtype_info(type).block_size == 256 ? 512 : 320, rows = 67, n = 33;
  const Weights w = make_weights(type, rows, cols, 77);
  const std::vector<float> x = make_x(n, cols, cols, 78, false);
  ThreadPool one(1), two(2);
  IsaGuard guard;
  for (const Variant& v : variants(w.view)) {
    set_active_isa(v.isa);
    const WeightView& wv = v.view();
    std::vector<float> y1(static_cast<size_t>(n * rows)), y2(y1.size()), ys(static_cast<size_t>(rows));
    matmul(wv, x.data(), n, cols, y1.data(), rows, &one);
    matmul(wv, x.data(), n, cols, y2.data(), rows, &two);
    EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * 4)) << v.name();
    for (int64_t r : {0, 7, 32}) {
      matmul(wv, x.data() + r * cols, 1, cols, ys.data(), rows, &two);
      EXPECT_EQ(0, std::memcmp(ys.data(), y1.data() + r * rows, ys.size() * 4)) << v.name() << " r=" << r;
    }
    // Every batch size 1..n gives each row the same bits (verification batches of any length).
    for (int64_t m = 2; m <= n; m += m < 12 ? 1 : 7) {
      std::vector<float> ym(static_cast<size_t>(m * rows));
      matmul(wv, x.data(), m, cols, ym.data(), rows, &two);
      EXPECT_EQ(0, std::memcmp(ym.data(), y1.data(), ym.size() * 4)) << v.name() << " n=" << m;
    }
    // Few output rows: the split goes over the activation rows instead.
    WeightView narrow = w.view;
    narrow.rows = 2;
    std::shared_ptr<PackedWeight> narrow_packed;
    if (v.packed) narrow_packed = std::make_shared<PackedWeight>(narrow, nullptr);
    const WeightView& nv = narrow_packed ? narrow_packed->view() : narrow;
    std::vector<float> z1(static_cast<size_t>(n * 2)), z2(z1.size());
    matmul(nv, x.data(), n, cols, z1.data(), 2, &one);
    matmul(nv, x.data(), n, cols, z2.data(), 2, &two);
    EXPECT_EQ(0, std::memcmp(z1.data(), z2.data(), z1.size() * 4)) << v.name();
    for (int64_t r = 0; r < n; ++r)
      for (int64_t o = 0; o < 2; ++o) EXPECT_EQ(z1[r * 2 + o], y1[r * rows + o]) << v.name();
  }
}

// The AVX2 tile kernels take the AVX-512 ones' f32 steps in the same order (their headers): the
// same bits for every output, over partial tiles, odd block counts, column passes (5120 columns
// take two at 4 rows) and batches that split into register tiles unevenly.
TEST(TileKernels, Avx2GivesTheBitsOfAvx512) {
  if (!isa_supported(Isa::kAvx512)) GTEST_SKIP() << "needs an AVX-512 CPU to compare against";
  ThreadPool two(2);
  IsaGuard guard;
  uint32_t seed = 300;
  for (DType type : {DType::kQ8_0, DType::kQ4_0, DType::kIQ4_NL, DType::kIQ4_XS, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    ASSERT_NE(packed_rect(type, Isa::kAvx2), nullptr) << dtype_name(type);
    ASSERT_NE(packed_rect(type, Isa::kAvx512), nullptr) << dtype_name(type);
    const int64_t bs = dtype_info(type).block_size;
    for (int64_t cols : {bs, 3 * bs, bs == 256 ? int64_t{5120} : int64_t{4128}})
      for (int64_t rows : {1, 9, 16, 40}) {
        const Weights w = make_weights(type, rows, cols, ++seed);
        const PackedWeight p(w.view, nullptr);
        for (int64_t n : {1, 3, 4, 5, 8, 9, 17}) {
          const std::vector<float> x = make_x(n, cols, cols, ++seed, false);
          std::vector<float> y2(static_cast<size_t>(n * rows)), y5(y2.size());
          set_active_isa(Isa::kAvx2);
          matmul(p.view(), x.data(), n, cols, y2.data(), rows, &two);
          set_active_isa(Isa::kAvx512);
          matmul(p.view(), x.data(), n, cols, y5.data(), rows, &two);
          EXPECT_EQ(0, std::memcmp(y2.data(), y5.data(), y2.size() * 4))
              << dtype_name(type) << " " << rows << "x" << cols << " n=" << n;
        }
      }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulTypes, ::testing::ValuesIn(kTypes),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(dtype_name(info.param));
                         });

// matmul_many is one op over several matrices: each output bit for bit what a separate matmul
// call gives, whatever the mix of types and layouts.
TEST(Matmul, ManyMatchesSeparateCalls) {
  const Weights a = make_weights(DType::kQ4_K, 67, 512, 31), b = make_weights(DType::kQ6_K, 20, 512, 32);
  const Weights c = make_weights(DType::kF16, 33, 512, 33), d = make_weights(DType::kQ8_0, 3, 512, 34);
  const std::vector<float> x = make_x(40, 512, 515, 35, false);
  ThreadPool two(2);
  IsaGuard guard;
  for (Isa isa : fast_isas()) {
    set_active_isa(isa);
    for (bool pack : {false, true}) {
      std::vector<std::shared_ptr<PackedWeight>> keep;
      std::vector<WeightView> views;
      for (const Weights* w : {&a, &b, &c, &d}) {
        if (pack && packed_rect(w->view.type, isa) != nullptr) {
          keep.push_back(std::make_shared<PackedWeight>(w->view, &two));
          views.push_back(keep.back()->view());
        } else {
          views.push_back(w->view);
        }
      }
      for (int64_t n : {1, 3, 9, 40}) {
        std::vector<std::vector<float>> together(4), alone(4);
        std::vector<MatmulOut> outs;
        for (int k = 0; k < 4; ++k) {
          together[k].assign(static_cast<size_t>(n * (views[k].rows + 1)), -1.0f);
          alone[k] = together[k];
          outs.push_back({&views[k], together[k].data(), views[k].rows + 1});
          matmul(views[k], x.data(), n, 515, alone[k].data(), views[k].rows + 1, &two);
        }
        matmul_many(outs.data(), 4, x.data(), n, 515, &two);
        for (int k = 0; k < 4; ++k)
          EXPECT_EQ(0, std::memcmp(together[k].data(), alone[k].data(), together[k].size() * 4))
              << isa_name(isa) << (pack ? "/packed" : "") << " matrix " << k << " n=" << n;
      }
    }
  }
  WeightView narrow = a.view;
  narrow.cols = 256;
  const MatmulOut bad[] = {{&a.view, nullptr, 67}, {&narrow, nullptr, 67}};
  std::vector<float> y(67 * 2);
  const MatmulOut mixed[] = {{&a.view, y.data(), 67}, {&narrow, y.data() + 67, 67}};
  EXPECT_THROW(matmul_many(mixed, 2, x.data(), 1, 515, &two), Error);  // different cols
  EXPECT_THROW(matmul_many(bad, 0, x.data(), 1, 515, &two), Error);     // no matrix
}

TEST(Matmul, RefMatchesDequantizedProduct) {
  const Weights w = make_weights(DType::kQ4_K, 5, 256, 5);
  const std::vector<float> x = make_x(3, 256, 256, 6, false);
  std::vector<float> y(15);
  ThreadPool two(2);
  matmul_ref(w.view, x.data(), 3, 256, y.data(), 5, &two);
  for (int r = 0; r < 3; ++r)
    for (int o = 0; o < 5; ++o) {
      double acc = 0;
      for (int i = 0; i < 256; ++i) acc += static_cast<double>(x[r * 256 + i]) * w.deq[o * 256 + i];
      EXPECT_FLOAT_EQ(y[r * 5 + o], static_cast<float>(acc));
    }
}

TEST(Matmul, RefPathIsSelectable) {
  const Weights w = make_weights(DType::kQ8_0, 4, 64, 9);
  const std::vector<float> x = make_x(2, 64, 64, 10, false);
  std::vector<float> a(8), b(8);
  IsaGuard guard;
  set_active_isa(Isa::kRef);
  matmul(w.view, x.data(), 2, 64, a.data(), 4, nullptr);
  matmul_ref(w.view, x.data(), 2, 64, b.data(), 4, nullptr);
  EXPECT_EQ(a, b);
}

TEST(Matmul, RejectsUnsupportedTypesAndBadShapes) {
  std::vector<uint8_t> buf(4096);
  std::vector<float> x(512), y(64);
  WeightView w;
  w.data = buf.data();
  w.rows = 2;
  w.cols = 256;
  w.type = DType::kQ8_K;
  w.row_stride = row_bytes(DType::kQ8_K, 256);
  EXPECT_THROW(matmul(w, x.data(), 1, 256, y.data(), 2, nullptr), Error);
  EXPECT_THROW(matmul_ref(w, x.data(), 1, 256, y.data(), 2, nullptr), Error);
  EXPECT_FALSE(matmul_supports(DType::kQ8_1));
  EXPECT_TRUE(matmul_supports(DType::kIQ2_XXS));
  EXPECT_TRUE(matmul_supports(DType::kNVFP4));
  w.type = DType::kQ4_K;
  w.cols = 100;  // not a multiple of 256
  EXPECT_THROW(matmul(w, x.data(), 1, 256, y.data(), 2, nullptr), Error);
  w.cols = 256;
  w.row_stride = 10;  // below one row
  EXPECT_THROW(matmul(w, x.data(), 1, 256, y.data(), 2, nullptr), Error);
  w.row_stride = row_bytes(DType::kQ4_K, 256);
  EXPECT_THROW(matmul(w, x.data(), 1, 100, y.data(), 2, nullptr), Error);  // ldx < cols
  EXPECT_THROW(matmul(w, x.data(), 1, 256, y.data(), 1, nullptr), Error);  // ldy < rows
  EXPECT_NO_THROW(matmul(w, x.data(), 0, 256, y.data(), 2, nullptr));     // empty batch
}

}  // namespace
}  // namespace fulgur::kernels
