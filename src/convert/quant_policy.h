// Which ggml type each converted tensor gets, given the type the user asked for.
//
// Rule (modelled on llama.cpp's converter and llama-quantize, simplified):
//  1. 1-D tensors (norm weights, biases) are always F32, and so are the tensors llama.cpp's
//     converter keeps in F32 whatever the output type (TensorRole::kKeepF32): names not ending
//     in ".weight" (ssm_a, ssm_d, biases), "*_norm.weight" of any rank (ssm_norm {Di/G, G}),
//     MoE routers (ffn_gate_inp) and Mamba conv kernels (ssm_conv1d).
//  2. 2-D and 3-D weights get the requested type, except with `q4_k`, which follows llama.cpp's
//     Q4_K_M recipe: token_embd and output get Q6_K, and so do attn_v and every ffn_down* tensor
//     (ffn_down, ffn_down_exps, ffn_down_shexp) that its use_more_bits rule picks (the first and
//     last eighth and every third one between; see more_bits_layer and quant_roles for which
//     index it is applied to). Its 8-expert special cases (Mixtral) are not reproduced.
//     Gemma's per_layer_token_embd is a token embedding there too (Q6_K), and
//     per_layer_model_proj is one llama-quantize leaves as the converter wrote it ("not too big"):
//     F16 under q4_k, the requested type otherwise (TensorRole::kNotRequantized).
//  3. Fallback when the row length ne0 is not a multiple of the chosen type's block size:
//     a 256-block type (Q4_K, Q6_K) falls back to Q8_0 if ne0 % 32 == 0, otherwise to F16;
//     a 32-block type (Q8_0, Q4_0) falls back to F16 (what llama.cpp's converter does for Q8_0).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/dtype.h"

namespace fulgur {

enum class TensorRole { kWeight, kTokenEmbd, kOutput, kMoreBits, kKeepF32, kNotRequantized };

// Q4_K_M's choice of layers whose attn_v / ffn_down get Q6_K (llama.cpp's use_more_bits).
bool more_bits_layer(int64_t layer, int64_t n_layer);
// The roles of a model's tensors from their GGUF names, in file order, as llama-quantize
// decides them for Q4_K_M (src/llama-quant.cpp):
//   token_embd.weight and per_layer_token_embd.weight -> kTokenEmbd, output.weight -> kOutput,
//   rule 1's tensors -> kKeepF32, per_layer_model_proj.weight -> kNotRequantized;
//   attn_v.weight: more_bits_layer(i, n) where i counts the attn_v tensors seen so far and n is
//     their number (on a hybrid only some layers attend, and llama.cpp counts those);
//   names containing "ffn_down": more_bits_layer(i, n_layer) with i the layer number from
//     "blk.<i>." when the model has experts (any ffn_gate_inp), else the count of ffn_down*
//     tensors seen so far (llama.cpp's counter; both are the layer on a dense decoder);
//   everything else kWeight.
std::vector<TensorRole> quant_roles(const std::vector<std::string>& gguf_names, int64_t n_layer);

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
