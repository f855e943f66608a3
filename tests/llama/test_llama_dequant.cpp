// ggml's own row decoders as the oracle of fulgur's, bit for bit: the codebook types (IQ2_XXS,
// IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M), whose grids and sign table fulgur carries as data
// (tensor/iq_grids.cpp), and the ternary TQ1_0 / TQ2_0. Blocks of random bytes (every grid
// index, sign pattern and scale field reached) with a finite f16 super-scale of either sign go
// through dequantize_row_* of the libggml-base that node-llama-cpp ships next to its libllama
// (dlopened, nothing linked) and through fulgur's dequantize_row. The ternary quantizers are
// also compared with ggml's reference ones byte for byte.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "llama/llama_oracle.h"
#include "tensor/dtype.h"
#include "tensor/quants.h"

namespace fulgur::test {
namespace {

using DequantFn = void (*)(const void* x, float* y, int64_t k);
using QuantFn = void (*)(const float* x, void* y, int64_t k);

class LlamaDequant : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string lib = llama_library();
    if (lib.empty()) GTEST_SKIP() << kNoLibllama;
    const std::string base = (std::filesystem::path(lib).parent_path() / "libggml-base.so").string();
    handle_ = dlopen(base.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << "cannot load " << base << ": " << dlerror();
  }
  void TearDown() override {
    if (handle_ != nullptr) dlclose(handle_);
  }
  template <class Fn>
  Fn symbol(const std::string& name) {
    auto f = reinterpret_cast<Fn>(dlsym(handle_, name.c_str()));
    EXPECT_NE(f, nullptr) << "libggml-base.so does not export " << name;
    return f;
  }
  void* handle_ = nullptr;
};

// Offset of the f16 super-scale in a block (IQ1_M spreads it over its scale words: see below).
int64_t scale_offset(DType t) { return t == DType::kTQ1_0 ? 52 : t == DType::kTQ2_0 ? 64 : 0; }

std::vector<uint8_t> random_blocks(DType type, int64_t nb, uint32_t seed) {
  const DTypeInfo& info = dtype_info(type);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mag(1e-3f, 4.0f);
  std::vector<uint8_t> b(static_cast<size_t>(nb * info.type_size));
  for (auto& v : b) v = static_cast<uint8_t>(rng() & 0xFF);
  for (int64_t i = 0; i < nb; ++i) {
    uint8_t* p = b.data() + i * info.type_size;
    const uint16_t d = f32_to_f16(rng() % 2 ? -mag(rng) : mag(rng));
    if (type == DType::kIQ1_M) {  // nibble k of d tops the LE u16 scale word k (bytes 48..55)
      for (int k = 0; k < 4; ++k) p[49 + 2 * k] = static_cast<uint8_t>((p[49 + 2 * k] & 0x0F) | (((d >> (4 * k)) & 0xF) << 4));
    } else {
      std::memcpy(p + scale_offset(type), &d, 2);
    }
  }
  return b;
}

TEST_F(LlamaDequant, CodebookAndTernaryTypesMatchGgmlBitForBit) {
  constexpr int64_t kBlocks = 64;  // 16384 elements per type
  uint32_t seed = 500;
  for (DType type : {DType::kIQ3_XXS, DType::kIQ3_S, DType::kIQ2_XXS, DType::kIQ2_XS, DType::kIQ2_S, DType::kIQ1_S,
                     DType::kIQ1_M, DType::kTQ2_0, DType::kTQ1_0}) {
    const std::string name(dtype_name(type));
    const auto theirs = symbol<DequantFn>("dequantize_row_" + name);
    if (theirs == nullptr) continue;
    const std::vector<uint8_t> blocks = random_blocks(type, kBlocks, ++seed);
    const int64_t n = kBlocks * 256;
    std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
    theirs(blocks.data(), a.data(), n);
    dequantize_row(type, blocks.data(), b.data(), n);
    int mismatches = 0;
    for (int64_t i = 0; i < n && mismatches < 5; ++i)
      if (std::memcmp(&a[static_cast<size_t>(i)], &b[static_cast<size_t>(i)], 4) != 0) {
        ADD_FAILURE() << name << " element " << i << ": ggml " << a[static_cast<size_t>(i)] << ", fulgur "
                      << b[static_cast<size_t>(i)];
        ++mismatches;
      }
  }
}

TEST_F(LlamaDequant, TernaryQuantizersWriteGgmlsBytes) {
  constexpr int64_t n = 16 * 256;
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = nd(rng);
  for (int64_t i = 0; i < 256; ++i) x[static_cast<size_t>(i)] = 0.0f;  // an all-zero block: d = 0
  for (DType type : {DType::kTQ2_0, DType::kTQ1_0}) {
    const std::string name(dtype_name(type));
    const auto theirs = symbol<QuantFn>("quantize_row_" + name + "_ref");
    if (theirs == nullptr) continue;
    std::vector<uint8_t> a(row_bytes(type, n)), b(a.size());
    theirs(x.data(), a.data(), n);
    quantize_row(type, x.data(), b.data(), n);
    EXPECT_EQ(a, b) << name;
  }
}

using QuantizeChunkFn = size_t (*)(int type, const float* src, void* dst, int64_t start, int64_t nrows,
                                   int64_t n_per_row, const float* imatrix);

// sum over the rows of imp[j] * (x - dequant(q))^2 (imp null: 1 each), fulgur's dequantizer.
double weighted_error(DType type, const std::vector<float>& x, const std::vector<uint8_t>& q, int64_t n_per_row,
                      const float* imp) {
  const int64_t rows = static_cast<int64_t>(x.size()) / n_per_row;
  const size_t rb = row_bytes(type, n_per_row);
  std::vector<float> y(static_cast<size_t>(n_per_row));
  double e = 0;
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row(type, q.data() + static_cast<size_t>(r) * rb, y.data(), n_per_row);
    for (int64_t j = 0; j < n_per_row; ++j) {
      const double d = x[static_cast<size_t>(r * n_per_row + j)] - y[static_cast<size_t>(j)];
      e += (imp != nullptr ? imp[j] : 1.0) * d * d;
    }
  }
  return e;
}

