#include "convert/gemma4_arch.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "convert/dense_arch.h"
#include "core/error.h"
#include "core/log.h"

namespace fulgur {
namespace {

constexpr const char* kArch = "gemma4";
constexpr const char* kAssistantArch = "gemma4-assistant";

struct Gemma4Dims {
  DecoderDims d;                 // head_dim: the sliding layers' head size; rope_theta unused
  int64_t global_head_dim;       // the full layers' head size
  std::vector<bool> sliding;     // [layer] sliding_attention (else full_attention)
  std::vector<int32_t> n_head_kv;  // [layer]
  std::vector<int32_t> n_ff;       // [layer] MLP width
  bool k_eq_v;                   // full layers have no v_proj
  int64_t n_kv_shared;           // the last n_kv_shared layers own no K/V
  int64_t window;                // sliding_window
  int64_t n_embd_per_layer;      // hidden_size_per_layer_input; 0 without per-layer embeddings
  double softcap;                // final_logit_softcapping; 0 when absent
  double theta_full, theta_swa;
  int64_t n_rot_swa;             // rotated dims of a sliding layer
  int64_t n_rot_pairs_full;      // rotated pairs of a full layer (proportional RoPE)
  MoeDims moe;                   // n_expert 0 without MoE

  int64_t n_layer() const { return d.n_layer; }
  int64_t first_kv_shared() const { return d.n_layer - n_kv_shared; }
  bool owns_kv(int64_t i) const { return i < first_kv_shared(); }
  bool has_v(int64_t i) const { return !(k_eq_v && !sliding[i]); }
  int64_t head_dim(int64_t i) const { return sliding[i] ? d.head_dim : global_head_dim; }
};

std::vector<bool> read_layer_types(const HfConfig& text, int64_t n_layer) {
  const std::vector<std::string> types = text.get_string_array("layer_types");
  FULGUR_CHECK(static_cast<int64_t>(types.size()) == n_layer, text.source(), ": layer_types has ",
               types.size(), " entries for num_hidden_layers ", n_layer);
  std::vector<bool> sliding;
  for (size_t i = 0; i < types.size(); ++i) {
    FULGUR_CHECK(types[i] == "sliding_attention" || types[i] == "full_attention", text.source(),
                 ": layer_types[", i, "] is '", types[i],
                 "'; expected sliding_attention or full_attention");
    sliding.push_back(types[i] == "sliding_attention");
  }
  return sliding;
}

// llama.cpp gives KV-shared layer i the cache of layer first - 1 (full i) or first - 2 (sliding
// i), first being the first shared layer (its KV cache's reuse map); transformers gives it the
// last KV-owning layer of its kind. They agree when the KV-owning layers end "sliding, full"
// (as the released E-series models do); another ending either stops llama.cpp with an assertion
// or reads another layer's cache.
void check_kv_sharing(const HfConfig& text, const Gemma4Dims& g) {
  const int64_t n = g.n_kv_shared, first = g.first_kv_shared();
  FULGUR_CHECK(n >= 0 && n < g.n_layer(), text.source(), ": num_kv_shared_layers is ", n,
               "; expected fewer than num_hidden_layers ", g.n_layer(), " (some layer must own K/V)");
  if (n == 0) return;
  FULGUR_CHECK(first >= 2 && g.sliding[first - 2] && !g.sliding[first - 1], text.source(),
               ": num_kv_shared_layers ", n, " leaves KV-owning layers 0..", first - 1,
               " that do not end with a sliding_attention then a full_attention layer; llama.cpp "
               "maps a KV-shared layer to the cache of layer ", first - 1, " (full) or ", first - 2,
               " (sliding) by position, so such a file would not load or would read another "
               "layer's cache");
}

void read_rope(const HfConfig& text, Gemma4Dims& g) {
  const HfConfig rope = text.get_object("rope_parameters");
  const HfConfig full = rope.get_object("full_attention");
  // llama.cpp rotates a full layer's whole head and switches pairs off through rope_freqs: the
  // form of transformers' "proportional" RoPE, and of nothing else.
  const std::string full_type = full.get_string("rope_type", "default");
  FULGUR_CHECK(full_type == "proportional", full.source(),
               ": rope_parameters.full_attention.rope_type is '", full_type,
               "'; llama.cpp's gemma4 (rope_freqs on the full layers) supports 'proportional' only");
  g.theta_full = full.get_float("rope_theta");
  const double full_factor = full.get_float("partial_rotary_factor", 1.0);
  g.n_rot_pairs_full = static_cast<int64_t>(static_cast<double>(g.global_head_dim) * full_factor / 2);
  FULGUR_CHECK(full_factor > 0 && full_factor <= 1 && g.n_rot_pairs_full > 0, full.source(),
               ": rope_parameters.full_attention.partial_rotary_factor ", full_factor,
               " of global_head_dim ", g.global_head_dim, " rotates ", g.n_rot_pairs_full,
               " pairs; expected a factor in (0, 1] rotating at least one");

  const bool any_sliding = std::find(g.sliding.begin(), g.sliding.end(), true) != g.sliding.end();
  g.theta_swa = g.theta_full;
  g.n_rot_swa = g.d.head_dim;
  if (!rope.has("sliding_attention")) {
    FULGUR_CHECK(!any_sliding, rope.source(),
                 ": rope_parameters has no sliding_attention entry for the sliding layers");
    return;
  }
  const HfConfig swa = rope.get_object("sliding_attention");
  const std::string swa_type = swa.get_string("rope_type", "default");
  FULGUR_CHECK(swa_type == "default", swa.source(), ": rope_parameters.sliding_attention.rope_type is '",
               swa_type, "'; llama.cpp's gemma4 supports plain RoPE ('default') on sliding layers");
  g.theta_swa = swa.get_float("rope_theta");
  const double swa_factor = swa.get_float("partial_rotary_factor", 1.0);
  g.n_rot_swa = static_cast<int64_t>(static_cast<double>(g.d.head_dim) * swa_factor);
  FULGUR_CHECK(swa_factor > 0 && swa_factor <= 1 && g.n_rot_swa > 0 && g.n_rot_swa % 2 == 0,
               swa.source(), ": rope_parameters.sliding_attention.partial_rotary_factor ", swa_factor,
               " of head_dim ", g.d.head_dim, " gives ", g.n_rot_swa,
               " rotated dims; expected an even number in (0, head_dim]");
  FULGUR_CHECK(g.theta_full > 0 && g.theta_swa > 0 && std::isfinite(g.theta_full) && std::isfinite(g.theta_swa),
               rope.source(), ": rope_theta ", g.theta_full, " / ", g.theta_swa, "; expected positive numbers");
}

// Gemma4TextConfig's MoE fields; llama.cpp's converter also accepts expert_intermediate_size and
// num_experts_per_tok.
MoeDims read_moe(const HfConfig& text) {
  MoeDims m{};
  if (!text.get_bool("enable_moe_block", false)) return m;
  m.n_expert = text.get_dim("num_experts");
  m.n_expert_used = text.has("top_k_experts") ? text.get_dim("top_k_experts") : text.get_dim("num_experts_per_tok");
  m.n_ff_exp = text.has("moe_intermediate_size") ? text.get_dim("moe_intermediate_size")
                                                 : text.get_dim("expert_intermediate_size");
  FULGUR_CHECK(m.n_expert_used <= m.n_expert, text.source(), ": top_k_experts ", m.n_expert_used,
               " is more than num_experts ", m.n_expert);
  return m;
}

// `assistant`: the Gemma 4 assistant, whose layers all share the target's KV (they own none).
Gemma4Dims read_gemma4_dims(const HfConfig& text, bool assistant) {
  Gemma4Dims g{};
  g.d = read_decoder_dims(text);
  const int64_t L = g.d.n_layer;
  g.global_head_dim = text.get_dim("global_head_dim");
  g.sliding = read_layer_types(text, L);
  g.window = text.get_dim("sliding_window");
  g.n_kv_shared = text.get_int("num_kv_shared_layers", assistant ? L : 0);
  if (assistant) {
    FULGUR_CHECK(g.n_kv_shared == L, text.source(), ": num_kv_shared_layers is ", g.n_kv_shared,
                 "; an assistant's layers own no K/V (they read the target's cache), so it must equal "
                 "num_hidden_layers ", L);
  } else {
    check_kv_sharing(text, g);
  }
  g.k_eq_v = text.get_bool("attention_k_eq_v", false);
  g.n_embd_per_layer = text.get_int("hidden_size_per_layer_input", 0);
  FULGUR_CHECK(g.n_embd_per_layer >= 0 && g.n_embd_per_layer < (int64_t{1} << 31), text.source(),
               ": hidden_size_per_layer_input is ", g.n_embd_per_layer, "; expected 0 or a positive size");
  if (g.n_embd_per_layer > 0) {
    // llama.cpp's per_layer_token_embd has the embedding's rows.
    const int64_t rows = text.get_dim("vocab_size_per_layer_input", g.d.n_vocab);
    FULGUR_CHECK(rows == g.d.n_vocab, text.source(), ": vocab_size_per_layer_input ", rows,
                 " differs from vocab_size ", g.d.n_vocab, "; llama.cpp's gemma4 needs them equal");
  }
  g.softcap = text.has("final_logit_softcapping") ? text.get_float("final_logit_softcapping") : 0.0;
  FULGUR_CHECK(g.softcap >= 0 && std::isfinite(g.softcap), text.source(), ": final_logit_softcapping is ",
               g.softcap, "; expected a positive number or null");
  read_rope(text, g);
  g.moe = read_moe(text);

  const std::string act = text.get_string("hidden_activation", "gelu_pytorch_tanh");
  FULGUR_CHECK(act == "gelu_pytorch_tanh", text.source(), ": hidden_activation is '", act,
               "'; llama.cpp's gemma4 computes GELU (tanh approximation) only");
  FULGUR_CHECK(!text.get_bool("attention_bias", false), text.source(),
               ": attention_bias is true; llama.cpp's gemma4 has no attention biases");
  FULGUR_CHECK(text.get_string("use_bidirectional_attention", "") != "all", text.source(),
               ": use_bidirectional_attention is 'all' (a bidirectional encoder); llama.cpp's gemma4 "
               "text model is causal");

  // transformers uses num_global_key_value_heads on the full layers only with attention_k_eq_v
  // (Gemma4TextAttention), and the checkpoint's k_proj shapes follow it.
  const bool global_kv = g.k_eq_v && text.has("num_global_key_value_heads");
  const int64_t n_kv_full = global_kv ? text.get_dim("num_global_key_value_heads") : g.d.n_head_kv;
  FULGUR_CHECK(g.d.n_head % n_kv_full == 0, text.source(), ": num_attention_heads ", g.d.n_head,
               " is not a multiple of num_global_key_value_heads ", n_kv_full);
  const bool double_wide = text.get_bool("use_double_wide_mlp", false);
  for (int64_t i = 0; i < L; ++i) {
    g.n_head_kv.push_back(static_cast<int32_t>(g.sliding[i] ? g.d.n_head_kv : n_kv_full));
    // Gemma4TextMLP: twice as wide on the KV-shared layers.
    const bool wide = double_wide && g.n_kv_shared > 0 && !g.owns_kv(i);
    g.n_ff.push_back(static_cast<int32_t>(g.d.n_ff * (wide ? 2 : 1)));
  }
  return g;
}

// A per-layer key: a scalar when every layer has the same value (llama.cpp broadcasts it), else
// an array of block_count entries.
void set_per_layer(GgufWriter& w, const std::string& key, const std::vector<int32_t>& values) {
  if (std::adjacent_find(values.begin(), values.end(), std::not_equal_to<>()) == values.end()) {
    w.set_u32(key, static_cast<uint32_t>(values.at(0)));
  } else {
    w.set_array<int32_t>(key, values);
  }
}

void write_gemma4_keys(const std::string& a, const Gemma4Dims& g, GgufWriter& w) {
  DecoderDims full = g.d;  // the unsuffixed head keys are the full layers'
  full.head_dim = g.global_head_dim;
  full.rope_theta = g.theta_full;
  write_decoder_keys(a, full, g.n_layer(), w);
  set_per_layer(w, a + ".feed_forward_length", g.n_ff);
  set_per_layer(w, a + ".attention.head_count_kv", g.n_head_kv);
  w.set_u32(a + ".attention.key_length_swa", static_cast<uint32_t>(g.d.head_dim));
  w.set_u32(a + ".attention.value_length_swa", static_cast<uint32_t>(g.d.head_dim));
  w.set_u32(a + ".attention.sliding_window", static_cast<uint32_t>(g.window));
  w.set_array<bool>(a + ".attention.sliding_window_pattern", g.sliding);
  w.set_u32(a + ".attention.shared_kv_layers", static_cast<uint32_t>(g.n_kv_shared));
  w.set_u32(a + ".embedding_length_per_layer_input", static_cast<uint32_t>(g.n_embd_per_layer));
  if (g.softcap > 0) w.set_f32(a + ".final_logit_softcapping", static_cast<float>(g.softcap));
  w.set_f32(a + ".rope.freq_base_swa", static_cast<float>(g.theta_swa));
  // Proportional RoPE: the full layers rotate every pair, rope_freqs switching the rest off.
  w.set_u32(a + ".rope.dimension_count", static_cast<uint32_t>(g.global_head_dim));
  w.set_u32(a + ".rope.dimension_count_swa", static_cast<uint32_t>(g.n_rot_swa));
  if (g.moe.n_expert > 0) write_moe_keys(a, g.moe, w);
}

class Gemma4Planner {
 public:
  Gemma4Planner(const Gemma4Dims& g, ArchPlan& plan) : g_(g), plan_(plan) {}

