// One call of Context::decode: rows of tokens (or embedding rows), each with its position,
// sequence and whether its logits are wanted. Prefill, decode, verification of drafted tokens and
// multi-sequence serving are all batches of different shapes (DESIGN §3).
#pragma once

#include <cstdint>
#include <vector>

namespace fulgur {

// Sequence ids are in [0, kMaxSequences): the KV cache keeps each cell's sequences as a 64-bit mask.
inline constexpr int kMaxSequences = 64;

struct Batch {
  std::vector<int32_t> tokens;  // [n] token ids (empty when `embd` is used)
  std::vector<float> embd;      // [n][n_embd] input rows instead of tokens
  // [n][aux width] for models with input parts (desc.h InputPart), beside the tokens: e.g. an
  // MTP block's target hidden state paired with each token. Empty otherwise.
  std::vector<float> aux;
  std::vector<int32_t> pos;     // [n]
  std::vector<int32_t> seq;     // [n] sequence id in [0, kMaxSequences)
  std::vector<uint8_t> output;  // [n] 1 = compute logits for this row

  int64_t size() const { return static_cast<int64_t>(pos.size()); }
  void clear() {
    tokens.clear();
    embd.clear();
    aux.clear();
    pos.clear();
    seq.clear();
    output.clear();
  }
  void add(int32_t token, int32_t position, int32_t sequence, bool want_logits) {
    tokens.push_back(token);
    pos.push_back(position);
    seq.push_back(sequence);
    output.push_back(want_logits ? 1 : 0);
  }
};

}  // namespace fulgur
