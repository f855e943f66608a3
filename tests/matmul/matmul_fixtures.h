// Fixtures the matmul tests share: the weight types, the fast paths this CPU runs (ISA and
// layout), seeded random weights with their dequantized copy, activations, and the error bound
// of one output against matmul_ref.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/cpu.h"
#include "isa_coverage.h"
#include "kernels/dispatch.h"
#include "kernels/matmul.h"
#include "kernels/packed.h"
#include "kernels/quant_act.h"
#include "core/fp16.h"
#include "tensor/quants.h"

namespace fulgur::kernels {

inline const DType kTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0, DType::kQ4_0,
                        DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ2_K, DType::kQ3_K,
                        DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_NL, DType::kIQ4_XS,
                        DType::kMXFP4, DType::kNVFP4, DType::kIQ3_XXS, DType::kIQ3_S, DType::kIQ2_XXS,
                        DType::kIQ2_XS, DType::kIQ2_S, DType::kIQ1_S, DType::kIQ1_M, DType::kTQ2_0,
                        DType::kTQ1_0};

inline bool is_float_type(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

// The SIMD families this CPU runs; one it cannot is logged once (and IsaCoverage.* in
// test_matmul.cpp are skipped for it), with every layout that needs it: the 16-row packed tiles
// have a kernel per ISA.
inline std::vector<Isa> fast_isas() {
  return testing_support::runnable({Isa::kAvx2, Isa::kAvx512},
                                   "matmul kernels of that ISA (and for AVX-512 the packed layouts)");
}

// Restores the process-wide ISA choice after a test switches it.
struct IsaGuard {
  Isa saved = active_isa();
  ~IsaGuard() { set_active_isa(saved); }
};

// One fast path to test: an ISA, and also the 16-row packed copy of the weights
// (kernels/packed.h) when the ISA has a tile kernel for the type.
struct Variant {
  Isa isa;
  const WeightView* rows;
  std::shared_ptr<PackedWeight> packed;  // null: the file's row-major layout
  const WeightView& view() const { return packed ? packed->view() : *rows; }
  std::string name() const { return std::string(isa_name(isa)) + (packed ? "/packed" : ""); }
};

inline std::vector<Variant> variants(const WeightView& w) {
  std::vector<Variant> out;
  for (Isa isa : fast_isas()) {
    out.push_back({isa, &w, nullptr});
    if (packed_rect(w.type, isa) != nullptr)
      out.push_back({isa, &w, std::make_shared<PackedWeight>(w, nullptr)});
  }
  return out;
}

// The codebook and ternary types take random bytes rather than quantize_row (the codebook types
// have no quantizer; random bytes also reach every grid entry, sign pattern and sub-block scale,
// and give the ternary types negative super-scales, which their quantizer never writes).
inline bool random_bytes_type(DType t) {
  switch (t) {
    case DType::kIQ2_XXS: case DType::kIQ2_XS: case DType::kIQ2_S: case DType::kIQ3_XXS:
    case DType::kIQ3_S: case DType::kIQ1_S: case DType::kIQ1_M: case DType::kTQ1_0: case DType::kTQ2_0:
      return true;
    default:
      return false;
  }
}

// One row of random blocks of a random_bytes_type: every byte random but the f16 super-scale,
// set to +-(0.002 .. 0.03) (either sign) so values stay finite and of ordinary size.
inline void random_block_row(DType type, uint8_t* dst, int64_t cols, std::mt19937& rng) {
  const DTypeInfo& info = dtype_info(type);
  std::uniform_real_distribution<float> mag(0.002f, 0.03f);
  for (int64_t b = 0; b < cols / info.block_size; ++b) {
    uint8_t* p = dst + b * info.type_size;
    for (int64_t i = 0; i < info.type_size; ++i) p[i] = static_cast<uint8_t>(rng() & 0xFF);
    const uint16_t d = f32_to_f16(rng() % 2 ? -mag(rng) : mag(rng));
    if (type == DType::kIQ1_M) {  // d's 4 nibbles are the top nibbles of the 4 LE scale words
      for (int k = 0; k < 4; ++k)
        p[49 + 2 * k] = static_cast<uint8_t>((p[49 + 2 * k] & 0x0F) | (((d >> (4 * k)) & 0xF) << 4));
      continue;
    }
    const int64_t off = type == DType::kTQ1_0 ? 52 : type == DType::kTQ2_0 ? 64 : 0;
    p[off] = static_cast<uint8_t>(d & 0xFF);
    p[off + 1] = static_cast<uint8_t>(d >> 8);
  }
}

// A quantized weight matrix with its dequantized copy.
struct Weights {
  std::vector<uint8_t> bytes;  // [rows][stride]
  std::vector<float> deq;      // [rows][cols]
  WeightView view;
};

inline Weights make_weights(DType type, int64_t rows, int64_t cols, uint32_t seed, size_t pad = 0) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> ud(0.25f, 2.0f);
  Weights w;
  const size_t stride = row_bytes(type, cols) + pad;
  w.bytes.assign(stride * static_cast<size_t>(rows) + 1, 0);
  w.deq.resize(static_cast<size_t>(rows * cols));
  std::vector<float> src(static_cast<size_t>(cols));
  for (int64_t o = 0; o < rows; ++o) {
    const float row_scale = ud(rng);
    for (int64_t i = 0; i < cols; ++i) {
      // Vary the scale every 16 elements so sub-block scales and mins differ.
      const float group_scale = (i / 16) % 3 == 0 ? 0.3f : 1.0f;
      src[static_cast<size_t>(i)] = nd(rng) * row_scale * group_scale + ((i / 32) % 4 == 1 ? 0.5f : 0.0f);
    }
    uint8_t* dst = w.bytes.data() + stride * static_cast<size_t>(o);
    if (random_bytes_type(type))
      random_block_row(type, dst, cols, rng);
    else
      quantize_row(type, src.data(), dst, cols);
    dequantize_row(type, dst, w.deq.data() + o * cols, cols);
  }
  w.view.type = type;
  w.view.data = w.bytes.data();
  w.view.rows = rows;
  w.view.cols = cols;
  w.view.row_stride = stride;
  w.view.scale = type == DType::kNVFP4 ? 0.75f : 1.0f;
  return w;
}

