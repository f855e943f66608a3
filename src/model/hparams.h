// Hyperparameters of a decoder-only transformer, read from GGUF keys `{arch}.*`
// (reference/archs-gguf.md §2). Everything that may vary per layer is stored per layer: a scalar
// key broadcasts, an array key must have exactly block_count entries.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/ops.h"

namespace fulgur {

class GgufReader;

struct Hparams {
  std::string arch;          // general.architecture
  int64_t n_embd = 0;        // E
  int64_t n_layer = 0;
  int64_t n_vocab = 0;       // rows of token_embd
  int64_t n_ctx_train = 0;
  int64_t head_dim = 0;      // Dh (attention.key_length; default E / head_count)
  std::vector<int64_t> n_head;     // [n_layer]
  std::vector<int64_t> n_head_kv;  // [n_layer]
  std::vector<int64_t> n_ff;       // [n_layer]
  float rms_eps = 1e-6f;
  kernels::RopeParams rope;  // n_rot, mode (from the arch), freq_base
  // Architecture flags (the same forward serves qwen3, qwen2 and llama).
  bool qk_norm = false;   // per-head RMSNorm of q and k before RoPE (qwen3)
  bool qkv_bias = false;  // biases on attn_q/k/v (qwen2)

  int64_t max_head_count() const;
  int64_t max_kv_width() const;  // max over layers of n_head_kv * head_dim
  int64_t max_ff() const;
};

// Reads and checks the hyperparameters of a supported architecture; unknown archs and
// inconsistent values are errors naming the key.
Hparams read_hparams(const GgufReader& gguf);

// A scalar-or-per-layer integer key: a scalar broadcasts to every layer, an array must have
// exactly n_layer entries. Missing key -> fallback (or an error when fallback < 0).
std::vector<int64_t> read_per_layer(const GgufReader& gguf, const std::string& key,
                                    int64_t n_layer, int64_t fallback);

}  // namespace fulgur
