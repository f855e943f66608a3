// Dispatch for the reference row converters, and the element-wise (block size 1) types.
#include "tensor/quants.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "tensor/quants_impl.h"

namespace fulgur {
namespace {

template <class T>
void ints_to_floats(const void* src, float* dst, int64_t n) {
  const auto* p = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));  // GGUF rows carry no alignment promise
    dst[i] = static_cast<float>(v);
  }
}

// Round half to even, saturate to T's range, NaN -> 0. The comparisons are made in double so
// that the bounds of int64 (not representable in float) saturate instead of overflowing.
template <class T>
void floats_to_ints(const float* src, void* dst, int64_t n) {
  auto* p = static_cast<uint8_t*>(dst);
  constexpr double kLo = static_cast<double>(std::numeric_limits<T>::min());
  constexpr double kHi = static_cast<double>(std::numeric_limits<T>::max());
  for (int64_t i = 0; i < n; ++i) {
    const double r = std::nearbyint(static_cast<double>(src[i]));
    T v;
    if (std::isnan(r))
      v = 0;
    else if (r <= kLo)
      v = std::numeric_limits<T>::min();
    else if (r >= kHi)  // kHi rounds up to 2^63 for int64: everything at or past it saturates
      v = std::numeric_limits<T>::max();
    else
      v = static_cast<T>(r);
    std::memcpy(p + i * sizeof(T), &v, sizeof(T));
  }
}

void check_n(DType type, int64_t n, const char* what) {
  const DTypeInfo& info = dtype_info(type);
  FULGUR_CHECK(n >= 0 && n % info.block_size == 0, what, ": row length ", n, " for type ",
               info.name, " must be a non-negative multiple of its block size ", info.block_size);
}

}  // namespace

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
  check_n(type, n, "dequantize_row");
  const int64_t nb = n / dtype_info(type).block_size;
  const auto* p = static_cast<const uint8_t*>(src);
  switch (type) {
    case DType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DType::kF64:
      for (int64_t i = 0; i < n; ++i) {
        double v;
        std::memcpy(&v, p + i * 8, 8);
        dst[i] = static_cast<float>(v);
      }
      return;
    case DType::kF16:
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + i * 2, 2);
        dst[i] = type == DType::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      return;
    case DType::kI8:
      return ints_to_floats<int8_t>(src, dst, n);
    case DType::kI16:
      return ints_to_floats<int16_t>(src, dst, n);
    case DType::kI32:
      return ints_to_floats<int32_t>(src, dst, n);
    case DType::kI64:
      return ints_to_floats<int64_t>(src, dst, n);
    case DType::kQ4_0:
      return detail::dequantize_q4_0(src, dst, nb);
    case DType::kQ4_1:
      return detail::dequantize_q4_1(src, dst, nb);
    case DType::kQ5_0:
      return detail::dequantize_q5_0(src, dst, nb);
    case DType::kQ5_1:
      return detail::dequantize_q5_1(src, dst, nb);
    case DType::kQ8_0:
      return detail::dequantize_q8_0(src, dst, nb);
    case DType::kQ8_1:
      return detail::dequantize_q8_1(src, dst, nb);
    case DType::kQ2_K:
      return detail::dequantize_q2_k(src, dst, nb);
    case DType::kQ3_K:
      return detail::dequantize_q3_k(src, dst, nb);
    case DType::kQ4_K:
      return detail::dequantize_q4_k(src, dst, nb);
    case DType::kQ5_K:
      return detail::dequantize_q5_k(src, dst, nb);
    case DType::kQ6_K:
      return detail::dequantize_q6_k(src, dst, nb);
    case DType::kQ8_K:
      return detail::dequantize_q8_k(src, dst, nb);
    case DType::kIQ4_NL:
      return detail::dequantize_iq4_nl(src, dst, nb);
    case DType::kIQ4_XS:
      return detail::dequantize_iq4_xs(src, dst, nb);
    case DType::kIQ2_XXS:
      return detail::dequantize_iq2_xxs(src, dst, nb);
    case DType::kIQ2_XS:
      return detail::dequantize_iq2_xs(src, dst, nb);
    case DType::kIQ2_S:
      return detail::dequantize_iq2_s(src, dst, nb);
    case DType::kIQ3_XXS:
      return detail::dequantize_iq3_xxs(src, dst, nb);
    case DType::kIQ3_S:
      return detail::dequantize_iq3_s(src, dst, nb);
    case DType::kIQ1_S:
      return detail::dequantize_iq1_s(src, dst, nb);
    case DType::kIQ1_M:
      return detail::dequantize_iq1_m(src, dst, nb);
    case DType::kTQ1_0:
      return detail::dequantize_tq1_0(src, dst, nb);
    case DType::kTQ2_0:
      return detail::dequantize_tq2_0(src, dst, nb);
    case DType::kMXFP4:
      return detail::dequantize_mxfp4(src, dst, nb);
    case DType::kNVFP4:
      return detail::dequantize_nvfp4(src, dst, nb);
    default:
      fail("dequantize_row: tensor type ", dtype_name(type), " (id ", static_cast<uint32_t>(type),
           ") is not supported");
  }
}

