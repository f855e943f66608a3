// Tiny random dense-decoder HF checkpoints for converter tests (also used by the CLI test).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "convert/hf_export.h"
#include "scratch_dir.h"
#include "tokenizer/builtin_vocab.h"

namespace fulgur::test {

struct TinySpec {
  std::string arch = "Qwen3ForCausalLM";
  std::string model_type = "qwen3";
  int64_t n_embd = 64, n_layer = 2, n_head = 4, n_head_kv = 2, head_dim = 16, n_ff = 128;
  int64_t extra_vocab = 5;  // embedding rows beyond the tokenizer's tokens (padding)
  bool tied = false;
  bool attention_bias = false;  // qwen2 always has q/k/v biases
  uint32_t seed = 1;
};

struct TinyModel {
  nlohmann::json config;
  std::vector<HfTensor> tensors;
  Vocab vocab;
  int64_t n_vocab = 0;
};

// Deterministic values in [-1, 1) (std distributions differ between library versions).
inline std::vector<float> random_values(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::vector<float> v(n);
  for (float& x : v) x = scale * (static_cast<float>(rng() >> 8) * (2.0f / 16777216.0f) - 1.0f);
  return v;
}

inline TinyModel make_tiny(const TinySpec& s) {
  TinyModel m;
  m.vocab = builtin_byte_vocab();
  m.n_vocab = static_cast<int64_t>(m.vocab.tokens.size()) + s.extra_vocab;
  const bool qwen2 = s.model_type == "qwen2", qwen3 = s.model_type == "qwen3";
  m.config = {{"architectures", {s.arch}},
              {"model_type", s.model_type},
              {"vocab_size", m.n_vocab},
              {"hidden_size", s.n_embd},
              {"intermediate_size", s.n_ff},
              {"num_hidden_layers", s.n_layer},
              {"num_attention_heads", s.n_head},
              {"num_key_value_heads", s.n_head_kv},
              {"head_dim", s.head_dim},
              {"max_position_embeddings", 256},
              {"rms_norm_eps", 1e-6},
              {"rope_theta", 1000000.0},
              {"rope_scaling", nullptr},
              {"tie_word_embeddings", s.tied},
              {"attention_bias", s.attention_bias},
              {"hidden_act", "silu"},
              {"torch_dtype", "float32"}};
  std::mt19937 rng(s.seed);
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    m.tensors.push_back({name, std::move(shape), random_values(n, rng)});
  };
  const int64_t q = s.n_head * s.head_dim, kv = s.n_head_kv * s.head_dim;
  add("model.embed_tokens.weight", {m.n_vocab, s.n_embd});
  for (int64_t i = 0; i < s.n_layer; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    add(p + "input_layernorm.weight", {s.n_embd});
    add(p + "self_attn.q_proj.weight", {q, s.n_embd});
    add(p + "self_attn.k_proj.weight", {kv, s.n_embd});
    add(p + "self_attn.v_proj.weight", {kv, s.n_embd});
    add(p + "self_attn.o_proj.weight", {s.n_embd, q});
    if (qwen2 || s.attention_bias) {
      add(p + "self_attn.q_proj.bias", {q});
      add(p + "self_attn.k_proj.bias", {kv});
      add(p + "self_attn.v_proj.bias", {kv});
    }
    if (!qwen2 && s.attention_bias) add(p + "self_attn.o_proj.bias", {s.n_embd});
    if (qwen3) {
      add(p + "self_attn.q_norm.weight", {s.head_dim});
      add(p + "self_attn.k_norm.weight", {s.head_dim});
    }
    add(p + "post_attention_layernorm.weight", {s.n_embd});
    add(p + "mlp.gate_proj.weight", {s.n_ff, s.n_embd});
    add(p + "mlp.up_proj.weight", {s.n_ff, s.n_embd});
    add(p + "mlp.down_proj.weight", {s.n_embd, s.n_ff});
  }
  add("model.norm.weight", {s.n_embd});
  if (!s.tied) add("lm_head.weight", {m.n_vocab, s.n_embd});
  return m;
}

inline void write_tiny(const std::string& dir, const TinyModel& m, DType stored = DType::kF32) {
  write_hf_checkpoint(dir, m.config, m.tensors, m.vocab, builtin_chat_template(), stored);
}

}  // namespace fulgur::test
