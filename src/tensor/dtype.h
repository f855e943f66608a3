// The ggml tensor types: ids as stored in GGUF, block sizes and bytes per block
// (reference/archs-gguf.md §1.6). Every id ggml has ever assigned and still defines is
// known here, so `fulgur inspect` can describe any file; `computable` marks the types fulgur
// can dequantize and multiply.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace fulgur {

enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
  kNVFP4 = 40,
};

struct DTypeInfo {
  DType type;
  std::string_view name;  // ggml's spelling: "q4_K", "f16", ...
  int64_t block_size;     // elements per block
  int64_t type_size;      // bytes per block
  bool computable;        // fulgur can dequantize it and use it as a matmul weight
};

// nullptr for an id ggml does not define (or has removed).
const DTypeInfo* find_dtype(uint32_t id);
// Info of a known type.
const DTypeInfo& dtype_info(DType type);
// Case-insensitive lookup by name ("q8_0", "Q4_K"); nullptr if unknown.
const DTypeInfo* find_dtype(std::string_view name);

inline std::string_view dtype_name(DType type) { return dtype_info(type).name; }
// Bytes of one row of n elements; n must be a multiple of the block size.
inline size_t row_bytes(DType type, int64_t n) {
  const DTypeInfo& info = dtype_info(type);
  return static_cast<size_t>(n / info.block_size * info.type_size);
}

}  // namespace fulgur
