#include "convert/dense_arch.h"

#include <cmath>

#include "core/error.h"
#include "core/log.h"

namespace fulgur {
namespace {

struct DenseDims {
  int64_t n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_vocab, n_ctx;
  double eps, rope_theta;
};

int64_t positive(const HfConfig& cfg, const char* key, int64_t v) {
  FULGUR_CHECK(v > 0 && v <= (int64_t{1} << 31), cfg.source(), ": field '", key, "' is ", v,
               "; expected a positive integer below 2^31");
  return v;
}

DenseDims read_dims(const HfConfig& cfg) {
  DenseDims d{};
  d.n_embd = positive(cfg, "hidden_size", cfg.get_int("hidden_size"));
  d.n_layer = positive(cfg, "num_hidden_layers", cfg.get_int("num_hidden_layers"));
  d.n_head = positive(cfg, "num_attention_heads", cfg.get_int("num_attention_heads"));
  d.n_head_kv =
      positive(cfg, "num_key_value_heads", cfg.get_int("num_key_value_heads", d.n_head));
  FULGUR_CHECK(d.n_head % d.n_head_kv == 0, cfg.source(), ": num_attention_heads ", d.n_head,
               " is not a multiple of num_key_value_heads ", d.n_head_kv);
  if (cfg.has("head_dim")) {
    d.head_dim = positive(cfg, "head_dim", cfg.get_int("head_dim"));
  } else {
    FULGUR_CHECK(d.n_embd % d.n_head == 0, cfg.source(), ": hidden_size ", d.n_embd,
                 " is not divisible by num_attention_heads ", d.n_head,
                 " and there is no head_dim field");
    d.head_dim = d.n_embd / d.n_head;
  }
  d.n_ff = positive(cfg, "intermediate_size", cfg.get_int("intermediate_size"));
  d.n_vocab = positive(cfg, "vocab_size", cfg.get_int("vocab_size"));
  d.n_ctx = positive(cfg, "max_position_embeddings", cfg.get_int("max_position_embeddings", 4096));
  d.eps = cfg.get_float("rms_norm_eps", 1e-6);
  FULGUR_CHECK(d.eps > 0 && std::isfinite(d.eps), cfg.source(), ": field 'rms_norm_eps' is ",
               d.eps, "; expected a positive number");
  // transformers v5 moved rope_theta into rope_parameters.
  d.rope_theta = 10000.0;
  if (cfg.has("rope_theta")) {
    d.rope_theta = cfg.get_float("rope_theta");
  } else if (cfg.has("rope_parameters")) {
    d.rope_theta = cfg.get_object("rope_parameters").get_float("rope_theta", 10000.0);
  }
  FULGUR_CHECK(d.rope_theta > 0 && std::isfinite(d.rope_theta), cfg.source(),
               ": rope_theta is ", d.rope_theta, "; expected a positive number");
  return d;
}

// rope_scaling (v4) or rope_parameters (v5): none/default, linear and yarn are written as
// llama.cpp's rope.scaling.* keys; anything else is refused rather than silently ignored.
void write_rope_scaling(const HfConfig& cfg, const std::string& arch, GgufWriter& w) {
  HfConfig s;
  if (cfg.has("rope_scaling")) {
    s = cfg.get_object("rope_scaling");
  } else if (cfg.has("rope_parameters")) {
    s = cfg.get_object("rope_parameters");
  } else {
    return;
  }
  const std::string type = s.has("rope_type") ? s.get_string("rope_type")
                                              : s.get_string("type", "default");
  if (type == "default" || type == "none") return;
  if (type == "linear") {
    w.set_string(arch + ".rope.scaling.type", "linear");
    w.set_f32(arch + ".rope.scaling.factor", static_cast<float>(s.get_float("factor")));
  } else if (type == "yarn") {
    w.set_string(arch + ".rope.scaling.type", "yarn");
    w.set_f32(arch + ".rope.scaling.factor", static_cast<float>(s.get_float("factor")));
    if (s.has("original_max_position_embeddings")) {
      w.set_u32(arch + ".rope.scaling.original_context_length",
                static_cast<uint32_t>(s.get_int("original_max_position_embeddings")));
    }
  } else {
    fail(cfg.source(), ": rope scaling type '", type,
         "' is not supported (supported: default, linear, yarn)");
  }
}

}  // namespace

const char* dense_arch_name(DenseArch arch) {
  switch (arch) {
    case DenseArch::kQwen3: return "qwen3";
    case DenseArch::kQwen2: return "qwen2";
    case DenseArch::kLlama: return "llama";
  }
  return "?";
}

ArchPlan plan_dense_decoder(DenseArch arch, const HfConfig& cfg, bool has_lm_head, GgufWriter& w) {
  const DenseDims d = read_dims(cfg);
  const std::string a = dense_arch_name(arch);
  FULGUR_CHECK(!cfg.get_bool("mlp_bias", false), cfg.source(),
               ": mlp_bias is true; MLP biases are not supported");
  const bool attn_bias = arch == DenseArch::kQwen2 || cfg.get_bool("attention_bias", false);
  // Qwen2 has q/k/v biases and no o_proj bias; attention_bias elsewhere covers all four.
  const bool o_bias = attn_bias && arch != DenseArch::kQwen2;
  const bool tied = cfg.get_bool("tie_word_embeddings", false);

  w.set_u32(a + ".context_length", static_cast<uint32_t>(d.n_ctx));
  w.set_u32(a + ".embedding_length", static_cast<uint32_t>(d.n_embd));
  w.set_u32(a + ".block_count", static_cast<uint32_t>(d.n_layer));
  w.set_u32(a + ".feed_forward_length", static_cast<uint32_t>(d.n_ff));
  w.set_u32(a + ".attention.head_count", static_cast<uint32_t>(d.n_head));
  w.set_u32(a + ".attention.head_count_kv", static_cast<uint32_t>(d.n_head_kv));
  w.set_u32(a + ".attention.key_length", static_cast<uint32_t>(d.head_dim));
  w.set_u32(a + ".attention.value_length", static_cast<uint32_t>(d.head_dim));
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", static_cast<float>(d.eps));
  w.set_f32(a + ".rope.freq_base", static_cast<float>(d.rope_theta));
  if (arch == DenseArch::kLlama) {
    w.set_u32(a + ".vocab_size", static_cast<uint32_t>(d.n_vocab));
    w.set_u32(a + ".rope.dimension_count", static_cast<uint32_t>(d.head_dim));
  }
  write_rope_scaling(cfg, a, w);

  ArchPlan plan;
  plan.n_vocab = d.n_vocab;
  plan.what = cat(cfg.source(), " (hidden_size ", d.n_embd, ", num_hidden_layers ", d.n_layer,
                  ", heads ", d.n_head, "/", d.n_head_kv, ", head_dim ", d.head_dim,
                  ", intermediate_size ", d.n_ff, ", vocab_size ", d.n_vocab, ")");
  const int64_t q_dim = d.n_head * d.head_dim, kv_dim = d.n_head_kv * d.head_dim;
  const int64_t q_perm = arch == DenseArch::kLlama ? d.n_head : 0;
  const int64_t k_perm = arch == DenseArch::kLlama ? d.n_head_kv : 0;
  auto add = [&](std::string hf, std::string gguf, std::vector<int64_t> shape, int64_t permute = 0) {
    const TensorRole role = tensor_role(gguf, d.n_layer);
    plan.tensors.push_back({std::move(hf), std::move(gguf), std::move(shape), role, permute});
  };

  add("model.embed_tokens.weight", "token_embd.weight", {d.n_vocab, d.n_embd});
  for (int64_t i = 0; i < d.n_layer; ++i) {
    const std::string hf = cat("model.layers.", i, ".");
    const std::string g = cat("blk.", i, ".");
    add(hf + "input_layernorm.weight", g + "attn_norm.weight", {d.n_embd});
    add(hf + "self_attn.q_proj.weight", g + "attn_q.weight", {q_dim, d.n_embd}, q_perm);
    add(hf + "self_attn.k_proj.weight", g + "attn_k.weight", {kv_dim, d.n_embd}, k_perm);
    add(hf + "self_attn.v_proj.weight", g + "attn_v.weight", {kv_dim, d.n_embd});
    add(hf + "self_attn.o_proj.weight", g + "attn_output.weight", {d.n_embd, q_dim});
    if (attn_bias) {
      add(hf + "self_attn.q_proj.bias", g + "attn_q.bias", {q_dim}, q_perm);
      add(hf + "self_attn.k_proj.bias", g + "attn_k.bias", {kv_dim}, k_perm);
      add(hf + "self_attn.v_proj.bias", g + "attn_v.bias", {kv_dim});
    }
    if (o_bias) add(hf + "self_attn.o_proj.bias", g + "attn_output.bias", {d.n_embd});
    if (arch == DenseArch::kQwen3) {
      add(hf + "self_attn.q_norm.weight", g + "attn_q_norm.weight", {d.head_dim});
      add(hf + "self_attn.k_norm.weight", g + "attn_k_norm.weight", {d.head_dim});
    }
    add(hf + "post_attention_layernorm.weight", g + "ffn_norm.weight", {d.n_embd});
    add(hf + "mlp.gate_proj.weight", g + "ffn_gate.weight", {d.n_ff, d.n_embd});
    add(hf + "mlp.up_proj.weight", g + "ffn_up.weight", {d.n_ff, d.n_embd});
    add(hf + "mlp.down_proj.weight", g + "ffn_down.weight", {d.n_embd, d.n_ff});
  }
  add("model.norm.weight", "output_norm.weight", {d.n_embd});
  if (has_lm_head && !tied) {
    add("lm_head.weight", "output.weight", {d.n_vocab, d.n_embd});
  } else if (has_lm_head) {
    plan.ignored.insert("lm_head.weight");  // tied: HF ignores it too, token_embd serves
  } else if (!tied) {
    log_warn(cfg.source(), ": tie_word_embeddings is false but the checkpoint has no "
             "lm_head.weight; the GGUF will reuse token_embd as the output projection");
  }
  return plan;
}

}  // namespace fulgur
