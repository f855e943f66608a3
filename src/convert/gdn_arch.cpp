#include "convert/gdn_arch.h"

#include <vector>

#include "convert/dense_arch.h"
#include "core/error.h"
#include "core/log.h"

namespace fulgur {
namespace {

struct GdnDims {
  DecoderDims d;
  MoeDims moe;                        // n_expert 0 for the dense qwen35
  int64_t conv_kernel, k_head_dim, n_k_heads, v_head_dim, n_v_heads;
  int64_t n_rot;
  int64_t interval;                   // full_attention_interval
  std::vector<int32_t> sections;      // rope.dimension_sections (qwen35*)
  int64_t n_mtp;                      // MTP blocks in the GGUF (0 or 1)
};

// A field read where transformers v5 puts it (rope_parameters) or at the top level (v4).
HfConfig rope_params(const HfConfig& text) {
  return text.has("rope_parameters") ? text.get_object("rope_parameters") : HfConfig();
}

// The interval from full_attention_interval and/or layer_types; llama.cpp stores only the
// interval, so an explicit layer list must follow its pattern.
int64_t read_interval(const HfConfig& text, int64_t n_layer) {
  if (!text.has("layer_types")) {
    return text.get_dim("full_attention_interval", 4);
  }
  const std::vector<std::string> types = text.get_string_array("layer_types");
  FULGUR_CHECK(static_cast<int64_t>(types.size()) == n_layer, text.source(),
               ": layer_types has ", types.size(), " entries for num_hidden_layers ", n_layer);
  int64_t first_full = -1;
  for (size_t i = 0; i < types.size(); ++i) {
    FULGUR_CHECK(types[i] == "linear_attention" || types[i] == "full_attention", text.source(),
                 ": layer_types[", i, "] is '", types[i],
                 "'; expected linear_attention or full_attention");
    if (first_full < 0 && types[i] == "full_attention") first_full = static_cast<int64_t>(i);
  }
  const int64_t interval = text.has("full_attention_interval")
                               ? text.get_dim("full_attention_interval")
                               : (first_full >= 0 ? first_full + 1 : n_layer + 1);
  for (int64_t i = 0; i < n_layer; ++i) {
    const bool full = (i + 1) % interval == 0;
    FULGUR_CHECK(full == (types[i] == "full_attention"), text.source(), ": layer_types[", i,
                 "] is '", types[i], "' but a full_attention_interval of ", interval,
                 " makes it ", full ? "full_attention" : "linear_attention",
                 " (llama.cpp's GGUF stores only the interval)");
  }
  return interval;
}

GdnDims read_gdn_dims(GdnArch arch, const HfConfig& text, const std::set<std::string>& names,
                      const std::string& mtp_prefix, MtpMode mode) {
  GdnDims g{};
  g.d = read_decoder_dims(text, /*need_ff=*/arch == GdnArch::kQwen35);
  // Qwen3-Next's config class defaults norm_topk_prob to true; Qwen3.5-MoE's has no such field
  // (its router always renormalises).
  if (arch != GdnArch::kQwen35) g.moe = read_moe_dims(text, gdn_arch_name(arch), true, true);
  g.conv_kernel = text.get_dim("linear_conv_kernel_dim");
  g.k_head_dim = text.get_dim("linear_key_head_dim");
  g.n_k_heads = text.get_dim("linear_num_key_heads");
  g.v_head_dim = text.get_dim("linear_value_head_dim");
  g.n_v_heads = text.get_dim("linear_num_value_heads");
  FULGUR_CHECK(g.n_v_heads % g.n_k_heads == 0, text.source(), ": linear_num_value_heads ",
               g.n_v_heads, " is not a multiple of linear_num_key_heads ", g.n_k_heads);
  FULGUR_CHECK(text.get_bool("attn_output_gate", true), text.source(),
               ": attn_output_gate is false; llama.cpp's ", gdn_arch_name(arch),
               " has the gated attention only");

  const HfConfig rope = rope_params(text);
  const double factor = rope.has("partial_rotary_factor")
                            ? rope.get_float("partial_rotary_factor")
                            : text.get_float("partial_rotary_factor", 0.25);
  g.n_rot = static_cast<int64_t>(static_cast<double>(g.d.head_dim) * factor);
  FULGUR_CHECK(factor > 0 && factor <= 1 && g.n_rot > 0 && g.n_rot % 2 == 0, text.source(),
               ": partial_rotary_factor ", factor, " of head_dim ", g.d.head_dim, " gives ",
               g.n_rot, " rotated dims; expected an even number in (0, head_dim]");
  if (arch != GdnArch::kQwen3Next) {
    // The default llama.cpp's converter writes when the checkpoint omits mrope_section.
    std::vector<int64_t> s = {11, 11, 10};
    if (rope.has("mrope_section")) s = rope.get_int_array("mrope_section");
    FULGUR_CHECK(s.size() <= 4, text.source(), ": mrope_section has ", s.size(),
                 " entries; llama.cpp stores at most 4");
    int64_t sum = 0;
    for (int64_t v : s) {
      FULGUR_CHECK(v >= 0 && v < (int64_t{1} << 16), text.source(), ": mrope_section entry ", v);
      g.sections.push_back(static_cast<int32_t>(v));
      sum += v;
    }
    g.sections.resize(4, 0);
    // For text, IMROPE equals HF's rotary embedding only when the t/h/w sections cover every
    // rotated pair (archs-gguf.md §4.3): warn, the file still loads.
    if (sum - g.sections[3] != g.n_rot / 2) {
      log_warn(text.source(), ": mrope_section sums to ", sum - g.sections[3], " pairs but ",
               g.n_rot / 2, " pairs are rotated; llama.cpp will not rotate the rest like HF does");
    }
  }
  g.interval = read_interval(text, g.d.n_layer);

  const int64_t n_mtp = text.get_int("mtp_num_hidden_layers", 0);
  // Every released Qwen3.5 / Qwen3-Next has one; llama.cpp's converter gives the shared mtp.fc and
  // mtp norms to the first MTP block only, so more would need a layout it does not define.
  FULGUR_CHECK(n_mtp >= 0 && n_mtp <= 1, text.source(), ": mtp_num_hidden_layers is ", n_mtp,
               "; fulgur converts at most one MTP block");
  FULGUR_CHECK(!text.get_bool("mtp_use_dedicated_embeddings", false), text.source(),
               ": mtp_use_dedicated_embeddings is true; the MTP block must share the embedding");
  bool has_tensors = false;
  for (const std::string& n : names) has_tensors = has_tensors || n.starts_with(mtp_prefix);
  const bool include = include_mtp_block(mode, text, "mtp_num_hidden_layers", n_mtp, has_tensors, mtp_prefix);
  g.n_mtp = include ? n_mtp : 0;
  return g;
}

// The HF V head at GGUF position t of the tiled order: HF groups the V heads by K head (head
// k*r + j is the j-th of K head k), the GGUF tiles them (position j*Hk + k).
int64_t tiled_source_head(const GdnDims& g, int64_t t) {
  return (t % g.n_k_heads) * (g.n_v_heads / g.n_k_heads) + t / g.n_k_heads;
}

// The parts of a tiled tensor: `head` source rows unchanged, then `unit` rows per V head.
std::vector<TensorPart> tiled_parts(const TensorPart& whole, const GdnDims& g, int64_t head, int64_t unit) {
  std::vector<TensorPart> parts;
  if (head > 0) parts.push_back({whole.hf_name, whole.hf_shape, 0, head});
  for (int64_t t = 0; t < g.n_v_heads; ++t) {
    parts.push_back({whole.hf_name, whole.hf_shape, head + tiled_source_head(g, t) * unit, unit});
  }
  return parts;
}

// The same order for values inside a row (out_proj's columns, a 1-D tensor's values).
std::vector<int64_t> tiled_cols(const GdnDims& g, int64_t unit) {
  std::vector<int64_t> cols;
  for (int64_t t = 0; t < g.n_v_heads; ++t) {
    for (int64_t i = 0; i < unit; ++i) cols.push_back(tiled_source_head(g, t) * unit + i);
  }
  return cols;
}

class GdnPlanner {
 public:
  GdnPlanner(GdnArch arch, const GdnDims& g, const std::set<std::string>& names, ArchPlan& plan)
      : arch_(arch), g_(g), names_(names), plan_(plan) {}

