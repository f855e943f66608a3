// gemma4 (reference/archs-gguf.md §3.7, §4.5; llama.cpp's llm_build_gemma4_iswa): attention
// layers of two kinds, sliding-window and full, each with its own head dim, KV heads and RoPE;
// q/k norms, V normed without a weight, V = K's projection where the layer has no attn_v,
// attention scale 1, the last shared_kv_layers layers reading the cache of the last KV-owning
// layer of their kind; sandwich norms around GELU-tanh GEGLU feed-forwards; a scalar on each
// layer's output; embeddings scaled by sqrt(n_embd) and logits soft-capped. Every one of these
// is a general field of the model description (desc.h), so the forward has no Gemma code.
// MoE layers (26B-A4B) run the layer's dense GEGLU beside routed GEGLU experts
// (MoeDesc::residual_branches). The E-series add per-layer embeddings (ModelDesc::ple_width).
#include <cmath>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "model/archs/archs.h"
#include "model/binder.h"

namespace fulgur {
namespace {

// sliding_window_pattern: a per-layer bool array (true = sliding), as llama.cpp's converter
// writes it for gemma4 and gemma4-assistant.
std::vector<bool> sliding_layers(const GgufReader& gguf, const std::string& key, int64_t n_layer) {
  const GgufValue* v = gguf.find(key);
  FULGUR_CHECK(v != nullptr, gguf.what(key), " is missing");
  FULGUR_CHECK(v->is_array() && v->element_type() == GgufType::kBool, gguf.what(key),
               " must be a BOOL array (one per layer, true = sliding window), got ", v->type_name());
  std::vector<bool> swa = v->get_array<bool>(gguf.what(key));
  FULGUR_CHECK(static_cast<int64_t>(swa.size()) == n_layer, gguf.what(key), " has ", swa.size(),
               " entries for ", n_layer, " layers");
  return swa;
}

// The layer a KV-shared layer reads: the last KV-owning layer of its kind.
int64_t kv_source(const std::vector<bool>& swa, int64_t n_kv_layers, int64_t layer) {
  for (int64_t j = n_kv_layers - 1; j >= 0; --j) {
    if (swa[static_cast<size_t>(j)] == swa[static_cast<size_t>(layer)]) return j;
  }
  return -1;
}

}  // namespace

ModelDesc read_gemma4_keys(const GgufReader& gguf, const std::string& arch, std::vector<bool>& swa) {
  const std::string a = arch + ".";
  ModelDesc d = read_transformer_keys(gguf, arch);
  const int64_t n_layer = d.n_layer();
  d.rope.mode = kernels::RopeMode::kNeox;
  const int64_t head_dim = d.layers[0].attn.head_dim;  // key_length: the full layers'
  const int64_t head_dim_swa = gguf.get_i64(a + "attention.key_length_swa");
  FULGUR_CHECK(gguf.get_i64(a + "attention.value_length_swa", head_dim_swa) == head_dim_swa, gguf.where(),
               ": value_length_swa differs from key_length_swa (not supported, as in llama.cpp)");
  const int64_t window = gguf.get_i64(a + "attention.sliding_window");
  FULGUR_CHECK(window > 0 && window <= (int64_t{1} << 30), gguf.what(a + "attention.sliding_window"), " is ",
               window, "; expected a positive window");
  swa = sliding_layers(gguf, a + "attention.sliding_window_pattern", n_layer);

  // The sliding layers' RoPE: their own rotary dims and base, no frequency factors (rope_freqs
  // is the full layers' proportional RoPE).
  kernels::RopeParams rope_swa;
  rope_swa.mode = kernels::RopeMode::kNeox;
  rope_swa.n_rot = gguf.get_i64(a + "rope.dimension_count_swa", head_dim_swa);
  rope_swa.freq_base = gguf.get_f32(a + "rope.freq_base_swa", d.rope.freq_base);
  FULGUR_CHECK(rope_swa.n_rot > 0 && rope_swa.n_rot <= head_dim_swa && rope_swa.n_rot % 2 == 0, gguf.where(),
               ": rope.dimension_count_swa ", rope_swa.n_rot, " must be even and at most key_length_swa ",
               head_dim_swa);
  d.extra_ropes.push_back(rope_swa);

  d.logit_softcap = gguf.get_f32(a + "final_logit_softcapping", 0.0f);
  FULGUR_CHECK(std::isfinite(d.logit_softcap) && d.logit_softcap >= 0.0f, gguf.where(),
               ": final_logit_softcapping ", d.logit_softcap, " must be >= 0");
  const PerLayerKey n_ff(gguf, a + "feed_forward_length", n_layer, -1);
  const Binder bind(gguf);
  for (int64_t l = 0; l < n_layer; ++l) {
    LayerDesc& L = d.layers[static_cast<size_t>(l)];
    AttentionDesc& at = L.attn;
    const bool sliding = swa[static_cast<size_t>(l)];
    at.head_dim = sliding ? head_dim_swa : head_dim;
    at.window = sliding ? static_cast<int32_t>(window) : 0;
    at.rope_table = sliding ? 1 : 0;
    at.qk_norm = true;
    at.kq_scale = 1.0f;
    L.post_norms = true;
    L.output_scale = bind.has(cat("blk.", l, ".layer_output_scale.weight"));
    L.ffn = FfnKind::kGeGlu;
    L.n_ff = n_ff.at(l);
    FULGUR_CHECK(L.n_ff > 0, gguf.where(), ": layer ", l, " has feed_forward_length ", L.n_ff);
  }
  return d;
}

ArchModel load_gemma4(const GgufReader& gguf) {
  ArchModel m;
  ModelDesc& d = m.desc;
  const std::string a = "gemma4.";
  std::vector<bool> swa;
  d = read_gemma4_keys(gguf, "gemma4", swa);
  const int64_t n_layer = d.n_layer(), E = d.n_embd;
  const int64_t n_shared = gguf.get_i64(a + "attention.shared_kv_layers", 0);
  FULGUR_CHECK(n_shared >= 0 && n_shared < n_layer, gguf.what(a + "attention.shared_kv_layers"), " is ",
               n_shared, "; expected fewer than the ", n_layer, " layers");
  const int64_t n_kv_layers = n_layer - n_shared;

  d.embd_scale = std::sqrt(static_cast<float>(E));
  d.ple_width = gguf.get_i64(a + "embedding_length_per_layer_input", 0);
  FULGUR_CHECK(d.ple_width >= 0, gguf.what(a + "embedding_length_per_layer_input"), " is negative");
  const int64_t n_expert = gguf.get_i64(a + "expert_count", 0);

  const Binder bind(gguf);
  for (int64_t l = 0; l < n_layer; ++l) {
    LayerDesc& L = d.layers[static_cast<size_t>(l)];
    AttentionDesc& at = L.attn;
    const bool sliding = swa[static_cast<size_t>(l)];
    at.v_norm = true;
    if (l >= n_kv_layers) {
      at.kv_layer = kv_source(swa, n_kv_layers, l);
      FULGUR_CHECK(at.kv_layer >= 0, gguf.where(), ": KV-shared layer ", l, " (", sliding ? "sliding" : "full",
                   ") has no earlier KV-owning layer of its kind to read");
      const AttentionDesc& src = d.layers[static_cast<size_t>(at.kv_layer)].attn;
      FULGUR_CHECK(src.n_head_kv == at.n_head_kv, gguf.where(), ": KV-shared layer ", l, " has ",
                   at.n_head_kv, " KV heads but reads layer ", at.kv_layer, "'s ", src.n_head_kv);
    } else {
      at.v_from_k = !bind.has(cat("blk.", l, ".attn_v.weight"));
    }
    // A layer with a router is a MoE layer: its own GEGLU feed-forward beside the experts.
    const std::string p = cat("blk.", l, ".");
    if (bind.has(p + "ffn_gate_inp.weight")) {
      FULGUR_CHECK(n_expert > 0, gguf.where(), ": layer ", l, " has a router but expert_count is 0");
      MoeDesc& moe = L.moe;
      moe.n_expert = n_expert;
      moe.n_expert_used = gguf.get_i64(a + "expert_used_count");
      moe.n_ff_exp = gguf.get_i64(a + "expert_feed_forward_length");
      FULGUR_CHECK(moe.n_expert_used > 0 && moe.n_expert_used <= n_expert && moe.n_ff_exp > 0, gguf.where(),
                   ": expert_used_count ", moe.n_expert_used, " of ", n_expert,
                   " experts and expert_feed_forward_length ", moe.n_ff_exp, " are inconsistent");
      moe.expert_act = FfnAct::kGeGlu;
      moe.gating = kernels::MoeGating::kSoftmax;
      moe.norm_weights = true;
      moe.n_ff_shared = L.n_ff;
      moe.shared_act = FfnAct::kGeGlu;
      moe.residual_branches = true;
      moe.fused_gate_up = bind.has(p + "ffn_gate_up_exps.weight");
      moe.expert_scale = bind.has(p + "ffn_down_exps.scale");
      L.ffn = FfnKind::kMoe;
      L.n_ff = 0;
    }
  }

  bind_embeddings(gguf, d, m.weights);
  bind_layers(gguf, d, m.weights, NormLayout::kPerSublayer);
  if (d.ple_width > 0) {
    const int64_t P = d.ple_width, W = n_layer * P;
    PerLayerEmbdWeights& ple = m.weights.ple;
    const GgufTensorInfo& tok = gguf.tensor("per_layer_token_embd.weight");
    FULGUR_CHECK(tok.n_dims == 2 && tok.ne[0] == W && tok.ne[1] == d.n_vocab, gguf.where(),
                 ": tensor 'per_layer_token_embd.weight' must have shape {", W, ", ", d.n_vocab, "}");
    ple.token_embd = bind.matrix("per_layer_token_embd.weight", W, d.n_vocab);
    ple.model_proj = bind.matrix("per_layer_model_proj.weight", E, W);
    ple.proj_norm = bind.vector("per_layer_proj_norm.weight", P);
    for (int64_t l = 0; l < n_layer; ++l) {
      const std::string p = cat("blk.", l, ".");
      PerLayerBranchWeights& b = m.weights.layers[static_cast<size_t>(l)].ple;
      b.gate = bind.matrix(p + "inp_gate.weight", E, P);
      b.proj = bind.matrix(p + "proj.weight", P, E);
      b.post_norm = bind.vector(p + "post_norm.weight", E);
    }
  }
  return m;
}

}  // namespace fulgur
