#include "model/archs/archs.h"

#include "core/error.h"
#include "gguf/dflash_keys.h"
#include "gguf/gguf_reader.h"
#include "model/binder.h"

namespace fulgur {

std::string supported_archs() { return "qwen3, qwen2, llama, qwen3moe, qwen35, qwen35moe, qwen3next, dflash"; }

ArchModel load_arch(const GgufReader& gguf, const Model* base, bool nextn) {
  const std::string arch = gguf.get_string("general.architecture");
  if (nextn) {
    FULGUR_CHECK(is_gdn_hybrid(arch), gguf.where(), ": architecture '", arch,
                 "' has no MTP (NextN) block fulgur can run (qwen35, qwen35moe, qwen3next have)");
    FULGUR_CHECK(base != nullptr, gguf.where(), ": an MTP block is loaded with its trunk as the base model");
    return load_gdn_hybrid(gguf, arch, base);
  }
  if (is_gdn_hybrid(arch)) return load_gdn_hybrid(gguf, arch, nullptr);
  if (arch == "qwen3" || arch == "qwen2" || arch == "llama") return load_dense(gguf, arch);
  if (arch == "qwen3moe") return load_qwen3moe(gguf);
  if (arch == dflash_gguf::kArch) {
    FULGUR_CHECK(base != nullptr, gguf.where(),
                 ": a 'dflash' file is a block drafter; load it as a draft for a target model");
    return load_dflash(gguf, *base);
  }
  fail(gguf.where(), ": unsupported architecture '", arch, "' (supported: ", supported_archs(), ")");
}

ModelDesc read_transformer_keys(const GgufReader& gguf, const std::string& arch) {
  ModelDesc d;
  d.arch = arch;
  const std::string a = arch + ".";
  d.n_embd = gguf.get_i64(a + "embedding_length");
  const int64_t n_layer = gguf.get_i64(a + "block_count");
  FULGUR_CHECK(d.n_embd > 0 && n_layer > 0, gguf.where(), ": embedding_length ", d.n_embd,
               " and block_count ", n_layer, " must be positive");
  d.n_ctx_train = gguf.get_i64(a + "context_length", 4096);
  const PerLayerKey n_head(gguf, a + "attention.head_count", n_layer, -1);
  const PerLayerKey n_head_kv(gguf, a + "attention.head_count_kv", n_layer, 0);
  const int64_t head_dim = gguf.get_i64(a + "attention.key_length", d.n_embd / n_head.at(0));
  const int64_t value_dim = gguf.get_i64(a + "attention.value_length", head_dim);
  FULGUR_CHECK(value_dim == head_dim, gguf.where(), ": value_length ", value_dim,
               " differs from key_length ", head_dim, " (not supported)");
  d.layers.resize(static_cast<size_t>(n_layer));
  for (int64_t l = 0; l < n_layer; ++l) {
    LayerDesc& L = d.layers[static_cast<size_t>(l)];
    L.mixer = MixerKind::kAttention;
    L.attn.n_head = n_head.at(l);
    // head_count_kv defaults to head_count (llama.cpp does the same).
    L.attn.n_head_kv = n_head_kv.present() ? n_head_kv.at(l) : n_head.at(l);
    L.attn.head_dim = head_dim;
    FULGUR_CHECK(L.attn.n_head > 0 && L.attn.n_head_kv > 0 && L.attn.n_head % L.attn.n_head_kv == 0,
                 gguf.where(), ": layer ", l, " has head_count ", L.attn.n_head,
                 " and head_count_kv ", L.attn.n_head_kv,
                 "; need head_count a positive multiple of head_count_kv");
  }
  d.rms_eps = gguf.get_f32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
  d.rope.freq_base = gguf.get_f32(a + "rope.freq_base", 10000.0f);
  d.rope.n_rot = gguf.get_i64(a + "rope.dimension_count", head_dim);
  FULGUR_CHECK(d.rope.n_rot > 0 && d.rope.n_rot <= head_dim && d.rope.n_rot % 2 == 0,
               gguf.where(), ": rope.dimension_count ", d.rope.n_rot,
               " must be even and at most the head dim ", head_dim);
  const std::string scaling = gguf.get_string(a + "rope.scaling.type", "none");
  FULGUR_CHECK(scaling == "none", gguf.where(), ": rope.scaling.type '", scaling,
               "' is not supported yet");
  return d;
}

void bind_embeddings(const GgufReader& gguf, ModelDesc& desc, ModelWeights& w) {
  const Binder bind(gguf);
  const int64_t E = desc.n_embd;
  const GgufTensorInfo& embd = gguf.tensor("token_embd.weight");
  FULGUR_CHECK(embd.n_dims == 2 && embd.ne[0] == E, gguf.where(),
               ": tensor 'token_embd.weight' must have shape {", E, ", n_vocab}");
  w.token_embd = bind.matrix("token_embd.weight", E, embd.ne[1]);
  desc.n_vocab = embd.ne[1];
  w.output_norm = bind.vector("output_norm.weight", E);
  w.tied_output = !bind.has("output.weight");
  w.output = w.tied_output ? w.token_embd : bind.matrix("output.weight", E, desc.n_vocab);
}

void bind_qwen_layers(const GgufReader& gguf, const ModelDesc& desc, ModelWeights& w) {
  const Binder bind(gguf);
  const int64_t E = desc.n_embd;
  w.layers.resize(static_cast<size_t>(desc.n_layer()));
  for (int64_t l = 0; l < desc.n_layer(); ++l) {
    const std::string p = cat("blk.", l, ".");
    const LayerDesc& L = desc.layers[static_cast<size_t>(l)];
    LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    if (L.mixer == MixerKind::kAttention) {
      lw.mixer_norm = bind.vector(p + "attn_norm.weight", E);
      lw.attn = bind.attention(p, L.attn, E);
    }
    if (L.ffn != FfnKind::kNone) lw.ffn_norm = bind.vector(p + "ffn_norm.weight", E);
    if (L.ffn == FfnKind::kSwiGlu) lw.swiglu = bind.swiglu(p, L.n_ff, E);
    if (L.ffn == FfnKind::kMoe) lw.moe = bind.moe(p, L.moe, E);
  }
}

}  // namespace fulgur
