// EAGLE-3 drafts (llama.cpp's arch `eagle3`; reference/llamacpp-speculative.md §6): one decoder
// layer fed g = fc · [three target taps] (the model's input matrix over an aux row of
// 3 x target width, ModelDesc::input) or, further down a chain, its own pre-norm output (a batch's
// embd rows with the tokens beside them); the layer's attention reads [RMSNorm(embedding) ;
// RMSNorm(g)] (LayerDesc::eagle3_input), with its own KV; then output_norm and a head over a
// reduced vocabulary mapped to target ids by d2t.
#pragma once

#include <cstdint>
#include <vector>

namespace fulgur {

struct Eagle3Info {
  std::vector<int> extract_layers;  // eagle3.target_layers: the target's layer INPUT indices (n_layer: final pre-norm)
  int64_t target_hidden = 0;        // width of one tap
  int64_t n_vocab = 0;              // target vocabulary
  int64_t n_vocab_draft = 0;        // rows of output
  std::vector<int32_t> d2t;         // [n_vocab_draft] absolute target ids; empty = identity
};

}  // namespace fulgur
