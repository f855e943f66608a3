// The per-tensor types of `fulgur quantize`: llama.cpp's named quantization mixes (the ftypes of
// llama-quantize: Q4_K_M, Q5_K_S, IQ4_XS, ...) with the rules its quantizer applies to each
// tensor (src/llama-quant.cpp, llama_tensor_get_type and what it calls), reproduced here so that
// a file fulgur quantizes has, tensor for tensor, the types llama.cpp's would have:
//
//  * Which tensors are quantized at all: 2-D and 3-D ones (counted as ggml does: trailing
//    dimensions of 1 do not count) whose names end in "weight", except norms ("_norm.weight"),
//    MoE routers ("ffn_gate_inp.weight") and llama.cpp's list of small or special tensors
//    (position/token-type embeddings, conv kernels, ...). The others keep their type and bytes.
//  * A mix has a default type (Q4_K for Q4_K_M and Q4_K_S, ...). F32/F16/BF16 mixes give every
//    quantizable tensor that type and nothing else applies.
//  * The output head, and token_embd when there is no output.weight (tied embeddings), get Q6_K
//    (Q8_0 stays Q8_0; a row length the default's block does not divide gives Q8_0).
//  * attn_v (and attn_qkv / attn_kv_b): Q4_K_M and Q5_K_M give Q6_K to llama.cpp's "use more
//    bits" layers (the first and last eighth, every third between), counted over the attn_v
//    tensors in llama.cpp's tensor order; Q4_K_S gives Q5_K to the first four; Q3_K_M Q5_K to the
//    first two and Q4_K to the rest; Q3_K_L Q5_K; Q2_K Q4_K (Q3_K below 4 query heads per KV
//    head); IQ4_NL / IQ4_XS Q5_K with 4 or more query heads per KV head; a 70B llama/qwen2
//    lifts Q3_K / Q4_K to Q5_K; an 8-expert model puts Q8_0 on attn_v and attn_k.
//  * ffn_down* (dense, experts, shared experts): Q4_K_M / Q5_K_M Q6_K on the "more bits" layers;
//    Q4_K_S Q5_K on the first eighth, IQ4_NL / IQ4_XS Q5_K there too (without an importance
//    matrix); Q3_K_M Q5_K on the first sixteenth and Q4_K after; Q3_K_L Q5_K; Q2_K Q3_K. The
//    layer is the "blk.N." of the name on a model with experts, else a counter over the ffn_down
//    tensors in llama.cpp's order (the same thing on a dense decoder). Q2_K_S: Q4_K on the first
//    eighth of ffn_down and, with 4+ query heads per KV head, on attn_v; it needs an imatrix.
//  * attn_output: Q2_K Q3_K, Q3_K_M Q4_K, Q3_K_L Q5_K; on an 8-expert model Q5_K for the
//    Q2_K, Q3_K_S, Q3_K_M, Q4_K_S, Q4_K_M, IQ4_NL and IQ4_XS mixes.
//  * token_embd of an untied model: the default type, Q4_K in the TQ1_0 / TQ2_0 mixes.
//  * Fallback when the row length (ne0) is no multiple of the chosen type's block: IQ4_XS ->
//    IQ4_NL, Q2_K / Q3_K / TQ1_0 / TQ2_0 -> Q4_0, Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, and F16 when that
//    block does not divide it either (a 32-element type goes to F16 directly).
//
// llama.cpp iterates the tensors sorted by layer ("blk.N." first by N, the others before all
// blocks) and then by name, and its counters follow that order; so do these rules, whatever the
// order of the file. Architectures: the rules read nothing arch-specific except a 70B llama /
// qwen2 and Falcon, so they are given for qwen3, qwen3moe, qwen2 and llama; other archs are
// refused by quant_model_of. MXFP4_MOE is not offered.
//
// The codebook mixes (defaults: IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S -> IQ2_XS, IQ2_M -> IQ2_S,
// IQ3_XXS, IQ3_XS / IQ3_S / IQ3_M -> IQ3_S):
//  * The head (or tied token_embd) Q5_K in IQ1_*, IQ2_* and IQ3_XXS; an untied token_embd Q2_K
//    in IQ1_* / IQ2_XXS / IQ2_XS, IQ3_S in IQ2_S / IQ2_M / IQ3_XXS.
//  * IQ1_* and IQ2_*: before every other rule, attn_v Q4_K with 4+ query heads per KV head or 4+ experts,
//    else Q2_K (IQ3_S in IQ2_S / IQ2_M); attn_k Q4_K with 8 experts; the first eighth of the
//    ffn_down tensors (counted) Q2_K / IQ3_S; attn_output Q5_K with 8 experts, IQ3_S in IQ2_S /
//    IQ2_M, IQ2_XXS in IQ1_*.
//  * IQ3_XXS: attn_q and attn_k IQ2_S; attn_v Q4_K with GQA >= 4, else IQ3_XXS with an imatrix
//    and IQ3_S without; ffn_down without an imatrix Q4_K on the first eighth, Q3_K after;
//    attn_output IQ3_S. IQ3_XS: attn_q, attn_k, and ffn_gate / ffn_up of the middle three
//    quarters of the layers IQ3_XXS; attn_v Q4_K with GQA >= 4 (so IQ3_S). IQ3_M: attn_v and
//    attn_output Q4_K, ffn_down Q4_K on the first eighth. On 8 experts attn_output Q5_K for the IQ3 mixes.
//  * Rows no 256-block divides: the codebook types fall back to IQ4_NL.
//  * llama.cpp refuses to write IQ3_XXS, IQ2_* and IQ1_* tensors (not the embeddings and head)
//    without an importance matrix, and so does quant_needs_imatrix.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/dtype.h"