  void add(const std::string& hf, const std::string& gguf, std::vector<int64_t> hf_shape) {
    plan_.tensors.push_back(same_bytes(hf, gguf, std::move(hf_shape)));
  }

  // rope_freqs {global_head_dim / 2}: 1 for the rotated pairs, 1e30 (a frequency of ~0, so no
  // rotation) for the others, as llama.cpp's converter computes it.
  void rope_freqs() {
    std::vector<float> factors(static_cast<size_t>(g_.global_head_dim / 2), 1e30f);
    std::fill_n(factors.begin(), g_.n_rot_pairs_full, 1.0f);
    plan_.tensors.push_back(computed_tensor("rope_freqs.weight", {g_.global_head_dim / 2}, std::move(factors)));
  }

  void per_layer_embeddings(const std::string& p) {
    const int64_t E = g_.d.n_embd, all = g_.n_layer() * g_.n_embd_per_layer;
    add(p + "embed_tokens_per_layer.weight", "per_layer_token_embd.weight", {g_.d.n_vocab, all});
    add(p + "per_layer_model_projection.weight", "per_layer_model_proj.weight", {all, E});
    add(p + "per_layer_projection_norm.weight", "per_layer_proj_norm.weight", {g_.n_embd_per_layer});
  }

  void layer(const std::string& hf, const std::string& g, int64_t i) {
    const int64_t E = g_.d.n_embd, Dh = g_.head_dim(i);
    const int64_t q = g_.d.n_head * Dh, kv = g_.n_head_kv[i] * Dh;
    const std::string at = hf + "self_attn.";
    add(hf + "input_layernorm.weight", g + "attn_norm.weight", {E});
    add(at + "q_proj.weight", g + "attn_q.weight", {q, E});
    if (g_.owns_kv(i)) {
      add(at + "k_proj.weight", g + "attn_k.weight", {kv, E});
      if (g_.has_v(i)) add(at + "v_proj.weight", g + "attn_v.weight", {kv, E});
    }
    add(at + "o_proj.weight", g + "attn_output.weight", {E, q});
    add(at + "q_norm.weight", g + "attn_q_norm.weight", {Dh});
    if (g_.owns_kv(i)) add(at + "k_norm.weight", g + "attn_k_norm.weight", {Dh});
    add(hf + "post_attention_layernorm.weight", g + "post_attention_norm.weight", {E});
    add(hf + "pre_feedforward_layernorm.weight", g + "ffn_norm.weight", {E});
    // The same gate / up / down projections as a SwiGLU MLP; Gemma gates them with GELU-tanh.
    plan_swiglu_mlp(plan_, hf, g, E, g_.n_ff[i]);
    add(hf + "post_feedforward_layernorm.weight", g + "post_ffw_norm.weight", {E});
    if (g_.moe.n_expert > 0) experts(hf, g);
    if (g_.n_embd_per_layer > 0) {
      const int64_t P = g_.n_embd_per_layer;
      add(hf + "per_layer_input_gate.weight", g + "inp_gate.weight", {P, E});
      add(hf + "per_layer_projection.weight", g + "proj.weight", {E, P});
      add(hf + "post_per_layer_input_norm.weight", g + "post_norm.weight", {E});
    }
    // A registered buffer of one value: its checkpoint name has no ".weight".
    add(hf + "layer_scalar", g + "layer_output_scale.weight", {1});
  }

