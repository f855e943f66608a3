#include "tensor/dtype.h"

#include <array>
#include <cctype>

#include "core/error.h"

namespace fulgur {
namespace {

// Block sizes and bytes per block from ggml's type traits (reference/archs-gguf.md §1.6).
constexpr std::array<DTypeInfo, 33> kTypes = {{
    {DType::kF32, "f32", 1, 4, true},
    {DType::kF16, "f16", 1, 2, true},
    {DType::kQ4_0, "q4_0", 32, 18, true},
    {DType::kQ4_1, "q4_1", 32, 20, true},
    {DType::kQ5_0, "q5_0", 32, 22, true},
    {DType::kQ5_1, "q5_1", 32, 24, true},
    {DType::kQ8_0, "q8_0", 32, 34, true},
    {DType::kQ8_1, "q8_1", 32, 36, false},
    {DType::kQ2_K, "q2_K", 256, 84, true},
    {DType::kQ3_K, "q3_K", 256, 110, true},
    {DType::kQ4_K, "q4_K", 256, 144, true},
    {DType::kQ5_K, "q5_K", 256, 176, true},
    {DType::kQ6_K, "q6_K", 256, 210, true},
    {DType::kQ8_K, "q8_K", 256, 292, true},
    {DType::kIQ2_XXS, "iq2_xxs", 256, 66, true},
    {DType::kIQ2_XS, "iq2_xs", 256, 74, true},
    {DType::kIQ3_XXS, "iq3_xxs", 256, 98, true},
    {DType::kIQ1_S, "iq1_s", 256, 50, true},
    {DType::kIQ4_NL, "iq4_nl", 32, 18, true},
    {DType::kIQ3_S, "iq3_s", 256, 110, true},
    {DType::kIQ2_S, "iq2_s", 256, 82, true},
    {DType::kIQ4_XS, "iq4_xs", 256, 136, true},
    {DType::kI8, "i8", 1, 1, true},
    {DType::kI16, "i16", 1, 2, true},
    {DType::kI32, "i32", 1, 4, true},
    {DType::kI64, "i64", 1, 8, true},
    {DType::kF64, "f64", 1, 8, false},
    {DType::kIQ1_M, "iq1_m", 256, 56, true},
    {DType::kBF16, "bf16", 1, 2, true},
    {DType::kTQ1_0, "tq1_0", 256, 54, true},
    {DType::kTQ2_0, "tq2_0", 256, 66, true},
    {DType::kMXFP4, "mxfp4", 32, 17, true},
    {DType::kNVFP4, "nvfp4", 64, 36, true},
}};

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

}  // namespace

const DTypeInfo* find_dtype(uint32_t id) {
  for (const DTypeInfo& info : kTypes) {
    if (static_cast<uint32_t>(info.type) == id) return &info;
  }
  return nullptr;
}

const DTypeInfo* find_dtype(std::string_view name) {
  for (const DTypeInfo& info : kTypes) {
    if (iequal(info.name, name)) return &info;
  }
  return nullptr;
}

const DTypeInfo& dtype_info(DType type) {
  const DTypeInfo* info = find_dtype(static_cast<uint32_t>(type));
  FULGUR_CHECK(info != nullptr, "unknown tensor type id ", static_cast<uint32_t>(type));
  return *info;
}

}  // namespace fulgur