void quantize_row(DType type, const float* src, void* dst, int64_t n) {
  FULGUR_CHECK(can_quantize(type), "quantize_row: tensor type ", dtype_name(type), " (id ",
               static_cast<uint32_t>(type), ") has no quantizer");
  check_n(type, n, "quantize_row");
  const int64_t nb = n / dtype_info(type).block_size;
  auto* p = static_cast<uint8_t*>(dst);
  switch (type) {
    case DType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DType::kF64:
      for (int64_t i = 0; i < n; ++i) {
        const double v = src[i];
        std::memcpy(p + i * 8, &v, 8);
      }
      return;
    case DType::kF16:
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = type == DType::kF16 ? f32_to_f16(src[i]) : f32_to_bf16(src[i]);
        std::memcpy(p + i * 2, &h, 2);
      }
      return;
    case DType::kI8:
      return floats_to_ints<int8_t>(src, dst, n);
    case DType::kI16:
      return floats_to_ints<int16_t>(src, dst, n);
    case DType::kI32:
      return floats_to_ints<int32_t>(src, dst, n);
    case DType::kI64:
      return floats_to_ints<int64_t>(src, dst, n);
    case DType::kQ4_0:
      return detail::quantize_q4_0(src, dst, nb);
    case DType::kQ4_1:
      return detail::quantize_q4_1(src, dst, nb);
    case DType::kQ5_0:
      return detail::quantize_q5_0(src, dst, nb);
    case DType::kQ5_1:
      return detail::quantize_q5_1(src, dst, nb);
    case DType::kQ8_0:
      return detail::quantize_q8_0(src, dst, nb);
    case DType::kQ8_1:
      return detail::quantize_q8_1(src, dst, nb);
    case DType::kQ2_K:
      return detail::quantize_q2_k(src, dst, nb);
    case DType::kQ3_K:
      return detail::quantize_q3_k(src, dst, nb);
    case DType::kQ4_K:
      return detail::quantize_q4_k(src, dst, nb);
    case DType::kQ5_K:
      return detail::quantize_q5_k(src, dst, nb);
    case DType::kQ6_K:
      return detail::quantize_q6_k(src, dst, nb);
    case DType::kQ8_K:
      return detail::quantize_q8_k(src, dst, nb);
    case DType::kIQ4_NL:
      return detail::quantize_iq4_nl(src, dst, nb);
    case DType::kIQ4_XS:
      return detail::quantize_iq4_xs(src, dst, nb);
    case DType::kIQ3_XXS:
      return detail::quantize_iq3_xxs(src, dst, nb);
    case DType::kIQ3_S:
      return detail::quantize_iq3_s(src, dst, nb);
    case DType::kIQ2_XXS:
      return detail::quantize_iq2_xxs(src, dst, nb);
    case DType::kIQ2_XS:
      return detail::quantize_iq2_xs(src, dst, nb);
    case DType::kIQ2_S:
      return detail::quantize_iq2_s(src, dst, nb);
    case DType::kIQ1_S:
      return detail::quantize_iq1_s(src, dst, nb);
    case DType::kIQ1_M:
      return detail::quantize_iq1_m(src, dst, nb);
    case DType::kTQ1_0:
      return detail::quantize_tq1_0(src, dst, nb);
    case DType::kTQ2_0:
      return detail::quantize_tq2_0(src, dst, nb);
    case DType::kMXFP4:
      return detail::quantize_mxfp4(src, dst, nb);
    case DType::kNVFP4:
      return detail::quantize_nvfp4(src, dst, nb);
    default:
      break;
  }
  fail("quantize_row: unreachable for type ", dtype_name(type));
}