  TensorPlan& add(std::string hf, std::string gguf, std::vector<int64_t> hf_shape,
                  ValueTransform transform = ValueTransform::kNone) {
    TensorPlan& tp = plan_.tensors.emplace_back(same_bytes(std::move(hf), std::move(gguf), std::move(hf_shape)));
    tp.transform = transform;
    return tp;
  }
  // A zero-centred norm gain: the GGUF holds 1 + w.
  void norm(const std::string& hf, const std::string& gguf, int64_t n) {
    add(hf, gguf, {n}, ValueTransform::kAddOne);
  }

  // The norms and FFN every block has, around its mixer.
  void block(const std::string& hf, const std::string& g, bool linear) {
    norm(hf + "input_layernorm.weight", g + "attn_norm.weight", g_.d.n_embd);
    if (linear) {
      gated_delta_net(hf + "linear_attn.", g);
    } else {
      attention(hf + "self_attn.", g);
    }
    norm(hf + "post_attention_layernorm.weight", g + "post_attention_norm.weight", g_.d.n_embd);
    if (arch_ == GdnArch::kQwen35) {
      plan_swiglu_mlp(plan_, hf, g, g_.d.n_embd, g_.d.n_ff);
    } else {
      moe(hf, g);
    }
  }

  void attention(const std::string& hf, const std::string& g) {
    const int64_t E = g_.d.n_embd, Dh = g_.d.head_dim;
    const int64_t q = g_.d.n_head * Dh, kv = g_.d.n_head_kv * Dh;
    add(hf + "q_proj.weight", g + "attn_q.weight", {2 * q, E});  // query + gate per head
    add(hf + "k_proj.weight", g + "attn_k.weight", {kv, E});
    add(hf + "v_proj.weight", g + "attn_v.weight", {kv, E});
    add(hf + "o_proj.weight", g + "attn_output.weight", {E, q});
    norm(hf + "q_norm.weight", g + "attn_q_norm.weight", Dh);
    norm(hf + "k_norm.weight", g + "attn_k_norm.weight", Dh);
  }