// [n][ldx] activations; `exact` draws integers in [-127, 127] with one +-127 per 32-block.
inline std::vector<float> make_x(int64_t n, int64_t cols, int64_t ldx, uint32_t seed, bool exact) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> id(-127, 127);
  std::vector<float> x(static_cast<size_t>(n * ldx), std::numeric_limits<float>::quiet_NaN());
  for (int64_t r = 0; r < n; ++r)
    for (int64_t i = 0; i < cols; ++i) {
      float v;
      if (exact)
        v = i % 32 == 5 ? (r % 2 ? -127.0f : 127.0f) : static_cast<float>(id(rng));
      else
        v = nd(rng) * (i % 7 == 3 ? 4.0f : 1.0f);  // a few larger channels, as real activations
      x[static_cast<size_t>(r * ldx + i)] = v;
    }
  return x;
}

// Of one output, from its activation row x and dequantized weight row w (cols each), times the
// output scale: l1 = sum |x w|, l2 = |x| |w|.
struct OutputNorms {
  double l1 = 0, l2 = 0;
};
inline OutputNorms output_norms(const float* x, const float* w, int64_t cols, float scale) {
  double l1 = 0, xx = 0, ww = 0;
  for (int64_t i = 0; i < cols; ++i) {
    const double xi = x[i], wi = w[i];
    l1 += std::fabs(xi * wi);
    xx += xi * xi;
    ww += wi * wi;
  }
  return {l1 * scale, std::sqrt(xx * ww) * scale};
}

// The largest |y - y_ref| allowed for an output against matmul_ref (test_matmul.cpp's header
// derives them); `exact`: make_x's integer activations.
inline double error_bound(DType type, bool exact, const OutputNorms& n) {
  if (is_float_type(type)) return 2e-5 * n.l1 + 1e-30;
  if (exact) return 1e-4 * n.l1 + 1e-30;
  // The hard bound grows with the square root of the elements per activation scale.
  return 0.025 * std::sqrt(static_cast<double>(act_block(type)) / kActBlock) * n.l2 + 1e-30;
}

}  // namespace fulgur::kernels
