// qwen3, qwen2 and llama (reference/archs-gguf.md §3.2, §4.1): attention + SwiGLU on every
// layer; they differ in three flags.
#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "model/archs/archs.h"

namespace fulgur {

ArchModel load_dense(const GgufReader& gguf, const std::string& arch) {
  ArchModel m;
  ModelDesc& d = m.desc;
  d = read_transformer_keys(gguf, arch);
  // The RoPE style is implied by the arch, not stored (archs-gguf.md §2.3): llama.cpp's
  // converter permutes llama's q/k so that adjacent pairs rotate.
  d.rope.mode = arch == "llama" ? kernels::RopeMode::kNormal : kernels::RopeMode::kNeox;
  const PerLayerKey n_ff(gguf, arch + ".feed_forward_length", d.n_layer(), -1);
  for (int64_t l = 0; l < d.n_layer(); ++l) {
    LayerDesc& L = d.layers[static_cast<size_t>(l)];
    L.attn.qk_norm = arch == "qwen3";
    L.attn.qkv_bias = arch == "qwen2";
    L.ffn = FfnKind::kSwiGlu;
    L.n_ff = n_ff.at(l);
    FULGUR_CHECK(L.n_ff > 0, gguf.where(), ": layer ", l, " has feed_forward_length ", L.n_ff);
  }

  bind_embeddings(gguf, d, m.weights);
  bind_layers(gguf, d, m.weights, NormLayout::kPerSublayer);
  return m;
}

}  // namespace fulgur