  void gated_delta_net(const std::string& hf, const std::string& g) {
    const int64_t E = g_.d.n_embd, Hv = g_.n_v_heads, Dv = g_.v_head_dim, K = g_.conv_kernel;
    const int64_t Kd = g_.n_k_heads * g_.k_head_dim, Vd = Hv * Dv, C = 2 * Kd + Vd;
    // qwen35*: V heads tiled (a no-op when every K head has one V head); qwen3next: grouped.
    const bool tiled = arch_ != GdnArch::kQwen3Next && Hv != g_.n_k_heads;
    auto tile = [&](TensorPlan& tp, int64_t head, int64_t unit) {
      if (tiled) tp.parts = tiled_parts(tp.parts.at(0), g_, head, unit);
    };
    if (arch_ == GdnArch::kQwen3Next) {
      qkvz_split(hf, g);
      add(hf + "in_proj_ba.weight", g + "ssm_ba.weight", {2 * Hv, E});
    } else {
      tile(add(hf + "in_proj_qkv.weight", g + "attn_qkv.weight", {C, E}), 2 * Kd, Dv);
      tile(add(hf + "in_proj_z.weight", g + "attn_gate.weight", {Vd, E}), 0, Dv);
      tile(add(hf + "in_proj_b.weight", g + "ssm_beta.weight", {Hv, E}), 0, 1);
      tile(add(hf + "in_proj_a.weight", g + "ssm_alpha.weight", {Hv, E}), 0, 1);
    }
    // [C, 1, K] -> {K, C}: one row of K taps per channel.
    tile(plan_.tensors.emplace_back(reshaped(hf + "conv1d.weight", {C, 1, K}, g + "ssm_conv1d.weight", {K, C})),
         2 * Kd, Dv);
    const std::vector<int64_t> head_cols = tiled ? tiled_cols(g_, 1) : std::vector<int64_t>{};
    add(hf + "A_log", g + "ssm_a", {Hv}, ValueTransform::kNegExp).cols = head_cols;
    add(hf + "dt_bias", g + "ssm_dt.bias", {Hv}).cols = head_cols;
    add(hf + "norm.weight", g + "ssm_norm.weight", {Dv});  // the gated norm: used as-is
    add(hf + "out_proj.weight", g + "ssm_out.weight", {E, Vd}).cols =
        tiled ? tiled_cols(g_, Dv) : std::vector<int64_t>{};
  }

