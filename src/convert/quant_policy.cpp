#include "convert/quant_policy.h"

#include <string>

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

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

bool is_convert_type(DType type) {
  for (const ConvertType& t : kConvertTypes) {
    if (t.type == type) return true;
  }
  return false;
}

DType parse_convert_type(std::string_view name) {
  std::string low;
  for (char c : name) low += lower(c);
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

TensorRole tensor_role(std::string_view name, int64_t n_layer) {
  if (name == "token_embd.weight") return TensorRole::kTokenEmbd;
  if (name == "output.weight") return TensorRole::kOutput;
  if (!name.starts_with("blk.")) return TensorRole::kWeight;
  const size_t dot = name.find('.', 4);
  if (dot == std::string_view::npos) return TensorRole::kWeight;
  const std::string_view rest = name.substr(dot + 1);
  if (rest != "attn_v.weight" && rest != "ffn_down.weight") return TensorRole::kWeight;
  int64_t layer = 0;
  for (char c : name.substr(4, dot - 4)) {
    if (c < '0' || c > '9') return TensorRole::kWeight;
    layer = layer * 10 + (c - '0');
  }
  return more_bits_layer(layer, n_layer) ? TensorRole::kMoreBits : TensorRole::kWeight;
}

DType choose_tensor_type(DType requested, TensorRole role, const std::vector<int64_t>& ggml_shape) {
  lookup(requested);
  FULGUR_CHECK(!ggml_shape.empty() && ggml_shape[0] > 0,
               "choose_tensor_type: tensor shape has no positive row length");
  if (ggml_shape.size() == 1) return DType::kF32;
  DType type = requested;
  if (requested == DType::kQ4_K && role != TensorRole::kWeight) type = DType::kQ6_K;
  const int64_t ne0 = ggml_shape[0];
  if (ne0 % dtype_info(type).block_size == 0) return type;
  if (dtype_info(type).block_size == 256 && ne0 % dtype_info(DType::kQ8_0).block_size == 0) {
    return DType::kQ8_0;
  }
  return DType::kF16;
}

}  // namespace fulgur
