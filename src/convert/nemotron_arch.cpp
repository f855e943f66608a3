#include "convert/nemotron_arch.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/log.h"

namespace fulgur {
namespace {

enum class Kind : char { kMamba = 'M', kAttention = '*', kMlp = '-', kMoe = 'E' };

struct Layer {
  Kind kind;
  HfConfig cfg;  // the layer's effective config: global, overridden by its Puzzle block
};

// Puzzle fields llama.cpp's nemotron_h_moe holds once for all layers; only
// moe_intermediate_size and num_experts_per_tok may differ between blocks.
constexpr const char* kUniformMoe[] = {"n_routed_experts", "moe_shared_expert_intermediate_size",
                                       "moe_latent_size", "n_shared_experts", "routed_scaling_factor",
                                       "n_group", "topk_group", "norm_topk_prob"};
constexpr const char* kUniformMamba[] = {"mamba_num_heads", "mamba_head_dim", "n_groups",
                                         "ssm_state_size", "conv_kernel", "use_conv_bias"};
constexpr const char* kUniformAttention[] = {"num_attention_heads", "num_key_value_heads", "head_dim",
                                             "attention_head_dim"};

bool is_puzzle(const HfConfig& cfg) {
  if (cfg.has("block_configs") || cfg.get_string("model_type", "") == "nemotron_h_puzzle") return true;
  if (!cfg.has("architectures")) return false;
  const std::vector<std::string> archs = cfg.get_string_array("architectures");
  return !archs.empty() && archs[0] == "NemotronHPuzzleForCausalLM";
}

Kind kind_of_type(const std::string& type, const std::string& where) {
  if (type == "mamba" || type == "linear_attention") return Kind::kMamba;
  if (type == "attention" || type == "full_attention") return Kind::kAttention;
  if (type == "mlp") return Kind::kMlp;
  if (type == "moe") return Kind::kMoe;
  fail(where, " is '", type, "'; expected mamba, attention, mlp or moe");
}

void check_count(const HfConfig& cfg, size_t n, const char* list) {
  if (!cfg.has("num_hidden_layers")) return;
  const int64_t want = cfg.get_dim("num_hidden_layers");
  FULGUR_CHECK(static_cast<int64_t>(n) == want, cfg.source(), ": ", list, " has ", n,
               " entries but num_hidden_layers is ", want);
}

std::vector<Layer> read_layers(const HfConfig& cfg, bool puzzle) {
  std::vector<Layer> layers;
  if (puzzle) {
    FULGUR_CHECK(cfg.has("block_configs"), cfg.source(),
                 ": a Nemotron-H Puzzle config needs 'block_configs' (one entry per layer)");
    const std::vector<HfConfig> blocks = cfg.get_object_array("block_configs");
    check_count(cfg, blocks.size(), "block_configs");
    for (size_t i = 0; i < blocks.size(); ++i) {
      const std::string where = cat(cfg.source(), ": block_configs[", i, "].block_type");
      const Kind kind = kind_of_type(blocks[i].get_string("block_type"), where);
      nlohmann::json merged = cfg.json();
      merged.erase("block_configs");
      merged.erase("mtp_block_configs");
      for (const auto& [key, value] : blocks[i].json().items()) {
        if (!value.is_null()) merged[key] = value;
      }
      layers.push_back({kind, HfConfig(std::move(merged), cfg.source(), cat("block_configs[", i, "]"))});
    }
  } else if (cfg.has("hybrid_override_pattern")) {
    const std::string pattern = cfg.get_string("hybrid_override_pattern");
    const int64_t n_layer = cfg.get_dim("num_hidden_layers");
    FULGUR_CHECK(static_cast<int64_t>(pattern.size()) == n_layer, cfg.source(),
                 ": hybrid_override_pattern '", pattern, "' has ", pattern.size(),
                 " entries but num_hidden_layers is ", n_layer);
    for (size_t i = 0; i < pattern.size(); ++i) {
      const char c = pattern[i];
      FULGUR_CHECK(c == 'M' || c == '*' || c == '-' || c == 'E', cfg.source(),
                   ": hybrid_override_pattern[", i, "] is '", c,
                   "'; expected M (Mamba2), * (attention), - (MLP) or E (MoE)");
      layers.push_back({static_cast<Kind>(c), cfg});
    }
  } else {
    FULGUR_CHECK(cfg.has("layers_block_type"), cfg.source(),
                 ": has neither hybrid_override_pattern, layers_block_type nor block_configs; "
                 "cannot tell the layer kinds");
    const std::vector<std::string> types = cfg.get_string_array("layers_block_type");
    check_count(cfg, types.size(), "layers_block_type");
    for (size_t i = 0; i < types.size(); ++i) {
      layers.push_back({kind_of_type(types[i], cat(cfg.source(), ": layers_block_type[", i, "]")), cfg});
    }
  }
  FULGUR_CHECK(!layers.empty(), cfg.source(), ": the model has no layers");
  return layers;
}

// The effective config of the first layer of `kind`, or the global config.
const HfConfig& first_of(const std::vector<Layer>& layers, Kind kind, const HfConfig& cfg) {
  for (const Layer& l : layers) {
    if (l.kind == kind) return l.cfg;
  }
  return cfg;
}

// Every layer of `kind` must agree on `keys` (absent = null).
template <size_t N>
void check_uniform(const std::vector<Layer>& layers, Kind kind, const char* const (&keys)[N],
                   const HfConfig& cfg) {
  const Layer* first = nullptr;
  size_t first_i = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (layers[i].kind != kind) continue;
    if (first == nullptr) {
      first = &layers[i];
      first_i = i;
      continue;
    }
    for (const char* key : keys) {
      const nlohmann::json a = first->cfg.has(key) ? first->cfg.json().at(key) : nlohmann::json();
      const nlohmann::json b = layers[i].cfg.has(key) ? layers[i].cfg.json().at(key) : nlohmann::json();
      FULGUR_CHECK(a == b, cfg.source(), ": block_configs[", i, "] has ", key, " = ", b.dump(),
                   " but block_configs[", first_i, "] has ", a.dump(),
                   "; llama.cpp's nemotron_h_moe holds one ", key, " for all layers");
    }
  }
}

void check_value(const HfConfig& c, const char* key, const char* want) {
  if (!c.has(key)) return;
  const std::string v = c.get_string(key);
  FULGUR_CHECK(v == want, c.source(), ": ", key, " is '", v, "'; only '", want, "' is supported");
}

void check_false(const HfConfig& c, const char* key, const char* what) {
  FULGUR_CHECK(!c.get_bool(key, false), c.source(), ": ", key, " is true; ", what,
               " are not supported (llama.cpp's nemotron_h has none)");
}

}  // namespace