  // in_proj_qkvz's per-K-head groups [q_g, k_g, v_g, z_g] -> attn_qkv (all q, all k, all v) and
  // attn_gate (all z), as llama.cpp's Qwen3NextModel splits it.
  void qkvz_split(const std::string& hf, const std::string& g) {
    const int64_t E = g_.d.n_embd, Dk = g_.k_head_dim, Hk = g_.n_k_heads;
    const int64_t rv = g_.n_v_heads / Hk * g_.v_head_dim;  // V (and Z) rows per group
    const int64_t group = 2 * Dk + 2 * rv;
    const std::string name = hf + "in_proj_qkvz.weight";
    const std::vector<int64_t> shape = {Hk * group, E};
    TensorPlan qkv, z;
    qkv.gguf_name = g + "attn_qkv.weight";
    z.gguf_name = g + "attn_gate.weight";
    qkv.shape = {E, Hk * (2 * Dk + rv)};
    z.shape = {E, Hk * rv};
    for (const auto& [offset, n] : {std::pair{int64_t{0}, Dk}, std::pair{Dk, Dk}, std::pair{2 * Dk, rv}}) {
      for (int64_t k = 0; k < Hk; ++k) qkv.parts.push_back({name, shape, k * group + offset, n});
    }
    for (int64_t k = 0; k < Hk; ++k) z.parts.push_back({name, shape, k * group + 2 * Dk + rv, rv});
    plan_.tensors.push_back(std::move(qkv));
    plan_.tensors.push_back(std::move(z));
  }

  // The routed experts and the shared expert with its sigmoid gate (archs-gguf.md §4.3).
  void moe(const std::string& hf, const std::string& g) {
    const int64_t E = g_.d.n_embd, Fsh = g_.moe.n_ff_shexp;
    plan_routed_experts(plan_, names_, hf, g, E, g_.moe.n_ff_exp, g_.moe.n_expert);
    const std::string sh = hf + "mlp.shared_expert.";
    add(sh + "gate_proj.weight", g + "ffn_gate_shexp.weight", {Fsh, E});
    add(sh + "up_proj.weight", g + "ffn_up_shexp.weight", {Fsh, E});
    add(sh + "down_proj.weight", g + "ffn_down_shexp.weight", {E, Fsh});
    // [1, E] -> {E}, the shape llama.cpp's loader asks for (one gate logit per token).
    plan_.tensors.push_back(reshaped(hf + "mlp.shared_expert_gate.weight", {1, E}, g + "ffn_gate_inp_shexp.weight", {E}));
  }

  // The MTP block after the trunk (blk.N, N = num_hidden_layers).
  void mtp(const std::string& p) {
    const int64_t E = g_.d.n_embd;
    const std::string g = cat("blk.", g_.d.n_layer, ".");
    add(p + "fc.weight", g + "nextn.eh_proj.weight", {E, 2 * E});  // input [embedding ; hidden]
    norm(p + "pre_fc_norm_embedding.weight", g + "nextn.enorm.weight", E);
    norm(p + "pre_fc_norm_hidden.weight", g + "nextn.hnorm.weight", E);
    block(p + "layers.0.", g, /*linear=*/false);
    norm(p + "norm.weight", g + "nextn.shared_head_norm.weight", E);
  }

