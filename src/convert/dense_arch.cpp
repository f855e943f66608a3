#include "convert/dense_arch.h"

#include <cmath>
#include <optional>

#include "core/error.h"

namespace fulgur {

DecoderDims read_decoder_dims(const HfConfig& cfg, bool need_ff) {
  DecoderDims d{};
  d.n_embd = cfg.get_dim("hidden_size");
  d.n_layer = cfg.get_dim("num_hidden_layers");
  d.n_head = cfg.get_dim("num_attention_heads");
  d.n_head_kv = cfg.get_dim("num_key_value_heads", d.n_head);
  FULGUR_CHECK(d.n_head % d.n_head_kv == 0, cfg.source(), ": num_attention_heads ", d.n_head,
               " is not a multiple of num_key_value_heads ", d.n_head_kv);
  if (cfg.has("head_dim")) {
    d.head_dim = cfg.get_dim("head_dim");
  } else {
    FULGUR_CHECK(d.n_embd % d.n_head == 0, cfg.source(), ": hidden_size ", d.n_embd,
                 " is not divisible by num_attention_heads ", d.n_head,
                 " and there is no head_dim field");
    d.head_dim = d.n_embd / d.n_head;
  }
  if (need_ff || cfg.has("intermediate_size")) d.n_ff = cfg.get_dim("intermediate_size");
  d.n_vocab = cfg.get_dim("vocab_size");
  d.n_ctx = cfg.get_dim("max_position_embeddings", 4096);
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

namespace {

// The config's rope scaling object (transformers v5: rope_parameters), or nullopt.
std::optional<HfConfig> rope_scaling_of(const HfConfig& cfg) {
  if (cfg.has("rope_scaling")) return cfg.get_object("rope_scaling");
  if (cfg.has("rope_parameters")) return cfg.get_object("rope_parameters");
  return std::nullopt;
}

std::string rope_type_of(const HfConfig& s) {
  return s.has("rope_type") ? s.get_string("rope_type") : s.get_string("type", "default");
}

}  // namespace

void write_rope_scaling(const HfConfig& cfg, const std::string& arch, GgufWriter& w) {
  const std::optional<HfConfig> scaling = rope_scaling_of(cfg);
  if (!scaling) return;
  const HfConfig& s = *scaling;
  const std::string type = rope_type_of(s);
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
    // The optional YaRN parameters, under llama.cpp's keys.
    const auto optional_f32 = [&](const char* hf_key, const char* gguf_key) {
      if (s.has(hf_key)) w.set_f32(arch + ".rope.scaling." + gguf_key, static_cast<float>(s.get_float(hf_key)));
    };
    optional_f32("extrapolation_factor", "yarn_ext_factor");
    optional_f32(s.has("attention_factor") ? "attention_factor" : "attn_factor", "yarn_attn_factor");
    optional_f32("beta_fast", "yarn_beta_fast");
    optional_f32("beta_slow", "yarn_beta_slow");
  } else if (type == "llama3" && arch == "llama") {
    // No keys: the factors go into the rope_freqs tensor (llama3_rope_factors).
  } else {
    fail(cfg.source(), ": rope scaling type '", type, "' is not supported (supported: default, linear, yarn",
         arch == "llama" ? ", llama3" : "; llama3 on LlamaForCausalLM", ")");
  }
}

std::optional<std::vector<float>> llama3_rope_factors(const HfConfig& cfg, const DecoderDims& d) {
  const std::optional<HfConfig> scaling = rope_scaling_of(cfg);
  if (!scaling || rope_type_of(*scaling) != "llama3") return std::nullopt;
  const HfConfig& s = *scaling;
  // Llama 3.1's rule, in float as the reference converter computes it: wavelengths shorter
  // than the original context / high_freq_factor keep their frequency, those longer than
  // context / low_freq_factor are divided by `factor`, and the band between is blended.
  const float factor = static_cast<float>(s.get_float("factor", 8.0));
  const float low = static_cast<float>(s.get_float("low_freq_factor", 1.0));
  const float high = static_cast<float>(s.get_float("high_freq_factor", 4.0));
  const float old_ctx = static_cast<float>(s.get_float("original_max_position_embeddings", 8192.0));
  FULGUR_CHECK(factor > 0 && low > 0 && high > low && old_ctx > 0, cfg.source(),
               ": llama3 rope scaling needs factor > 0 and 0 < low_freq_factor < high_freq_factor (got ", factor, ", ",
               low, ", ", high, ")");
  const float low_wavelen = old_ctx / low, high_wavelen = old_ctx / high;
  const auto base = static_cast<float>(d.rope_theta);
  std::vector<float> out;
  for (int64_t i = 0; i < d.head_dim; i += 2) {
    const float freq = 1.0f / std::pow(base, static_cast<float>(i) / static_cast<float>(d.head_dim));
    const float wavelen = 2.0f * static_cast<float>(M_PI) / freq;
    if (wavelen < high_wavelen) {
      out.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      out.push_back(factor);
    } else {
      const float smooth = (old_ctx / wavelen - low) / (high - low);
      out.push_back(1.0f / ((1.0f - smooth) / factor + smooth));
    }
  }
  return out;
}

void write_decoder_keys(const std::string& a, const DecoderDims& d, int64_t block_count,
                        GgufWriter& w) {
  w.set_u32(a + ".context_length", static_cast<uint32_t>(d.n_ctx));
  w.set_u32(a + ".embedding_length", static_cast<uint32_t>(d.n_embd));
  w.set_u32(a + ".block_count", static_cast<uint32_t>(block_count));
  if (d.n_ff > 0) w.set_u32(a + ".feed_forward_length", static_cast<uint32_t>(d.n_ff));
  w.set_u32(a + ".attention.head_count", static_cast<uint32_t>(d.n_head));
  w.set_u32(a + ".attention.head_count_kv", static_cast<uint32_t>(d.n_head_kv));
  w.set_u32(a + ".attention.key_length", static_cast<uint32_t>(d.head_dim));
  w.set_u32(a + ".attention.value_length", static_cast<uint32_t>(d.head_dim));
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", static_cast<float>(d.eps));
  w.set_f32(a + ".rope.freq_base", static_cast<float>(d.rope_theta));
}

MoeDims read_moe_dims(const HfConfig& cfg, const std::string& arch, bool shared_expert,
                      bool norm_topk_default) {
  MoeDims m{};
  m.n_expert = cfg.get_dim("num_experts");
  m.n_expert_used = cfg.get_dim("num_experts_per_tok");
  m.n_ff_exp = cfg.get_dim("moe_intermediate_size");
  FULGUR_CHECK(m.n_expert_used <= m.n_expert, cfg.source(), ": num_experts_per_tok ",
               m.n_expert_used, " is more than num_experts ", m.n_expert);
  // llama.cpp's graphs for these archs always renormalise the top-k routing weights.
  FULGUR_CHECK(cfg.get_bool("norm_topk_prob", norm_topk_default), cfg.source(),
               ": norm_topk_prob is false", norm_topk_default ? "" : " or absent (transformers' default)",
               "; llama.cpp's ", arch, " always renormalises the top-k routing weights, so such a "
               "model is not supported");
  FULGUR_CHECK(cfg.get_int("decoder_sparse_step", 1) == 1, cfg.source(), ": decoder_sparse_step is ",
               cfg.get_int("decoder_sparse_step"), "; only 1 (every layer MoE) is supported, as in "
               "llama.cpp's ", arch);
  FULGUR_CHECK(!cfg.has("mlp_only_layers") || cfg.get_int_array("mlp_only_layers").empty(),
               cfg.source(), ": mlp_only_layers is not empty; dense layers in a ", arch,
               " model are not supported (llama.cpp's ", arch, " makes every layer MoE)");
  if (shared_expert) {
    m.n_ff_shexp = cfg.get_dim("shared_expert_intermediate_size");
  } else {
    FULGUR_CHECK(cfg.get_int("shared_expert_intermediate_size", 0) == 0, cfg.source(),
                 ": shared_expert_intermediate_size is set; ", arch, " has no shared expert");
  }
  return m;
}

void write_moe_keys(const std::string& a, const MoeDims& m, GgufWriter& w) {
  w.set_u32(a + ".expert_count", static_cast<uint32_t>(m.n_expert));
  w.set_u32(a + ".expert_used_count", static_cast<uint32_t>(m.n_expert_used));
  w.set_u32(a + ".expert_feed_forward_length", static_cast<uint32_t>(m.n_ff_exp));
  if (m.n_ff_shexp > 0) {
    w.set_u32(a + ".expert_shared_feed_forward_length", static_cast<uint32_t>(m.n_ff_shexp));
  }
}

std::string language_model_prefix(bool nested, const std::set<std::string>& names) {
  const bool language_model = names.count("model.language_model.embed_tokens.weight") > 0 ||
                              (nested && names.count("model.embed_tokens.weight") == 0);
  return language_model ? "model.language_model." : "model.";
}

void plan_swiglu_mlp(ArchPlan& plan, const std::string& hf, const std::string& g, int64_t n_embd,
                     int64_t n_ff) {
  plan.tensors.push_back(same_bytes(hf + "mlp.gate_proj.weight", g + "ffn_gate.weight", {n_ff, n_embd}));
  plan.tensors.push_back(same_bytes(hf + "mlp.up_proj.weight", g + "ffn_up.weight", {n_ff, n_embd}));
  plan.tensors.push_back(same_bytes(hf + "mlp.down_proj.weight", g + "ffn_down.weight", {n_embd, n_ff}));
}

void plan_routed_experts(ArchPlan& plan, const std::set<std::string>& names, const std::string& hf,
                         const std::string& g, int64_t n_embd, int64_t n_ff_exp, int64_t n_expert) {
  const int64_t E = n_embd, F = n_ff_exp, N = n_expert;
  plan.tensors.push_back(same_bytes(hf + "mlp.gate.weight", g + "ffn_gate_inp.weight", {N, E}));
  const std::string ex = hf + "mlp.experts.";
  if (names.count(ex + "gate_up_proj")) {
    // transformers v5 fused experts: gate_up_proj [N, 2F, E] (gate rows first), down_proj [N, E, F].
    TensorPlan gate, up;
    gate.gguf_name = g + "ffn_gate_exps.weight";
    up.gguf_name = g + "ffn_up_exps.weight";
    gate.shape = up.shape = {E, F, N};
    for (int64_t j = 0; j < N; ++j) {
      gate.parts.push_back({ex + "gate_up_proj", {N, 2 * F, E}, j * 2 * F, F});
      up.parts.push_back({ex + "gate_up_proj", {N, 2 * F, E}, j * 2 * F + F, F});
    }
    plan.tensors.push_back(std::move(gate));
    plan.tensors.push_back(std::move(up));
    plan.tensors.push_back(same_bytes(ex + "down_proj", g + "ffn_down_exps.weight", {N, E, F}));
  } else {
    plan.tensors.push_back(stacked(numbered_names(ex, N, ".gate_proj.weight"), {F, E}, g + "ffn_gate_exps.weight"));
    plan.tensors.push_back(stacked(numbered_names(ex, N, ".up_proj.weight"), {F, E}, g + "ffn_up_exps.weight"));
    plan.tensors.push_back(stacked(numbered_names(ex, N, ".down_proj.weight"), {E, F}, g + "ffn_down_exps.weight"));
  }
}

const char* dense_arch_name(DenseArch arch) {
  switch (arch) {
    case DenseArch::kQwen3: return "qwen3";
    case DenseArch::kQwen2: return "qwen2";
    case DenseArch::kLlama: return "llama";
    case DenseArch::kQwen3Moe: return "qwen3moe";
  }
  return "?";
}

ArchPlan plan_dense_decoder(DenseArch arch, const HfConfig& cfg, const std::set<std::string>& names,
                            GgufWriter& w) {
  const DecoderDims d = read_decoder_dims(cfg);
  const bool moe = arch == DenseArch::kQwen3Moe;
  const MoeDims m = moe ? read_moe_dims(cfg, "qwen3moe", false, false) : MoeDims{};
  const std::string a = dense_arch_name(arch);
  FULGUR_CHECK(!cfg.get_bool("mlp_bias", false), cfg.source(),
               ": mlp_bias is true; MLP biases are not supported");
  const bool attn_bias = arch == DenseArch::kQwen2 || cfg.get_bool("attention_bias", false);
  // Qwen2 has q/k/v biases and no o_proj bias; attention_bias elsewhere covers all four.
  const bool o_bias = attn_bias && arch != DenseArch::kQwen2;
  const bool qk_norm = arch == DenseArch::kQwen3 || moe;

  write_decoder_keys(a, d, d.n_layer, w);
  if (arch == DenseArch::kLlama) {
    w.set_u32(a + ".vocab_size", static_cast<uint32_t>(d.n_vocab));
    w.set_u32(a + ".rope.dimension_count", static_cast<uint32_t>(d.head_dim));
  }
  if (moe) write_moe_keys(a, m, w);
  write_rope_scaling(cfg, a, w);

  ArchPlan plan;
  plan.gguf_arch = a;
  plan.n_layer = d.n_layer;
  plan.n_vocab = d.n_vocab;
  plan.what = cat(cfg.source(), " (hidden_size ", d.n_embd, ", num_hidden_layers ", d.n_layer,
                  ", heads ", d.n_head, "/", d.n_head_kv, ", head_dim ", d.head_dim,
                  moe ? cat(", num_experts ", m.n_expert, ", moe_intermediate_size ", m.n_ff_exp)
                      : cat(", intermediate_size ", d.n_ff),
                  ", vocab_size ", d.n_vocab, ")");
  const int64_t q_dim = d.n_head * d.head_dim, kv_dim = d.n_head_kv * d.head_dim;
  const int64_t q_perm = arch == DenseArch::kLlama ? d.n_head : 0;
  const int64_t k_perm = arch == DenseArch::kLlama ? d.n_head_kv : 0;
  auto add = [&](std::string hf, std::string gguf, std::vector<int64_t> shape, int64_t permute = 0) {
    TensorPlan& tp = plan.tensors.emplace_back(same_bytes(std::move(hf), std::move(gguf), std::move(shape)));
    tp.permute_heads = permute;
  };

  if (arch == DenseArch::kLlama) {
    if (std::optional<std::vector<float>> f = llama3_rope_factors(cfg, d)) {
      plan.tensors.push_back(computed_tensor("rope_freqs.weight", {d.head_dim / 2}, std::move(*f)));
    }
  }
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
    if (qk_norm) {
      add(hf + "self_attn.q_norm.weight", g + "attn_q_norm.weight", {d.head_dim});
      add(hf + "self_attn.k_norm.weight", g + "attn_k_norm.weight", {d.head_dim});
    }
    add(hf + "post_attention_layernorm.weight", g + "ffn_norm.weight", {d.n_embd});
    if (moe) {
      plan_routed_experts(plan, names, hf, g, d.n_embd, m.n_ff_exp, m.n_expert);
    } else {
      plan_swiglu_mlp(plan, hf, g, d.n_embd, d.n_ff);
    }
  }
  add("model.norm.weight", "output_norm.weight", {d.n_embd});
  plan_output_head(plan, cfg, names, d.n_vocab, d.n_embd);
  return plan;
}

}  // namespace fulgur
