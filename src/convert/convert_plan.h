// What an architecture converter decides before a byte is written: the GGUF keys (set on the
// writer), the list of tensors with their source, expected shape and transform, and the
// checkpoint tensors it drops on purpose. The driver (convert_model.cpp) checks the plan against
// the checkpoint, so an inconsistent config or checkpoint fails before any output exists.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "convert/quant_policy.h"

namespace fulgur {

struct TensorPlan {
  std::string hf_name;            // source tensor in the checkpoint
  std::string gguf_name;          // blk.N.attn_q.weight, ...
  std::vector<int64_t> hf_shape;  // expected HF shape (row-major, outermost first) from config
  TensorRole role = TensorRole::kWeight;
  // > 0: reorder rows from HF's rotate-half (NeoX) layout to ggml's interleaved RoPE layout,
  // with this many heads (llama arch q/k projections and their biases).
  int64_t permute_heads = 0;
};

struct ArchPlan {
  std::vector<TensorPlan> tensors;         // in GGUF order
  std::set<std::string> ignored;           // checkpoint tensors dropped on purpose
  int64_t n_vocab = 0;                     // embedding rows; the tokenizer is padded to it
  std::string what;                        // "config.json: hidden_size=64 ..." for messages
};

// GGUF shape (ggml order) of an HF row-major shape: the same bytes, dims reversed.
inline std::vector<int64_t> ggml_shape_of(const std::vector<int64_t>& hf_shape) {
  return {hf_shape.rbegin(), hf_shape.rend()};
}

}  // namespace fulgur
