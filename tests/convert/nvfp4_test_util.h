// Writing compressed-tensors NVFP4 checkpoints in tests (the format as
// src/convert/nvfp4_checkpoint.h cites it), with the values recomputed here from the format's
// definition and nothing of fulgur's: w = e2m1(code) * (e4m3(scale) / global_scale).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "convert/safetensors.h"
#include "convert/safetensors_writer.h"

namespace fulgur::test {

// E2M1 code -> value (bit 3 = sign, bits 0..2 index {0, 0.5, 1, 1.5, 2, 3, 4, 6}).
inline float e2m1(int code) {
  static constexpr float kMag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  return (code & 8) ? -kMag[code & 7] : kMag[code & 7];
}

// float8_e4m3fn byte -> value (bias 7, subnormals man * 2^-9).
inline float e4m3(uint8_t x) {
  const int e = (x >> 3) & 0xF, m = x & 7;
  const float v = e == 0 ? std::ldexp(static_cast<float>(m), -9)
                         : std::ldexp(1.0f + static_cast<float>(m) / 8.0f, e - 7);
  return (x & 0x80) ? -v : v;
}

// One quantized linear in the checkpoint's encoding.
struct Nvfp4Weight {
  int64_t rows = 0, cols = 0;
  std::vector<uint8_t> packed;  // [rows][cols/2]
  std::vector<uint8_t> scales;  // [rows][cols/16] e4m3 bytes
  float global = 1.0f;

  int code(int64_t r, int64_t c) const {
    return (packed[static_cast<size_t>(r * (cols / 2) + c / 2)] >> (4 * (c % 2))) & 0xF;
  }
  uint8_t scale(int64_t r, int64_t c) const {
    return scales[static_cast<size_t>(r * (cols / 16) + c / 16)];
  }
  // The format's value of element (r, c), computed as compressed-tensors does:
  // code * (scale / global) in f32.
  float value(int64_t r, int64_t c) const { return e2m1(code(r, c)) * (e4m3(scale(r, c)) / global); }
  std::vector<float> values() const {
    std::vector<float> v(static_cast<size_t>(rows * cols));  // [rows][cols]
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) v[static_cast<size_t>(r * cols + c)] = value(r, c);
    return v;
  }
};

// A plain round-to-nearest NVFP4 encoding of w [rows][cols] (cols % 16 == 0): global scale
// 448 * 6 / max|w| (rounded to a power of two when asked, so products are exact), per 16 the
// e4m3 scale nearest max|group| * global / 6, codes nearest. Quality does not matter: the tests
// compare conversions of the SAME encoded weights.
inline Nvfp4Weight encode_nvfp4(const std::vector<float>& w, int64_t rows, int64_t cols,
                                bool power_of_two_global) {
  Nvfp4Weight q;
  q.rows = rows;
  q.cols = cols;
  q.packed.assign(static_cast<size_t>(rows * cols / 2), 0);
  q.scales.assign(static_cast<size_t>(rows * cols / 16), 0);
  float amax = 0.0f;
  for (float x : w) amax = std::max(amax, std::fabs(x));
  q.global = amax > 0 ? 448.0f * 6.0f / amax : 1.0f;
  if (power_of_two_global) q.global = std::exp2(std::floor(std::log2(q.global)));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < cols / 16; ++g) {
      const float* x = w.data() + r * cols + g * 16;
      float gmax = 0.0f;
      for (int j = 0; j < 16; ++j) gmax = std::max(gmax, std::fabs(x[j]));
      const float want = gmax * q.global / 6.0f;
      uint8_t best = 0;
      for (int code = 0; code <= 0x7E; ++code) {
        if (std::fabs(e4m3(static_cast<uint8_t>(code)) - want) < std::fabs(e4m3(best) - want))
          best = static_cast<uint8_t>(code);
      }
      q.scales[static_cast<size_t>(r * (cols / 16) + g)] = best;
      const float step = e4m3(best) / q.global;
      for (int j = 0; j < 16; ++j) {
        int bc = 0;
        for (int c = 1; c < 16; ++c) {
          if (std::fabs(e2m1(c) * step - x[j]) < std::fabs(e2m1(bc) * step - x[j])) bc = c;
        }
        const int64_t idx = r * cols + g * 16 + j;
        q.packed[static_cast<size_t>(idx / 2)] |= static_cast<uint8_t>(bc << (4 * (idx % 2)));
      }
    }
  }
  return q;
}

