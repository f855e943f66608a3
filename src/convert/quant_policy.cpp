#include "convert/quant_policy.h"

#include <string>

#include "core/ascii.h"
#include "core/error.h"

namespace fulgur {
namespace {

struct ConvertType {
  DType type;
  std::string_view name;
  uint32_t file_type;
};
constexpr ConvertType kConvertTypes[] = {
    {DType::kF32, "f32", 0},   {DType::kF16, "f16", 1},   {DType::kBF16, "bf16", 32},
    {DType::kQ8_0, "q8_0", 7}, {DType::kQ4_0, "q4_0", 2}, {DType::kQ4_K, "q4_k", 15},
    {DType::kQ6_K, "q6_k", 18},
};

const ConvertType& lookup(DType type) {
  for (const ConvertType& t : kConvertTypes) {
    if (t.type == type) return t;
  }
  fail("convert: output type ", dtype_name(type),
       " is not supported (use f32, f16, bf16, q8_0, q4_0, q4_k or q6_k)");
}

}  // namespace

bool is_convert_type(DType type) {
  for (const ConvertType& t : kConvertTypes) {
    if (t.type == type) return true;
  }
  return false;
}

DType parse_convert_type(std::string_view name) {
  const std::string low = ascii_lower(name);
  for (const ConvertType& t : kConvertTypes) {
    if (t.name == low) return t.type;
  }
  fail("convert: unknown output type '", name,
       "' (expected f32, f16, bf16, q8_0, q4_0, q4_k or q6_k)");
}

std::string_view convert_type_name(DType type) { return lookup(type).name; }

uint32_t gguf_file_type(DType requested) { return lookup(requested).file_type; }

bool more_bits_layer(int64_t layer, int64_t n_layer) {
  return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

namespace {

bool keeps_f32(std::string_view name) {
  return !name.ends_with(".weight") || name.ends_with("_norm.weight") ||
         name.find("ffn_gate_inp.weight") != std::string_view::npos ||
         name.find("ssm_conv1d") != std::string_view::npos;
}

// The N of "blk.N.", or -1.
int64_t block_of(std::string_view name) {
  if (!name.starts_with("blk.")) return -1;
  int64_t layer = 0;
  size_t i = 4;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) layer = layer * 10 + (name[i] - '0');
  return i > 4 && i < name.size() && name[i] == '.' ? layer : -1;
}

}  // namespace

std::vector<TensorRole> quant_roles(const std::vector<std::string>& names, int64_t n_layer) {
  int64_t n_attn_v = 0;
  bool moe = false;
  for (const std::string& n : names) {
    n_attn_v += n.find("attn_v.weight") != std::string::npos;
    moe = moe || n.find("ffn_gate_inp.weight") != std::string::npos;
  }
  std::vector<TensorRole> roles;
  int64_t i_attn_v = 0, i_ffn_down = 0;
  for (const std::string& n : names) {
    TensorRole role = TensorRole::kWeight;
    if (n == "token_embd.weight" || n == "per_layer_token_embd.weight") {
      role = TensorRole::kTokenEmbd;
    } else if (n == "per_layer_model_proj.weight") {
      role = TensorRole::kNotRequantized;
    } else if (n == "output.weight") {
      role = TensorRole::kOutput;
    } else if (keeps_f32(n)) {
      role = TensorRole::kKeepF32;
    } else if (n.find("attn_v.weight") != std::string::npos) {
      if (more_bits_layer(i_attn_v++, n_attn_v)) role = TensorRole::kMoreBits;
    } else if (n.find("ffn_down") != std::string::npos) {
      const int64_t layer = moe ? block_of(n) : i_ffn_down++;
      if (layer >= 0 && more_bits_layer(layer, n_layer)) role = TensorRole::kMoreBits;
    }
    roles.push_back(role);
  }
  return roles;
}

DType choose_tensor_type(DType requested, TensorRole role, const std::vector<int64_t>& ggml_shape) {
  lookup(requested);
  FULGUR_CHECK(!ggml_shape.empty() && ggml_shape[0] > 0,
               "choose_tensor_type: tensor shape has no positive row length");
  if (ggml_shape.size() == 1 || role == TensorRole::kKeepF32) return DType::kF32;
  DType type = requested;
  if (requested == DType::kQ4_K && role == TensorRole::kNotRequantized) {
    type = DType::kF16;  // what llama-quantize keeps of a default (f16) conversion
  } else if (requested == DType::kQ4_K && role != TensorRole::kWeight) {
    type = DType::kQ6_K;
  }
  const int64_t ne0 = ggml_shape[0];
  if (ne0 % dtype_info(type).block_size == 0) return type;
  if (dtype_info(type).block_size == 256 && ne0 % dtype_info(DType::kQ8_0).block_size == 0) {
    return DType::kQ8_0;
  }
  return DType::kF16;
}

}  // namespace fulgur