 private:
  GdnArch arch_;
  const GdnDims& g_;
  const std::set<std::string>& names_;
  ArchPlan& plan_;
};

}  // namespace

const char* gdn_arch_name(GdnArch arch) {
  switch (arch) {
    case GdnArch::kQwen3Next: return "qwen3next";
    case GdnArch::kQwen35: return "qwen35";
    case GdnArch::kQwen35Moe: return "qwen35moe";
  }
  return "?";
}

ArchPlan plan_gdn_hybrid(GdnArch arch, const HfConfig& cfg, const std::set<std::string>& names,
                         MtpMode mtp, GgufWriter& w) {
  // Qwen3_5ForConditionalGeneration keeps the LM under text_config and model.language_model.*.
  const bool nested = cfg.has("text_config");
  const HfConfig text = nested ? cfg.get_object("text_config") : cfg;
  const std::string prefix = language_model_prefix(nested, names);
  const std::string mtp_prefix =
      names.count("model.mtp.fc.weight") > 0 ? "model.mtp." : "mtp.";
  const GdnDims g = read_gdn_dims(arch, text, names, mtp_prefix, mtp);
  const std::string a = gdn_arch_name(arch);

  write_decoder_keys(a, g.d, g.d.n_layer + g.n_mtp, w);
  if (g.moe.n_expert > 0) write_moe_keys(a, g.moe, w);
  w.set_u32(a + ".rope.dimension_count", static_cast<uint32_t>(g.n_rot));
  if (!g.sections.empty()) w.set_array<int32_t>(a + ".rope.dimension_sections", g.sections);
  write_rope_scaling(text, a, w);
  w.set_u32(a + ".full_attention_interval", static_cast<uint32_t>(g.interval));
  w.set_u32(a + ".ssm.conv_kernel", static_cast<uint32_t>(g.conv_kernel));
  w.set_u32(a + ".ssm.state_size", static_cast<uint32_t>(g.k_head_dim));
  w.set_u32(a + ".ssm.group_count", static_cast<uint32_t>(g.n_k_heads));
  w.set_u32(a + ".ssm.time_step_rank", static_cast<uint32_t>(g.n_v_heads));
  w.set_u32(a + ".ssm.inner_size", static_cast<uint32_t>(g.n_v_heads * g.v_head_dim));
  if (g.n_mtp > 0) w.set_u32(a + ".nextn_predict_layers", static_cast<uint32_t>(g.n_mtp));

  ArchPlan plan;
  plan.gguf_arch = a;
  plan.n_layer = g.d.n_layer + g.n_mtp;
  plan.n_vocab = g.d.n_vocab;
  plan.what = cat(text.source(), " (hidden_size ", g.d.n_embd, ", num_hidden_layers ", g.d.n_layer,
                  ", heads ", g.d.n_head, "/", g.d.n_head_kv, ", head_dim ", g.d.head_dim,
                  ", linear K/V heads ", g.n_k_heads, "/", g.n_v_heads, " of ", g.k_head_dim, "/",
                  g.v_head_dim, g.moe.n_expert > 0 ? cat(", num_experts ", g.moe.n_expert) : "",
                  ", vocab_size ", g.d.n_vocab, ")");
  GdnPlanner p(arch, g, names, plan);
  p.add(prefix + "embed_tokens.weight", "token_embd.weight", {g.d.n_vocab, g.d.n_embd});
  for (int64_t i = 0; i < g.d.n_layer; ++i) {
    p.block(cat(prefix, "layers.", i, "."), cat("blk.", i, "."), (i + 1) % g.interval != 0);
  }
  if (g.n_mtp > 0) p.mtp(mtp_prefix);
  p.norm(prefix + "norm.weight", "output_norm.weight", g.d.n_embd);
  plan_output_head(plan, text.has("tie_word_embeddings") ? text : cfg, names, g.d.n_vocab, g.d.n_embd);
  for (const std::string& n : names) {
    // The vision tower, and an MTP block left out.
    if (n.starts_with("model.visual.") || n.starts_with("visual.") ||
        (g.n_mtp == 0 && n.starts_with(mtp_prefix))) {
      plan.ignored.insert(n);
    }
  }
  return plan;
}

}  // namespace fulgur