bool uses_importance(DType type) {
  switch (type) {
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kIQ4_NL:
    case DType::kIQ4_XS:
    case DType::kIQ3_XXS:
    case DType::kIQ3_S:
    case DType::kIQ2_XXS:
    case DType::kIQ2_XS:
    case DType::kIQ2_S:
    case DType::kIQ1_S:
    case DType::kIQ1_M:
      return true;
    default:
      return false;
  }
}

void quantize_row_weighted(DType type, const float* src, void* dst, int64_t n, const float* importance) {
  if (importance == nullptr || !uses_importance(type)) return quantize_row(type, src, dst, n);
  check_n(type, n, "quantize_row_weighted");
  const int64_t block = dtype_info(type).block_size, nb = n / block;
  // Weight of element j: importance[j] * sqrt(sigma2 + x_j^2), sigma2 the block's mean square
  // (llama.cpp's K-quant weighting), so that large values count more even where the importance is flat.
  std::vector<float> w(static_cast<size_t>(n));
  for (int64_t b = 0; b < nb; ++b) {
    const float* x = src + b * block;
    double sum2 = 0;
    for (int64_t j = 0; j < block; ++j) sum2 += static_cast<double>(x[j]) * x[j];
    const double sigma2 = sum2 / static_cast<double>(block);
    for (int64_t j = 0; j < block; ++j) {
      const double imp = importance[b * block + j];
      w[static_cast<size_t>(b * block + j)] =
          static_cast<float>(std::fmax(imp, 0.0) * std::sqrt(sigma2 + static_cast<double>(x[j]) * x[j]));
    }
  }
  switch (type) {
    case DType::kQ4_0:
      return detail::quantize_q4_0(src, dst, nb, w.data());
    case DType::kQ4_1:
      return detail::quantize_q4_1(src, dst, nb, w.data());
    case DType::kQ5_0:
      return detail::quantize_q5_0(src, dst, nb, w.data());
    case DType::kQ5_1:
      return detail::quantize_q5_1(src, dst, nb, w.data());
    case DType::kQ2_K:
      return detail::quantize_q2_k(src, dst, nb, w.data());
    case DType::kQ3_K:
      return detail::quantize_q3_k(src, dst, nb, w.data());
    case DType::kQ4_K:
      return detail::quantize_q4_k(src, dst, nb, w.data());
    case DType::kQ5_K:
      return detail::quantize_q5_k(src, dst, nb, w.data());
    case DType::kQ6_K:
      return detail::quantize_q6_k(src, dst, nb, w.data());
    case DType::kIQ4_NL:
      return detail::quantize_iq4_nl(src, dst, nb, w.data());
    case DType::kIQ4_XS:
      return detail::quantize_iq4_xs(src, dst, nb, w.data());
    case DType::kIQ3_XXS:
      return detail::quantize_iq3_xxs(src, dst, nb, w.data());
    case DType::kIQ3_S:
      return detail::quantize_iq3_s(src, dst, nb, w.data());
    case DType::kIQ2_XXS:
      return detail::quantize_iq2_xxs(src, dst, nb, w.data());
    case DType::kIQ2_XS:
      return detail::quantize_iq2_xs(src, dst, nb, w.data());
    case DType::kIQ2_S:
      return detail::quantize_iq2_s(src, dst, nb, w.data());
    case DType::kIQ1_S:
      return detail::quantize_iq1_s(src, dst, nb, w.data());
    case DType::kIQ1_M:
      return detail::quantize_iq1_m(src, dst, nb, w.data());
    default:
      break;
  }
  fail("quantize_row_weighted: unreachable for type ", dtype_name(type));
}

bool can_quantize(DType type) {
  switch (type) {
    case DType::kF32:
    case DType::kF64:
    case DType::kF16:
    case DType::kBF16:
    case DType::kI8:
    case DType::kI16:
    case DType::kI32:
    case DType::kI64:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ8_0:
    case DType::kQ8_1:
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kQ8_K:
    case DType::kIQ4_NL:
    case DType::kIQ4_XS:
    case DType::kIQ3_XXS:
    case DType::kIQ3_S:
    case DType::kIQ2_XXS:
    case DType::kIQ2_XS:
    case DType::kIQ2_S:
    case DType::kIQ1_S:
    case DType::kIQ1_M:
    case DType::kTQ1_0:
    case DType::kTQ2_0:
    case DType::kMXFP4:
    case DType::kNVFP4:
      return true;
    default:
      return false;
  }
}

}  // namespace fulgur