// Rewrites dir/model.safetensors, replacing each float tensor named in `quantize` ("X.weight")
// by its NVFP4 parts (X.weight_packed, X.weight_scale, X.weight_global_scale,
// X.input_global_scale). Returns the encodings by name; `floats_out`, when given, gets the
// format's values of every quantized tensor (the "dequantized checkpoint").
inline std::map<std::string, Nvfp4Weight> quantize_checkpoint(
    const std::string& dir, const std::set<std::string>& quantize, bool power_of_two_global,
    std::map<std::string, std::vector<float>>* floats_out = nullptr) {
  std::map<std::string, Nvfp4Weight> out;
  SafetensorsWriter w;
  {
    const Checkpoint ck(dir);
    for (const std::string& name : ck.names()) {
      const SafetensorsTensor& t = ck.tensor(name);
      if (!quantize.count(name)) {
        w.add(name, t.dtype, t.shape, {t.data, t.bytes});
        continue;
      }
      const std::vector<float> v = ck.to_f32(name);
      const Nvfp4Weight q = encode_nvfp4(v, t.shape[0], t.shape[1], power_of_two_global);
      const std::string base = name.substr(0, name.size() - 7);
      using D = SafetensorsDType;
      w.add(base + ".weight_packed", D::kU8, {q.rows, q.cols / 2}, q.packed);
      w.add(base + ".weight_scale", D::kF8_E4M3, {q.rows, q.cols / 16}, q.scales);
      w.add_f32(base + ".weight_global_scale", {1}, std::vector<float>{q.global});
      w.add_f32(base + ".input_global_scale", {1}, std::vector<float>{1.0f});
      if (floats_out != nullptr) (*floats_out)[name] = q.values();
      out.emplace(name, q);
    }
  }
  w.write(dir + "/model.safetensors");
  return out;
}

// Rewrites dir/model.safetensors with the given tensors' values replaced (F32).
inline void replace_floats(const std::string& dir, const std::map<std::string, std::vector<float>>& values) {
  SafetensorsWriter w;
  {
    const Checkpoint ck(dir);
    for (const std::string& name : ck.names()) {
      const SafetensorsTensor& t = ck.tensor(name);
      const auto it = values.find(name);
      if (it == values.end()) {
        w.add(name, t.dtype, t.shape, {t.data, t.bytes});
      } else {
        w.add_f32(name, t.shape, it->second);
      }
    }
  }
  w.write(dir + "/model.safetensors");
}

// config.json's quantization_config as llm-compressor writes it for NVFP4 (W4A4).
inline nlohmann::json nvfp4_quantization_config(const std::vector<std::string>& ignore) {
  const nlohmann::json args = {{"num_bits", 4},       {"type", "float"},   {"symmetric", true},
                               {"group_size", 16},    {"strategy", "tensor_group"},
                               {"dynamic", false},    {"observer", "minmax"}};
  nlohmann::json in_args = args;
  in_args["dynamic"] = "local";
  return {{"quant_method", "compressed-tensors"},
          {"format", "nvfp4-pack-quantized"},
          {"quantization_status", "compressed"},
          {"config_groups",
           {{"group_0",
             {{"format", "nvfp4-pack-quantized"},
              {"targets", {"Linear"}},
              {"weights", args},
              {"input_activations", in_args},
              {"output_activations", nullptr}}}}},
          {"ignore", ignore},
          {"kv_cache_scheme", nullptr},
          {"sparsity_config", nlohmann::json::object()},
          {"transform_config", nlohmann::json::object()}};
}

}  // namespace fulgur::test
