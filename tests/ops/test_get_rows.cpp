// get_rows: every runnable ISA bitwise against dequantize_row, for the optimized types and a
// couple that fall back, with random (valid) blocks; out-of-range ids throw.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "kernels/ops.h"
#include "ops_test_util.h"
#include "tensor/dtype.h"

namespace fulgur::kernels {
namespace {

using testing::expect_bitwise;
using testing::IsaGuard;
using testing::runnable_isas;

// Random bytes for every block, then the fp16 scale fields overwritten with sane values
// (random bits could make them inf/NaN). Offsets per archs-gguf.md §1.7.
std::vector<uint8_t> random_table(DType type, int64_t rows, int64_t cols, std::mt19937& rng) {
  const DTypeInfo& info = dtype_info(type);
  const size_t rb = row_bytes(type, cols);
  std::vector<uint8_t> t(rb * rows);
  std::uniform_real_distribution<float> val(-2.0f, 2.0f), scale(0.001f, 0.05f);
  auto put16 = [&](uint8_t* p, uint16_t h) { std::memcpy(p, &h, 2); };
  if (type == DType::kF32) {
    for (size_t i = 0; i < t.size(); i += 4) {
      const float f = val(rng);
      std::memcpy(&t[i], &f, 4);
    }
    return t;
  }
  if (type == DType::kF16 || type == DType::kBF16) {
    for (size_t i = 0; i < t.size(); i += 2)
      put16(&t[i], type == DType::kF16 ? f32_to_f16(val(rng)) : f32_to_bf16(val(rng)));
    return t;
  }
  for (auto& b : t) b = static_cast<uint8_t>(rng());
  const int64_t nb = static_cast<int64_t>(t.size()) / info.type_size;
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* blk = t.data() + b * info.type_size;
    switch (type) {
      case DType::kQ8_0:
      case DType::kQ4_0:
        put16(blk, f32_to_f16(scale(rng)));
        break;
      case DType::kQ4_K:
      case DType::kQ5_K:
        put16(blk, f32_to_f16(scale(rng)));
        put16(blk + 2, f32_to_f16(scale(rng)));
        break;
      case DType::kQ6_K:
        put16(blk + 208, f32_to_f16(scale(rng)));
        break;
      default:
        ADD_FAILURE() << "no scale layout for " << info.name;
    }
  }
  return t;
}

TEST(GetRows, MatchesDequantizeRowBitwise) {
  std::mt19937 rng(20);
  const DType types[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0,
                         DType::kQ4_K, DType::kQ6_K, DType::kQ4_0, DType::kQ5_K};
  for (DType type : types) {
    const int64_t bs = dtype_info(type).block_size;
    for (int64_t cols : {bs, 3 * bs, bs == 1 ? int64_t{17} : 4 * bs, bs == 1 ? int64_t{4096} : 16 * bs}) {
      const int64_t rows = 9;
      const auto table = random_table(type, rows, cols, rng);
      const size_t rb = row_bytes(type, cols);
      const int32_t ids[5] = {8, 0, 3, 3, 7};
      const int64_t ldo = cols + 3;
      std::vector<float> want(5 * ldo, -1.0f);
      get_rows_ref(type, table.data(), rb, rows, cols, ids, 5, want.data(), ldo);
      for (Isa isa : runnable_isas()) {
        IsaGuard guard(isa);
        std::vector<float> got(5 * ldo, -1.0f);
        get_rows(type, table.data(), rb, rows, cols, ids, 5, got.data(), ldo);
        expect_bitwise(got.data(), want.data(), got.size(),
                       std::string("get_rows ") + std::string(dtype_name(type)) + " " +
                           isa_name(isa) + " cols=" + std::to_string(cols));
      }
    }
  }
}

TEST(GetRows, RejectsBadIdsAndShapes) {
  std::vector<float> table(4 * 8, 1.0f), out(8);
  const int32_t bad[1] = {4}, neg[1] = {-1};
  for (Isa isa : runnable_isas()) {
    IsaGuard guard(isa);
    EXPECT_THROW(get_rows(DType::kF32, table.data(), 32, 4, 8, bad, 1, out.data(), 8), Error);
    EXPECT_THROW(get_rows(DType::kF32, table.data(), 32, 4, 8, neg, 1, out.data(), 8), Error);
    const int32_t ok[1] = {0};
    EXPECT_THROW(get_rows(DType::kQ8_0, table.data(), 34, 4, 8, ok, 1, out.data(), 8), Error);
  }
}

}  // namespace
}  // namespace fulgur::kernels
