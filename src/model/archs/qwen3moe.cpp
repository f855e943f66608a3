// qwen3moe (reference/archs-gguf.md §3.3, §4.2): Qwen3's attention, and on every layer a
// mixture of SwiGLU experts routed by softmax over all experts, top-k, weights renormalised
// (llama.cpp hard-codes the renormalisation for this arch), no shared expert.
// expert_count, expert_used_count and expert_feed_forward_length may each be a scalar or a
// per-layer array.
#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "model/archs/archs.h"

namespace fulgur {

ArchModel load_qwen3moe(const GgufReader& gguf) {
  ArchModel m;
  ModelDesc& d = m.desc;
  const std::string a = "qwen3moe.";
  d = read_transformer_keys(gguf, "qwen3moe");
  d.rope.mode = kernels::RopeMode::kNeox;
  const int64_t n = d.n_layer();
  const PerLayerKey n_expert(gguf, a + "expert_count", n, -1);
  const PerLayerKey n_used(gguf, a + "expert_used_count", n, -1);
  // llama.cpp falls back to feed_forward_length / expert_used_count without the key.
  const PerLayerKey n_ff(gguf, a + "feed_forward_length", n, 0);
  const PerLayerKey n_ff_exp(gguf, a + "expert_feed_forward_length", n, 0);
  for (int64_t l = 0; l < n; ++l) {
    LayerDesc& L = d.layers[static_cast<size_t>(l)];
    L.attn.qk_norm = true;
    L.ffn = FfnKind::kMoe;
    MoeDesc& e = L.moe;
    e.n_expert = n_expert.at(l);
    e.n_expert_used = n_used.at(l);
    FULGUR_CHECK(e.n_expert > 0 && e.n_expert_used > 0 && e.n_expert_used <= e.n_expert,
                 gguf.where(), ": layer ", l, " has ", n_expert.key(), " ", e.n_expert, " and ",
                 n_used.key(), " ", e.n_expert_used, "; need 0 < experts used <= experts");
    e.n_ff_exp = n_ff_exp.present() ? n_ff_exp.at(l) : n_ff.at(l) / e.n_expert_used;
    FULGUR_CHECK(e.n_ff_exp > 0, gguf.where(), ": layer ", l, " has no expert width (",
                 n_ff_exp.key(), " is ", e.n_ff_exp, ")");
    e.gating = kernels::MoeGating::kSoftmax;
    e.norm_weights = true;
  }

  bind_embeddings(gguf, d, m.weights);
  bind_layers(gguf, d, m.weights, NormLayout::kPerSublayer);
  return m;
}

}  // namespace fulgur
