// A seeded random Gemma 4 assistant (`gemma4-assistant`, model/archs/gemma4_assistant.cpp) for
// a given gemma4 target GGUF, written as llama.cpp's converter writes a published one
// (Gemma4AssistantModel: the target's keys under gemma4-assistant., embedding_length_out,
// nextn_predict_layers = block_count, nextn.pre_projection / post_projection) with the target's
// vocabulary, so llama.cpp loads it; optionally its Hugging Face checkpoint too (hf_dir).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace fulgur {

struct AssistantSynthOptions {
  std::string target;  // the gemma4 target GGUF
  std::string out;     // GGUF path
  uint64_t seed = 1;
  DType type = DType::kF32;  // matrices (not token_embd rows of other widths); norms stay f32
  int64_t n_embd = 0;        // the assistant's width; 0 = half the target's (echo: twice)
  int64_t n_ff = 0;          // 0 = twice n_embd
  // Sliding (true) / full layers; llama.cpp reads the target's layer n - 2 for sliding layers
  // and n - 1 for full ones, with their heads and head dims.
  std::vector<bool> sliding = {true, true, true, false};
  // An "echo" assistant for tests: its attention and feed-forward outputs are zero, the input
  // projection passes h through, its final norm has gain 1, its output head is the target's
  // (zero-padded) and its post-projection returns h's direction, so its logits are a positive multiple of what the
  // target's head gives h: it drafts, at every chain step, the token the target's hidden state
  // before the anchor argmaxes (under greedy: the anchor again). Needs n_embd = 2 x the target's.
  bool echo = false;
  // Also write the Hugging Face checkpoint of the same weights here (config.json of
  // Gemma4AssistantForCausalLM, model.safetensors under transformers' names), which `fulgur
  // convert DIR --target T` turns back into the same tensors; f32 only.
  std::string hf_dir;
};

void synth_gemma4_assistant(const AssistantSynthOptions& options);

}  // namespace fulgur
