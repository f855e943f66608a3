#include "convert/nvfp4_checkpoint.h"

#include <cmath>

#include "core/error.h"

namespace fulgur {
namespace {

constexpr const char* kFormat = "nvfp4-pack-quantized";

// E2M1 magnitudes by code & 7 (compressed-tensors' FLOAT_TO_E2M1 order).
constexpr float kE2m1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

// torch.float8_e4m3fn: bias 7, subnormals man * 2^-9, S.1111.111 is NaN, no infinities.
float e4m3_value(uint8_t x) {
  const int exp = (x >> 3) & 0xF, man = x & 7;
  const float mag = exp == 0 ? std::ldexp(static_cast<float>(man), -9)
                             : std::ldexp(1.0f + static_cast<float>(man) / 8.0f, exp - 7);
  return (x & 0x80) ? -mag : mag;
}

std::string hex_byte(uint8_t x) {
  constexpr char kDigits[] = "0123456789abcdef";
  return {'0', 'x', kDigits[x >> 4], kDigits[x & 0xF]};
}

// The scale byte as ggml's unsigned E4M3, refusing what that cannot hold.
uint8_t unsigned_scale(uint8_t x, int64_t index, const std::string& what) {
  FULGUR_CHECK((x & 0x7F) != 0x7F, what, ": weight_scale[", index, "] is NaN (", hex_byte(x),
               ")");
  if (x == 0x80) return 0;  // -0
  FULGUR_CHECK((x & 0x80) == 0, what, ": weight_scale[", index, "] = ", e4m3_value(x),
               " is negative; NVFP4 block scales are unsigned");
  return x;
}

void check_weights(const HfConfig& w) {
  const int64_t bits = w.get_int("num_bits");
  FULGUR_CHECK(bits == 4, w.source(), ": weights.num_bits is ", bits, ", expected 4 (NVFP4)");
  const std::string type = w.get_string("type");
  FULGUR_CHECK(type == "float", w.source(), ": weights.type is '", type,
               "', expected 'float' (NVFP4; integer 4-bit weights are not supported)");
  const int64_t group = w.get_int("group_size");
  FULGUR_CHECK(group == 16, w.source(), ": weights.group_size is ", group,
               ", expected 16 (NVFP4)");
  const std::string strategy = w.get_string("strategy");
  FULGUR_CHECK(strategy == "tensor_group" || strategy == "group", w.source(),
               ": weights.strategy is '", strategy, "', expected 'tensor_group'");
  FULGUR_CHECK(w.get_bool("symmetric", true), w.source(),
               ": weights.symmetric is false; NVFP4 weights have no zero point");
  FULGUR_CHECK(!w.has("dynamic") || !w.json().at("dynamic").is_boolean() ||
                   !w.get_bool("dynamic"),
               w.source(), ": weights.dynamic is true; stored NVFP4 weights are static");
  FULGUR_CHECK(!w.has("actorder"), w.source(),
               ": weights.actorder is set; reordered (activation-order) groups are not supported");
}

}  // namespace

CheckpointQuant parse_quantization_config(const HfConfig& cfg) {
  CheckpointQuant out;
  if (!cfg.has("quantization_config")) return out;
  const HfConfig q = cfg.get_object("quantization_config");
  const std::string method = q.get_string("quant_method");
  if (method == "mxfp4") {
    out.mxfp4 = true;
    return out;
  }
  FULGUR_CHECK(method == "compressed-tensors", q.source(), ": quantization_config.quant_method is '",
               method, "'; fulgur converts float checkpoints, compressed-tensors NVFP4 ('",
               kFormat, "') and MXFP4 ('mxfp4', gpt-oss) only");
  const std::string status = q.get_string("quantization_status", "compressed");
  FULGUR_CHECK(status == "compressed", q.source(), ": quantization_config.quantization_status is '",
               status, "'; only 'compressed' checkpoints store packed weights");
  for (const char* key : {"kv_cache_scheme", "transform_config", "sparsity_config"}) {
    const bool empty = !q.has(key) || (q.json().at(key).is_object() && q.json().at(key).empty());
    FULGUR_CHECK(empty, q.source(), ": quantization_config.", key,
                 " is set; KV-cache quantization, weight transforms and sparsity are not supported");
  }
  const std::string top_format = q.get_string("format", "");
  const HfConfig groups = q.get_object("config_groups");
  FULGUR_CHECK(!groups.json().empty(), q.source(), ": quantization_config.config_groups is empty");
  for (const auto& [name, group] : groups.json().items()) {
    const HfConfig g(group, q.source(), cat("quantization_config.config_groups.", name));
    const std::string format = g.get_string("format", top_format);
    FULGUR_CHECK(format == kFormat, q.source(), ": quantization_config.config_groups.", name,
                 " has format '", format, "'; fulgur converts '", kFormat, "' only");
    check_weights(g.get_object("weights"));
  }
  out.nvfp4 = true;
  return out;
}

void repack_nvfp4_row(const uint8_t* packed, const uint8_t* scales, int64_t cols, uint8_t* out,
                      const std::string& what) {
  for (int64_t b = 0; b < cols / 64; ++b, out += 36) {
    for (int s = 0; s < 4; ++s) {
      const int64_t sub = 4 * b + s;  // sub-block of 16 elements
      out[s] = unsigned_scale(scales[sub], sub, what);
      const uint8_t* src = packed + sub * 8;  // its 16 codes, two per byte in element order
      auto code = [src](int i) { return (src[i / 2] >> (4 * (i % 2))) & 0xF; };
      for (int j = 0; j < 8; ++j) {
        out[4 + 8 * s + j] = static_cast<uint8_t>(code(j) | (code(j + 8) << 4));
      }
    }
  }
}

void dequantize_nvfp4_checkpoint(const uint8_t* packed, const uint8_t* scales, float global_scale,
                                 int64_t e0, int64_t n, float* out, const std::string& what) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t e = e0 + i;
    const int code = (packed[e / 2] >> (4 * (e % 2))) & 0xF;
    // compressed-tensors' order: the local scale divided by the global one, then times the code.
    const float scale = e4m3_value(scales[e / 16]) / global_scale;
    FULGUR_CHECK(!std::isnan(scale), what, ": weight_scale[", e / 16, "] is NaN");
    out[i] = ((code & 8) ? -kE2m1[code & 7] : kE2m1[code & 7]) * scale;
  }
}

}  // namespace fulgur
