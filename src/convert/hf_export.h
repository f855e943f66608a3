// Writing a Hugging Face checkpoint folder (config.json, model.safetensors, tokenizer.json,
// tokenizer_config.json, generation_config.json), so that fulgur-generated test models go
// through the converter exactly like downloaded ones.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tensor/dtype.h"
#include "tokenizer/vocab.h"

namespace fulgur {

struct HfTensor {
  std::string name;            // HF name, e.g. model.layers.0.self_attn.q_proj.weight
  std::vector<int64_t> shape;  // HF order, row-major ([out, in] for a linear weight)
  std::vector<float> data;     // [product(shape)]
};

// Creates `dir` (and parents) if needed and writes the five files, each atomically. `stored` is
// the safetensors dtype of every tensor: F32, F16 or BF16 (round to nearest even).
// generation_config.json gets bos/eos_token_id from `config` when present there, else from the
// vocab. Throws fulgur::Error on a tensor whose data size does not match its shape, a duplicate
// name, an unsupported `stored` type, or an I/O failure.
void write_hf_checkpoint(const std::string& dir, const nlohmann::json& config,
                         const std::vector<HfTensor>& tensors, const Vocab& vocab,
                         const std::string& chat_template, DType stored);

}  // namespace fulgur
