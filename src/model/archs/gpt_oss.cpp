// gpt-oss (llama.cpp's LLM_ARCH_OPENAI_MOE, graph models/openai-moe.cpp): attention layers that
// alternate sliding-window (attention.sliding_window, 128) and full, with biases on the q, k, v
// and output projections, a learned sink logit per head (attn_sinks) and YaRN RoPE (NeoX); the
// norm before the feed-forward is stored as post_attention_norm; every layer a MoE whose router
// has a bias, whose experts choose on the raw logits and weigh by the softmax over the chosen
// ones (expert_gating_func 3), with biases on each expert's projections and the clamped
// "swiglu_oai" activation. Each of these is a general field of the model description (desc.h),
// so the forward has no gpt-oss code.
#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "model/archs/archs.h"
#include "model/binder.h"

namespace fulgur {
namespace {

// Which layers use the sliding window: attention.sliding_window_pattern as a BOOL array (one per
// layer, true = sliding), or as an integer n (layer l slides unless l % n == n - 1; 0 = every
// layer), or absent: n = 2 (even layers slide), as llama.cpp's load_swa_pattern(2) reads it.
std::vector<bool> sliding_layers(const GgufReader& gguf, const std::string& key, int64_t n_layer) {
  std::vector<bool> swa(static_cast<size_t>(n_layer));
  const GgufValue* v = gguf.find(key);
  if (v != nullptr && v->is_array()) {
    FULGUR_CHECK(v->element_type() == GgufType::kBool, gguf.what(key),
                 " must be a BOOL array (one per layer, true = sliding window) or an integer period, got ",
                 v->type_name());
    swa = v->get_array<bool>(gguf.what(key));
    FULGUR_CHECK(static_cast<int64_t>(swa.size()) == n_layer, gguf.what(key), " has ", swa.size(),
                 " entries for ", n_layer, " layers");
    return swa;
  }
  const int64_t period = gguf.get_i64(key, 2);
  FULGUR_CHECK(period >= 0, gguf.what(key), " is ", period, "; expected a period >= 0");
  for (int64_t l = 0; l < n_layer; ++l) swa[static_cast<size_t>(l)] = period == 0 || l % period < period - 1;
  return swa;
}

}  // namespace

ArchModel load_gpt_oss(const GgufReader& gguf) {
  ArchModel m;
  ModelDesc& d = m.desc;
  const std::string arch = "gpt-oss", a = arch + ".";
  d = read_transformer_keys(gguf, arch);
  d.rope.mode = kernels::RopeMode::kNeox;
  const int64_t n_layer = d.n_layer();
  const int64_t window = gguf.get_i64(a + "attention.sliding_window");
  FULGUR_CHECK(window > 0 && window <= (int64_t{1} << 30), gguf.what(a + "attention.sliding_window"), " is ",
               window, "; expected a positive window");
  const std::vector<bool> swa = sliding_layers(gguf, a + "attention.sliding_window_pattern", n_layer);
  // The sliding layers' RoPE differs only in its base, when the file gives them one of their own.
  const float base_swa = gguf.get_f32(a + "rope.freq_base_swa", d.rope.freq_base);
  if (base_swa != d.rope.freq_base) {
    kernels::RopeParams rope_swa = d.rope;
    rope_swa.freq_base = base_swa;
    d.extra_ropes.push_back(rope_swa);
  }

  const PerLayerKey n_expert(gguf, a + "expert_count", n_layer, -1);
  const PerLayerKey n_used(gguf, a + "expert_used_count", n_layer, -1);
  const PerLayerKey n_ff_exp(gguf, a + "expert_feed_forward_length", n_layer, -1);
  const float weights_scale = gguf.get_f32(a + "expert_weights_scale", 0.0f);
  const int64_t gating = gguf.get_i64(a + "expert_gating_func", 3);
  FULGUR_CHECK(gating == 3, gguf.what(a + "expert_gating_func"), " is ", gating,
               "; gpt-oss routes by the softmax over the chosen experts (3)");
  const Binder bind(gguf);
  for (int64_t l = 0; l < n_layer; ++l) {
    LayerDesc& L = d.layers[static_cast<size_t>(l)];
    AttentionDesc& at = L.attn;
    const bool sliding = swa[static_cast<size_t>(l)];
    at.window = sliding ? static_cast<int32_t>(window) : 0;
    at.rope_table = sliding && !d.extra_ropes.empty() ? 1 : 0;
    // llama.cpp's q/k/v biases are optional; the output bias and the sinks are not.
    at.qkv_bias = bind.has(cat("blk.", l, ".attn_q.bias"));
    at.out_bias = true;
    at.sinks = true;
    L.ffn = FfnKind::kMoe;
    MoeDesc& e = L.moe;
    e.n_expert = n_expert.at(l);
    e.n_expert_used = n_used.at(l);
    e.n_ff_exp = n_ff_exp.at(l);
    FULGUR_CHECK(e.n_expert > 0 && e.n_expert_used > 0 && e.n_expert_used <= e.n_expert && e.n_ff_exp > 0,
                 gguf.where(), ": layer ", l, " has ", e.n_expert_used, " experts used of ", e.n_expert,
                 " and expert width ", e.n_ff_exp, "; need 0 < experts used <= experts and a positive width");
    e.expert_act = FfnAct::kSwiGluOai;
    e.gating = kernels::MoeGating::kSoftmaxWeight;
    e.router_bias = true;
    e.expert_bias = true;
    e.weights_scale = weights_scale;
  }

  bind_embeddings(gguf, d, m.weights);
  bind_layers(gguf, d, m.weights, NormLayout::kPostAttention);
  return m;
}

}  // namespace fulgur