ArchPlan plan_nemotron_h(const HfConfig& cfg, const std::set<std::string>& names, MtpMode mtp, GgufWriter& w) {
  const bool puzzle = is_puzzle(cfg);
  const bool moe = puzzle || cfg.has("num_experts_per_tok");  // llama.cpp's test
  const std::vector<Layer> layers = read_layers(cfg, puzzle);
  const int64_t n_layer = static_cast<int64_t>(layers.size());
  std::string pattern;
  for (size_t i = 0; i < layers.size(); ++i) {
    const Kind k = layers[i].kind;
    pattern += static_cast<char>(k);
    FULGUR_CHECK(k != Kind::kMlp || !moe, cfg.source(), ": layer ", i,
                 " is an MLP block but the model is MoE (num_experts_per_tok or block_configs): "
                 "llama.cpp's nemotron_h_moe runs every feed-forward layer as MoE");
    FULGUR_CHECK(k != Kind::kMoe || moe, cfg.source(), ": layer ", i,
                 " is a MoE block but the config has no num_experts_per_tok");
    FULGUR_CHECK(k != Kind::kAttention || !layers[i].cfg.has("sliding_window"), layers[i].cfg.source(),
                 ": layer ", i, " has a sliding_window; sliding-window attention is not supported");
  }
  if (puzzle) {
    check_uniform(layers, Kind::kMoe, kUniformMoe, cfg);
    check_uniform(layers, Kind::kMamba, kUniformMamba, cfg);
    check_uniform(layers, Kind::kAttention, kUniformAttention, cfg);
  }
  // (hidden_act is not the MLP's activation in these configs; llama.cpp ignores it too.)
  check_value(cfg, "mamba_hidden_act", "silu");
  check_value(cfg, "mlp_hidden_act", "relu2");
  check_false(cfg, "attention_bias", "attention biases");
  check_false(cfg, "mlp_bias", "MLP biases");
  check_false(cfg, "use_bias", "Mamba projection biases");
  check_false(cfg, "mamba_proj_bias", "Mamba projection biases");

  // The MTP head (llama.cpp's NemotronH MTP export): mtp.layers.0 (NextN fusion + attention) and
  // mtp.layers.1 (MoE, or on a dense model an MLP, + final_layernorm) fold into one block after
  // the trunk. Puzzle heads are laid out by mtp_block_configs, which llama.cpp does not convert.
  const int64_t n_nextn = cfg.get_int("num_nextn_predict_layers", 0);
  const size_t n_mtp_blocks = cfg.has("mtp_block_configs") ? cfg.json().at("mtp_block_configs").size() : 0;
  size_t n_mtp_tensors = 0;
  for (const std::string& name : names) n_mtp_tensors += name.starts_with("mtp.") ? 1 : 0;
  bool with_mtp = false;
  if (puzzle) {
    FULGUR_CHECK(mtp != MtpMode::kInclude, "convert: --mtp: ", cfg.source(),
                 " is a Nemotron-H Puzzle checkpoint, whose MTP head (mtp_block_configs) is not "
                 "converted (llama.cpp's converter drops it too); convert without --mtp");
  } else {
    FULGUR_CHECK(n_nextn >= 0 && n_nextn <= 1, cfg.source(), ": num_nextn_predict_layers is ", n_nextn,
                 "; fulgur converts at most one MTP block (as llama.cpp's converter)");
    with_mtp = include_mtp_block(mtp, cfg, "num_nextn_predict_layers", n_nextn, n_mtp_tensors > 0, "mtp.");
    const std::string want = moe ? "*E" : "*-";
    const std::string mtp_pattern = cfg.get_string("mtp_hybrid_override_pattern", want);
    FULGUR_CHECK(!with_mtp || mtp_pattern == want, cfg.source(), ": mtp_hybrid_override_pattern is '",
                 mtp_pattern, "'; the MTP block fulgur and llama.cpp run is '", want,
                 "' (attention, then the model's ", moe ? "MoE" : "MLP", ")");
  }
  if (!with_mtp && (n_nextn > 0 || n_mtp_blocks > 0 || n_mtp_tensors > 0)) {
    log_info(cfg.source(), ": MTP head (num_nextn_predict_layers ", n_nextn, ", ", n_mtp_blocks,
             " mtp_block_configs, ", n_mtp_tensors, " mtp.* tensors) left out of the target GGUF");
  }
  // GGUF blocks: the trunk, then the MTP block (attention + the feed-forward kind).
  const int64_t n_block = n_layer + (with_mtp ? 1 : 0);
  const Kind mtp_ffn = moe ? Kind::kMoe : Kind::kMlp;

  const int64_t E = cfg.get_dim("hidden_size");
  const int64_t n_vocab = cfg.get_dim("vocab_size");
  double eps = 1e-5;
  for (const char* key : {"norm_eps", "rms_norm_eps", "layer_norm_epsilon"}) eps = cfg.get_float(key, eps);
  FULGUR_CHECK(eps > 0 && eps < 1, cfg.source(), ": layer_norm_epsilon is ", eps, "; expected a small positive number");

  const HfConfig& ac = first_of(layers, Kind::kAttention, cfg);
  const int64_t n_head = ac.get_dim("num_attention_heads");
  const int64_t n_head_kv = ac.get_dim("num_key_value_heads", n_head);
  const int64_t head_dim = ac.get_dim("head_dim", ac.get_dim("attention_head_dim", E / n_head));
  FULGUR_CHECK(ac.has("head_dim") || ac.has("attention_head_dim") || E % n_head == 0, cfg.source(),
               ": hidden_size ", E, " is not divisible by num_attention_heads ", n_head, " and there is no head_dim");

  const HfConfig& mc = first_of(layers, Kind::kMamba, cfg);
  const int64_t Hs = mc.get_dim("mamba_num_heads"), P = mc.get_dim("mamba_head_dim");
  const int64_t G = mc.get_dim("n_groups"), N = mc.get_dim("ssm_state_size"), K = mc.get_dim("conv_kernel");
  const bool conv_bias = mc.get_bool("use_conv_bias", true);
  const int64_t Di = Hs * P, Cm = Di + 2 * G * N;
  FULGUR_CHECK(Hs % G == 0, cfg.source(), ": mamba_num_heads ", Hs, " is not a multiple of n_groups ", G);

  const HfConfig& ec = first_of(layers, Kind::kMoe, cfg);
  int64_t n_expert = 0, n_ff_sh = 0, latent = 0;
  if (moe) {
    n_expert = ec.get_dim("n_routed_experts");
    n_ff_sh = ec.get_dim("moe_shared_expert_intermediate_size");
    latent = ec.has("moe_latent_size") ? ec.get_dim("moe_latent_size") : 0;
    FULGUR_CHECK(ec.get_int("n_shared_experts") == 1, ec.source(), ": n_shared_experts is ",
                 ec.get_int("n_shared_experts"), "; only 1 is supported (llama.cpp's nemotron_h_moe)");
    const int64_t n_group = ec.get_dim("n_group");
    FULGUR_CHECK(n_expert % n_group == 0 && (n_group == 1 || ec.get_dim("topk_group") < n_group),
                 ec.source(), ": n_group ", n_group, " does not divide n_routed_experts ", n_expert,
                 " into groups with topk_group below it");
  }

  const std::string a = moe ? "nemotron_h_moe" : "nemotron_h";
  std::vector<int32_t> n_ff(n_block, 0), n_kv(n_block, 0), n_ff_exp(n_block, 0), n_used(n_block, 0);
  if (with_mtp) {  // the block attends and has the model's feed-forward (global config)
    n_kv[n_layer] = static_cast<int32_t>(n_head_kv);
    n_ff[n_layer] = static_cast<int32_t>(cfg.get_dim(moe ? "moe_intermediate_size" : "intermediate_size"));
    if (moe) {
      n_ff_exp[n_layer] = n_ff[n_layer];
      n_used[n_layer] = static_cast<int32_t>(cfg.get_dim("num_experts_per_tok"));
    }
  }
  for (int64_t i = 0; i < n_layer; ++i) {
    const Layer& l = layers[i];
    if (l.kind == Kind::kAttention) n_kv[i] = static_cast<int32_t>(n_head_kv);
    if (l.kind == Kind::kMlp) n_ff[i] = static_cast<int32_t>(l.cfg.get_dim("intermediate_size"));
    if (l.kind == Kind::kMoe) {
      n_ff[i] = n_ff_exp[i] = static_cast<int32_t>(l.cfg.get_dim("moe_intermediate_size"));
      n_used[i] = static_cast<int32_t>(l.cfg.get_dim("num_experts_per_tok"));
      FULGUR_CHECK(n_used[i] <= n_expert, l.cfg.source(), ": num_experts_per_tok ", n_used[i],
                   " (layer ", i, ") is more than n_routed_experts ", n_expert);
    }
  }

  w.set_string("general.architecture", a);
  auto u32 = [&](const std::string& key, int64_t v) { w.set_u32(a + "." + key, static_cast<uint32_t>(v)); };
  u32("context_length", cfg.get_dim("max_position_embeddings", 4096));
  u32("embedding_length", E);
  u32("block_count", n_block);
  u32("vocab_size", n_vocab);
  w.set_array<int32_t>(a + ".feed_forward_length", n_ff);
  u32("attention.head_count", n_head);
  w.set_array<int32_t>(a + ".attention.head_count_kv", n_kv);
  u32("attention.key_length", head_dim);
  u32("attention.value_length", head_dim);
  w.set_f32(a + ".attention.layer_norm_epsilon", static_cast<float>(eps));
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", static_cast<float>(eps));
  u32("ssm.conv_kernel", K);
  u32("ssm.inner_size", Di);
  u32("ssm.state_size", N);
  u32("ssm.time_step_rank", Hs);
  u32("ssm.group_count", G);
  if (moe) {
    u32("expert_count", n_expert);
    if (puzzle) {
      w.set_array<int32_t>(a + ".expert_used_count", n_used);
      w.set_array<int32_t>(a + ".expert_feed_forward_length", n_ff_exp);
    } else {
      u32("expert_used_count", ec.get_dim("num_experts_per_tok"));
      u32("expert_feed_forward_length", ec.get_dim("moe_intermediate_size"));
    }
    u32("expert_shared_feed_forward_length", n_ff_sh);
    u32("expert_shared_count", 1);
    w.set_bool(a + ".expert_weights_norm", ec.get_bool("norm_topk_prob"));
    w.set_f32(a + ".expert_weights_scale", static_cast<float>(ec.get_float("routed_scaling_factor")));
    u32("expert_group_count", ec.get_dim("n_group"));
    if (ec.has("topk_group")) u32("expert_group_used_count", ec.get_dim("topk_group"));
    if (latent > 0) u32("moe_latent_size", latent);
  }
  if (with_mtp) u32("nextn_predict_layers", 1);

  ArchPlan plan;
  plan.gguf_arch = a;
  plan.n_layer = n_block;
  plan.n_vocab = n_vocab;
  plan.what = cat(cfg.source(), " (", puzzle ? "Puzzle, " : "", "hidden_size ", E, ", layers ", pattern,
                  ", heads ", n_head, "/", n_head_kv, "x", head_dim, ", mamba ", Hs, "x", P, " n_groups ", G,
                  " ssm_state_size ", N, " conv_kernel ", K,
                  moe ? cat(", n_routed_experts ", n_expert, latent ? cat(" moe_latent_size ", latent) : "") : "",
                  ", vocab_size ", n_vocab, with_mtp ? ", MTP block" : "", ")");

  if (!with_mtp) {
    for (const std::string& name : names) {
      if (name.starts_with("mtp.")) plan.ignored.insert(name);
    }
  }

  // Original releases name the trunk backbone.*, Puzzle releases model.*.
  const std::string pre = names.count("backbone.embeddings.weight") ? "backbone."
                          : names.count("model.embeddings.weight") ? "model."
                          : puzzle                                  ? "model."
                                                                    : "backbone.";
  auto add = [&](std::string hf, std::string gguf, std::vector<int64_t> shape) {
    plan.tensors.push_back(same_bytes(std::move(hf), std::move(gguf), std::move(shape)));
  };
  // One sublayer's tensors: hf = its HF "...mixer." prefix, g = "blk.N.", F = its MLP or expert width.
  const auto add_sublayer = [&](Kind kind, const std::string& hf, const std::string& g, int64_t F) {
    switch (kind) {
      case Kind::kMamba: {
        add(hf + "in_proj.weight", g + "ssm_in.weight", {2 * Di + 2 * G * N + Hs, E});
        plan.tensors.push_back(reshaped(hf + "conv1d.weight", {Cm, 1, K}, g + "ssm_conv1d.weight", {K, Cm}));
        if (conv_bias) add(hf + "conv1d.bias", g + "ssm_conv1d.bias", {Cm});
        add(hf + "dt_bias", g + "ssm_dt.bias", {Hs});
        TensorPlan& a_plan = plan.tensors.emplace_back(reshaped(hf + "A_log", {Hs}, g + "ssm_a", {1, Hs}));
        a_plan.transform = ValueTransform::kNegExp;
        plan.tensors.push_back(reshaped(hf + "D", {Hs}, g + "ssm_d", {1, Hs}));
        plan.tensors.push_back(reshaped(hf + "norm.weight", {Di}, g + "ssm_norm.weight", {Di / G, G}));
        add(hf + "out_proj.weight", g + "ssm_out.weight", {E, Di});
        break;
      }
      case Kind::kAttention:
        add(hf + "q_proj.weight", g + "attn_q.weight", {n_head * head_dim, E});
        add(hf + "k_proj.weight", g + "attn_k.weight", {n_head_kv * head_dim, E});
        add(hf + "v_proj.weight", g + "attn_v.weight", {n_head_kv * head_dim, E});
        add(hf + "o_proj.weight", g + "attn_output.weight", {E, n_head * head_dim});
        break;
      case Kind::kMlp:
        add(hf + "up_proj.weight", g + "ffn_up.weight", {F, E});
        add(hf + "down_proj.weight", g + "ffn_down.weight", {E, F});
        break;
      case Kind::kMoe: {
        const int64_t L = latent > 0 ? latent : E;
        add(hf + "gate.weight", g + "ffn_gate_inp.weight", {n_expert, E});
        // transformers registers the correction bias as a buffer (e_score_correction_bias);
        // some exports spell it e_score_correction.bias.
        const std::string bias = names.count(hf + "gate.e_score_correction.bias") ? "gate.e_score_correction.bias"
                                                                                 : "gate.e_score_correction_bias";
        add(hf + bias, g + "exp_probs_b.bias", {n_expert});
        if (latent > 0) {
          add(hf + "fc1_latent_proj.weight", g + "ffn_latent_down.weight", {L, E});
          add(hf + "fc2_latent_proj.weight", g + "ffn_latent_up.weight", {E, L});
        }
        plan.tensors.push_back(stacked(numbered_names(hf + "experts.", n_expert, ".up_proj.weight"), {F, L},
                                       g + "ffn_up_exps.weight"));
        plan.tensors.push_back(stacked(numbered_names(hf + "experts.", n_expert, ".down_proj.weight"), {L, F},
                                       g + "ffn_down_exps.weight"));
        add(hf + "shared_experts.up_proj.weight", g + "ffn_up_shexp.weight", {n_ff_sh, E});
        add(hf + "shared_experts.down_proj.weight", g + "ffn_down_shexp.weight", {E, n_ff_sh});
        break;
      }
    }
  };
  add(pre + "embeddings.weight", "token_embd.weight", {n_vocab, E});
  for (int64_t i = 0; i < n_layer; ++i) {
    const std::string g = cat("blk.", i, ".");
    add(cat(pre, "layers.", i, ".norm.weight"), g + "attn_norm.weight", {E});
    add_sublayer(layers[i].kind, cat(pre, "layers.", i, ".mixer."), g, layers[i].kind == Kind::kMlp ? n_ff[i] : n_ff_exp[i]);
  }
  if (with_mtp) {
    // blk.N: [enorm(embedding) ; hnorm(hidden)] -> eh_proj, attention behind attn_norm, the
    // feed-forward behind post_attention_norm, then shared_head_norm (HF final_layernorm).
    const std::string g = cat("blk.", n_layer, "."), m0 = "mtp.layers.0.", m1 = "mtp.layers.1.";
    add(m0 + "enorm.weight", g + "nextn.enorm.weight", {E});
    add(m0 + "hnorm.weight", g + "nextn.hnorm.weight", {E});
    add(m0 + "eh_proj.weight", g + "nextn.eh_proj.weight", {E, 2 * E});  // input [embedding ; hidden]
    add(m0 + "norm.weight", g + "attn_norm.weight", {E});
    add_sublayer(Kind::kAttention, m0 + "mixer.", g, 0);
    add(m1 + "norm.weight", g + "post_attention_norm.weight", {E});
    add_sublayer(mtp_ffn, m1 + "mixer.", g, moe ? n_ff_exp[n_layer] : n_ff[n_layer]);
    add(m1 + "final_layernorm.weight", g + "nextn.shared_head_norm.weight", {E});
  }
  add(pre + "norm_f.weight", "output_norm.weight", {E});
  plan_output_head(plan, cfg, names, n_vocab, E);
  return plan;
}

}  // namespace fulgur