  // The routed experts beside the MLP (Gemma4TextDecoderLayer with enable_moe_block).
  void experts(const std::string& hf, const std::string& g) {
    const int64_t E = g_.d.n_embd, F = g_.moe.n_ff_exp, N = g_.moe.n_expert;
    add(hf + "router.proj.weight", g + "ffn_gate_inp.weight", {N, E});
    add(hf + "router.scale", g + "ffn_gate_inp.scale", {E});
    add(hf + "router.per_expert_scale", g + "ffn_down_exps.scale", {N});
    add(hf + "experts.gate_up_proj", g + "ffn_gate_up_exps.weight", {N, 2 * F, E});  // gate rows first
    add(hf + "experts.down_proj", g + "ffn_down_exps.weight", {N, E, F});
    add(hf + "pre_feedforward_layernorm_2.weight", g + "pre_ffw_norm_2.weight", {E});
    add(hf + "post_feedforward_layernorm_1.weight", g + "post_ffw_norm_1.weight", {E});
    add(hf + "post_feedforward_layernorm_2.weight", g + "post_ffw_norm_2.weight", {E});
  }

 private:
  const Gemma4Dims& g_;
  ArchPlan& plan_;
};

bool is_tower_tensor(const std::string& name) {
  for (const char* p : {"model.vision_tower.", "model.audio_tower.", "model.embed_vision.", "model.embed_audio."}) {
    if (name.starts_with(p)) return true;
  }
  return false;
}

// The checkpoint tensors left out on purpose, each kind announced once: the multimodal towers,
// and the K/V projections and norms a KV-shared layer may still carry (transformers ignores them
// on load: such a layer reads another layer's cache).
void ignore_unused(ArchPlan& plan, const Gemma4Dims& g, const std::string& prefix,
                   const std::set<std::string>& names) {
  int64_t towers = 0, shared_kv = 0;
  for (const std::string& n : names) {
    if (is_tower_tensor(n)) {
      plan.ignored.insert(n);
      ++towers;
      continue;
    }
    for (int64_t i = g.first_kv_shared(); i < g.n_layer(); ++i) {
      const std::string at = cat(prefix, "layers.", i, ".self_attn.");
      for (const char* t : {"k_proj.weight", "v_proj.weight", "k_norm.weight"}) {
        if (n == at + t) {
          plan.ignored.insert(n);
          ++shared_kv;
        }
      }
    }
  }
  if (towers > 0) {
    log_info("convert: gemma4: leaving out ", towers, " vision / audio tower tensors (text model only)");
  }
  if (shared_kv > 0) {
    log_info("convert: gemma4: leaving out ", shared_kv, " K/V projection and norm tensors of the ",
             g.n_kv_shared, " KV-shared layers (they read an earlier layer's cache)");
  }
}

// The text model of `cfg` under `arch` (gemma4, or gemma4-assistant): keys, then the plan.
ArchPlan plan_gemma4_text(const std::string& arch, const HfConfig& cfg, const HfConfig& text, const Gemma4Dims& g,
                          const std::string& prefix, const std::set<std::string>& names, GgufWriter& w) {
  w.set_string("general.architecture", arch);
  write_gemma4_keys(arch, g, w);

  ArchPlan plan;
  plan.gguf_arch = arch;
  plan.n_layer = g.n_layer();
  plan.n_vocab = g.d.n_vocab;
  plan.what = cat(text.source(), " (hidden_size ", g.d.n_embd, ", num_hidden_layers ", g.n_layer(),
                  ", heads ", g.d.n_head, ", head_dim ", g.d.head_dim, " / global ", g.global_head_dim,
                  ", intermediate_size ", g.d.n_ff,
                  g.moe.n_expert > 0 ? cat(", num_experts ", g.moe.n_expert, " of ", g.moe.n_ff_exp) : "",
                  g.n_kv_shared > 0 ? cat(", num_kv_shared_layers ", g.n_kv_shared) : "",
                  g.n_embd_per_layer > 0 ? cat(", hidden_size_per_layer_input ", g.n_embd_per_layer) : "",
                  ", vocab_size ", g.d.n_vocab, ")");
  Gemma4Planner p(g, plan);
  p.add(prefix + "embed_tokens.weight", "token_embd.weight", {g.d.n_vocab, g.d.n_embd});
  p.rope_freqs();
  if (g.n_embd_per_layer > 0) p.per_layer_embeddings(prefix);
  for (int64_t i = 0; i < g.n_layer(); ++i) p.layer(cat(prefix, "layers.", i, "."), cat("blk.", i, "."), i);
  p.add(prefix + "norm.weight", "output_norm.weight", {g.d.n_embd});
  plan_output_head(plan, text.has("tie_word_embeddings") ? text : cfg, names, g.d.n_vocab, g.d.n_embd);
  ignore_unused(plan, g, prefix, names);
  return plan;
}

}  // namespace

ArchPlan plan_gemma4(const HfConfig& cfg, const std::set<std::string>& names, GgufWriter& w) {
  const bool nested = cfg.has("text_config");
  const HfConfig text = nested ? cfg.get_object("text_config") : cfg;
  return plan_gemma4_text(kArch, cfg, text, read_gemma4_dims(text, false), language_model_prefix(nested, names), names,
                          w);
}

ArchPlan plan_gemma4_assistant(const HfConfig& cfg, const std::set<std::string>& names, GgufWriter& w) {
  const bool nested = cfg.has("text_config");
  const HfConfig text = nested ? cfg.get_object("text_config") : cfg;
  const Gemma4Dims g = read_gemma4_dims(text, true);
  FULGUR_CHECK(g.moe.n_expert == 0 && g.n_embd_per_layer == 0, text.source(),
               ": an assistant with MoE layers or per-layer embeddings; llama.cpp's gemma4-assistant graph has "
               "neither");
  const HfConfig& outer = text.has("backbone_hidden_size") ? text : cfg;
  const int64_t Et = outer.get_dim("backbone_hidden_size");
  FULGUR_CHECK(Et != g.d.n_embd, outer.source(), ": backbone_hidden_size ", Et,
               " equals hidden_size; llama.cpp tells the target's width by embedding_length_out != "
               "embedding_length");
  const std::string prefix = language_model_prefix(nested, names);
  ArchPlan plan = plan_gemma4_text(kAssistantArch, cfg, text, g, prefix, names, w);
  const std::string a = std::string(kAssistantArch) + ".";
  w.set_u32(a + "embedding_length_out", static_cast<uint32_t>(Et));
  w.set_u32(a + "nextn_predict_layers", static_cast<uint32_t>(g.n_layer()));
  // The input and output projections (llama.cpp's NEXTN_PROJ_PRE / _POST): top level, or under
  // the model prefix.
  const auto named = [&](const std::string& base) { return names.count(prefix + base) ? prefix + base : base; };
  plan.tensors.push_back(same_bytes(named("pre_projection.weight"), "nextn.pre_projection.weight", {g.d.n_embd, 2 * Et}));
  plan.tensors.push_back(same_bytes(named("post_projection.weight"), "nextn.post_projection.weight", {Et, g.d.n_embd}));
  // Ordered ("masked") embeddings: llama.cpp's converter leaves them out and scores the whole
  // vocabulary with the tied head; so does this one.
  int64_t masked = 0;
  for (const std::string& n : names) {
    if (n.find("masked_embedding") != std::string::npos) {
      plan.ignored.insert(n);
      ++masked;
    }
  }
  if (masked > 0) {
    log_info("convert: gemma4-assistant: leaving out ", masked,
             " ordered-embedding (masked_embedding) tensors; the tied head scores the whole vocabulary, as in llama.cpp");
  }
  return plan;
}

}  // namespace fulgur