namespace fulgur {

class GgufReader;

struct QuantMix {
  std::string_view name;   // llama-quantize's spelling: "Q4_K_M"
  uint32_t file_type;      // llama_ftype: general.file_type of the output
  DType default_type;      // the type most matrices get
};

// The mixes `fulgur quantize` offers, in llama-quantize's order.
const std::vector<QuantMix>& quant_mixes();
// Case-insensitive lookup ("q4_k_m"); nullptr when unknown.
const QuantMix* find_quant_mix(std::string_view name);
// "Q4_0, Q4_1, ..., BF16".
std::string quant_mix_list();

// What the rules read of a model (llama.cpp's hparams).
struct QuantModel {
  std::string arch;
  int64_t n_layer = 0;    // {arch}.block_count
  int64_t n_head = 0;     // {arch}.attention.head_count (of layer 0)
  int64_t n_head_kv = 0;  // {arch}.attention.head_count_kv (of layer 0; default n_head)
  int64_t n_expert = 0;   // {arch}.expert_count (0 when absent)
  bool is_70b = false;    // llama.cpp's LLM_TYPE_70B (80 layers: llama with GQA, qwen2)
  int64_t n_gqa() const { return n_head_kv == 0 ? 0 : n_head / n_head_kv; }
};
// The architectures whose rules are implemented.
const std::vector<std::string>& quant_archs();
// The model of a GGUF file; throws fulgur::Error naming the arch when it is not in quant_archs().
QuantModel quant_model_of(const GgufReader& reader);

struct QuantTensor {
  std::string name;
  DType type = DType::kF32;                 // the source's type
  int64_t ne[4] = {1, 1, 1, 1};             // ggml order
};

// Whether llama.cpp quantizes this tensor at all (first rule above); with `quantize_output`
// false (--leave-output-tensor) output.weight is not quantized either.
bool quant_allows(const QuantTensor& t, bool quantize_output = true);

// llama-quantize's options that change the per-tensor types (llama_model_quantize_params'
// pure, quantize_output_tensor, output_tensor_type, token_embedding_type and tt_overrides), with
// llama_tensor_get_type's precedence:
//  1. A tensor llama.cpp does not quantize (quant_allows) keeps its type; --leave-output-tensor
//     adds output.weight to those.
//  2. token_embedding_type: token_embd (and per_layer_token_embd unless a --tensor-type pattern
//     names it) gets it as given, before every other rule and without the shape fallback.
//  3. output_type: output.weight gets it the same way. A tied token_embd (no output.weight)
//     gets it through the mix's head rule instead, so --pure skips it there and the fallback
//     applies, as in llama.cpp.
//  4. Only when the mix's type is a quantized one (not F32 / F16 / BF16): the first
//     --tensor-type whose regular expression (ECMAScript, searched anywhere in the name, as
//     std::regex_search) matches the name gives its type; else, unless `pure`, the mix's rules
//     (quant_types above); else the mix's type. The shape fallback applies to all three.
struct QuantTypeOverride {
  std::string pattern;  // lowercased, as llama-quantize stores it
  DType type;
};
struct QuantOptions {
  bool pure = false;
  bool quantize_output = true;
  std::optional<DType> output_type;
  std::optional<DType> token_embedding_type;
  std::vector<QuantTypeOverride> tensor_types;
};
// A type name as llama-quantize's parse_ggml_type reads it (ggml's names, any case: q4_K, f16,
// iq4_xs, ...), for `option`; throws fulgur::Error naming the option and the value when ggml has
// no such type or fulgur has no quantizer for it.
DType parse_quant_type(std::string_view name, std::string_view option);
// "PATTERN=TYPE" (--tensor-type) as llama-quantize's parse_tensor_type splits it: at the first
// '=', the pattern lowercased; throws fulgur::Error for a missing '=', pattern or type, an
// unknown type, or a pattern std::regex cannot compile.
QuantTypeOverride parse_tensor_type_option(std::string_view arg);

// Whether llama.cpp insists on an importance matrix for this tensor of this type in this mix
// (IQ3_XXS, IQ2_* and IQ1_* tensors and the Q2_K tensors of a Q2_K_S file, except the
// embeddings and the head).
bool quant_needs_imatrix(const QuantMix& mix, std::string_view name, DType type);

// The output type of every tensor (same order as `tensors`). `has_imatrix` only matters for the
// IQ4, IQ3_XXS and Q4_0/Q5_0 rules. `matched` (optional) gets, per options.tensor_types entry,
// how many tensors took its type. Throws fulgur::Error when an output_type or
// token_embedding_type's block does not divide the rows of a tensor it is given as is (llama.cpp
// aborts on an assertion there).
std::vector<DType> quant_types(const QuantMix& mix, const QuantModel& model,
                               const std::vector<QuantTensor>& tensors, bool has_imatrix = false,
                               const QuantOptions& options = {}, std::vector<int64_t>* matched = nullptr);

}  // namespace fulgur