// Rows of a heavy-tailed distribution (a Gaussian whose spread varies per element, as trained
// weights have a few large ones) and a log-normal importance per column, as imatrix values are.
struct EncoderCase {
  std::vector<float> x, imp;
  int64_t n_per_row = 0;
};
EncoderCase encoder_case(int64_t rows, int64_t n_per_row, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  EncoderCase c;
  c.n_per_row = n_per_row;
  c.x.resize(static_cast<size_t>(rows * n_per_row));
  for (float& v : c.x) v = nd(rng) * std::exp(0.5f * nd(rng));
  c.imp.resize(static_cast<size_t>(n_per_row));
  for (float& v : c.imp) v = std::exp(nd(rng));
  return c;
}

// fulgur's error over ggml's, quantizing c's rows with (imatrix true) or without its importance.
double error_ratio(QuantizeChunkFn ggml, DType type, const EncoderCase& c, bool imatrix) {
  const int64_t rows = static_cast<int64_t>(c.x.size()) / c.n_per_row;
  const size_t rb = row_bytes(type, c.n_per_row);
  std::vector<uint8_t> theirs(rb * static_cast<size_t>(rows)), ours(theirs.size());
  const float* imp = imatrix ? c.imp.data() : nullptr;
  ggml(static_cast<int>(type), c.x.data(), theirs.data(), 0, rows, c.n_per_row, imp);
  for (int64_t r = 0; r < rows; ++r) {
    quantize_row_weighted(type, c.x.data() + r * c.n_per_row, ours.data() + static_cast<size_t>(r) * rb,
                          c.n_per_row, imp);
  }
  const double e_theirs = weighted_error(type, c.x, theirs, c.n_per_row, imp);
  const double e_ours = weighted_error(type, c.x, ours, c.n_per_row, imp);
  std::printf("%-8s %s: fulgur %.4g, ggml %.4g, ratio %.3f\n", std::string(dtype_name(type)).c_str(),
              imatrix ? "imatrix" : "plain  ", e_ours, e_theirs, e_ours / e_theirs);
  return e_ours / e_theirs;
}

TEST_F(LlamaDequant, CodebookEncodersErrorWithinGgmls) {
  const auto chunk = symbol<QuantizeChunkFn>("ggml_quantize_chunk");
  ASSERT_NE(chunk, nullptr);
  const EncoderCase c = encoder_case(24, 768, 77);  // 3 super-blocks per row
  // IQ3_XXS and IQ3_S quantize without an importance matrix too (ggml weights by x^2 then);
  // the IQ2 types require one in ggml.
  for (DType type : {DType::kIQ3_XXS, DType::kIQ3_S}) EXPECT_LE(error_ratio(chunk, type, c, false), 1.05);
  for (DType type : {DType::kIQ3_XXS, DType::kIQ3_S, DType::kIQ2_XXS, DType::kIQ2_XS, DType::kIQ2_S, DType::kIQ1_S,
                     DType::kIQ1_M})
    EXPECT_LE(error_ratio(chunk, type, c, true), 1.05) << dtype_name(type);
}

}  // namespace
}  // namespace fulgur::test
