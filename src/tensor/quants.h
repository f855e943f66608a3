// Reference (scalar) conversion of rows between f32 and every computable type, with ggml's
// exact block layouts (reference/archs-gguf.md §1.7). These define the semantics every SIMD
// kernel is tested against.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace fulgur {

// dst[0..n) = the values of the n elements at src. n must be a multiple of the block size.
// Integer types convert their values to float.
void dequantize_row(DType type, const void* src, float* dst, int64_t n);

// Writes n elements of src into row_bytes(type, n) bytes at dst, rounding to the nearest
// representable values the type's scheme picks. Throws for types without a quantizer.
void quantize_row(DType type, const float* src, void* dst, int64_t n);

// Whether quantize_row supports `type`.
bool can_quantize(DType type);

}  // namespace fulgur
