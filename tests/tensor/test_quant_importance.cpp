// quantize_row_weighted: an importance per column (llama.cpp's imatrix) steers the scale searches
// of the K-quants, IQ4, the codebook types' encoders and Q4_0..Q5_1 types toward the columns that matter. Checked: no importance gives
// quantize_row's bytes; over many random rows with a few heavy columns, the importance-weighted
// error of the weighted quantization is below the unweighted one's; all-zero importance still
// gives a valid, finite encoding; types without a search ignore the importance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/quants.h"

namespace fulgur {
namespace {

constexpr int64_t kN = 512;  // two super-blocks

std::vector<float> random_row(std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(kN);
  for (float& v : x) v = d(rng);
  return x;
}

double weighted_error(DType type, const std::vector<float>& x, const std::vector<uint8_t>& q,
                      const std::vector<float>& imp) {
  std::vector<float> y(kN);
  dequantize_row(type, q.data(), y.data(), kN);
  double e = 0;
  for (int64_t j = 0; j < kN; ++j) e += imp[j] * (x[j] - y[j]) * (x[j] - y[j]);
  return e;
}

const DType kWeighted[] = {DType::kQ4_0, DType::kQ4_1, DType::kQ5_0,  DType::kQ5_1,  DType::kQ2_K, DType::kQ3_K,
                           DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_NL, DType::kIQ4_XS,
                           DType::kIQ3_XXS, DType::kIQ3_S, DType::kIQ2_XXS, DType::kIQ2_XS, DType::kIQ2_S,
                           DType::kIQ1_S, DType::kIQ1_M};

TEST(QuantImportance, NoImportanceIsQuantizeRow) {
  std::mt19937 rng(1);
  const std::vector<float> x = random_row(rng);
  for (DType t : {DType::kQ2_K, DType::kQ4_K, DType::kQ6_K, DType::kIQ4_XS, DType::kQ8_0, DType::kQ4_0}) {
    std::vector<uint8_t> a(row_bytes(t, kN)), b(row_bytes(t, kN));
    quantize_row(t, x.data(), a.data(), kN);
    quantize_row_weighted(t, x.data(), b.data(), kN, nullptr);
    EXPECT_EQ(a, b) << dtype_name(t);
  }
}

TEST(QuantImportance, HeavyColumnsGetSmallerErrors) {
  std::mt19937 rng(7);
  std::vector<float> imp(kN, 1.0f);
  for (int64_t j = 0; j < kN; j += 5) imp[j] = 100.0f;  // one column in five dominates
  for (DType t : kWeighted) {
    EXPECT_TRUE(uses_importance(t)) << dtype_name(t);
    double plain = 0, weighted = 0;
    for (int r = 0; r < 64; ++r) {
      const std::vector<float> x = random_row(rng);
      std::vector<uint8_t> a(row_bytes(t, kN)), b(row_bytes(t, kN));
      quantize_row(t, x.data(), a.data(), kN);
      quantize_row_weighted(t, x.data(), b.data(), kN, imp.data());
      plain += weighted_error(t, x, a, imp);
      weighted += weighted_error(t, x, b, imp);
    }
    std::printf("[%s] importance-weighted error: unweighted search %.4g, weighted search %.4g (%.1f%%)\n",
                std::string(dtype_name(t)).c_str(), plain, weighted, 100.0 * (weighted / plain - 1.0));
    EXPECT_LT(weighted, plain) << dtype_name(t);
  }
}

TEST(QuantImportance, ZeroImportanceStillEncodes) {
  std::mt19937 rng(3);
  const std::vector<float> x = random_row(rng);
  const std::vector<float> zero(kN, 0.0f);
  for (DType t : kWeighted) {
    std::vector<uint8_t> a(row_bytes(t, kN)), b(row_bytes(t, kN));
    quantize_row(t, x.data(), a.data(), kN);
    quantize_row_weighted(t, x.data(), b.data(), kN, zero.data());
    EXPECT_EQ(a, b) << dtype_name(t) << ": no weight anywhere is no weighting";
  }
  EXPECT_FALSE(uses_importance(DType::kQ8_0));
  EXPECT_FALSE(uses_importance(DType::kF16));
}

}  // namespace
}  // namespace fulgur
