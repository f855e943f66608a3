// Which ggml type each converted tensor gets, given the type the user asked for.
//
// Rule (modelled on llama.cpp's converter and llama-quantize, simplified):
//  1. 1-D tensors (norm weights, biases) are always F32.
//  2. 2-D weights get the requested type, except with `q4_k`, which follows llama.cpp's Q4_K_M
//     recipe: token_embd and output get Q6_K, and so do attn_v and ffn_down on the layers its
//     use_more_bits rule picks (the first and last eighth of the layers and every third one
//     between; see more_bits_layer).
//  3. Fallback when the row length ne0 is not a multiple of the chosen type's block size:
//     a 256-block type (Q4_K, Q6_K) falls back to Q8_0 if ne0 % 32 == 0, otherwise to F16;
//     a 32-block type (Q8_0, Q4_0) falls back to F16 (what llama.cpp's converter does for Q8_0).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tensor/dtype.h"

namespace fulgur {

enum class TensorRole { kWeight, kTokenEmbd, kOutput, kMoreBits };

// Q4_K_M's choice of layers whose attn_v / ffn_down get Q6_K (llama.cpp's use_more_bits).
bool more_bits_layer(int64_t layer, int64_t n_layer);
// The role of a dense-decoder tensor from its GGUF name ("token_embd.weight", "output.weight",
// "blk.<i>.attn_v.weight", "blk.<i>.ffn_down.weight" on a more_bits_layer; kWeight otherwise).
TensorRole tensor_role(std::string_view gguf_name, int64_t n_layer);

// The types `fulgur convert --type` accepts: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K.
bool is_convert_type(DType type);
// "f32" | "f16" | "bf16" | "q8_0" | "q4_0" | "q4_k" | "q6_k" (case-insensitive); throws
// fulgur::Error naming the value and listing these otherwise.
DType parse_convert_type(std::string_view name);
// The lowercase name parse_convert_type accepts.
std::string_view convert_type_name(DType type);
// general.file_type (llama.cpp LlamaFileType): F32 0, F16 1, Q4_0 2, Q8_0 7, Q4_K 15 (Q4_K_M,
// the closest recipe), Q6_K 18, BF16 32.
uint32_t gguf_file_type(DType requested);

// The type of one tensor (rules above). `ggml_shape` is in ggml order (ne0 first).
DType choose_tensor_type(DType requested, TensorRole role, const std::vector<int64_t>& ggml_shape);

}  // namespace fulgur
