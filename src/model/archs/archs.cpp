#include "model/archs/archs.h"

#include <cstring>

#include "core/error.h"
#include "gguf/dflash_keys.h"
#include "gguf/gguf_reader.h"
#include "model/binder.h"

namespace fulgur {

std::string supported_archs() {
  return "qwen3, qwen2, llama, qwen3moe, qwen35, qwen35moe, qwen3next, nemotron_h, nemotron_h_moe, gemma4, gemma4-assistant, gpt-oss, dflash, eagle3";
}

ArchModel load_arch(const GgufReader& gguf, const Model* base, bool nextn) {
  const std::string arch = gguf.get_string("general.architecture");
  if (nextn) {
    FULGUR_CHECK(is_gdn_hybrid(arch) || is_nemotron_h(arch), gguf.where(), ": architecture '", arch,
                 "' has no MTP (NextN) block fulgur can run (qwen35, qwen35moe, qwen3next, nemotron_h, "
                 "nemotron_h_moe have)");
    FULGUR_CHECK(base != nullptr, gguf.where(), ": an MTP block is loaded with its trunk as the base model");
    return is_gdn_hybrid(arch) ? load_gdn_hybrid(gguf, arch, base) : load_nemotron_h(gguf, arch, base);
  }
  if (is_gdn_hybrid(arch)) return load_gdn_hybrid(gguf, arch, nullptr);
  if (arch == "qwen3" || arch == "qwen2" || arch == "llama") return load_dense(gguf, arch);
  if (arch == "qwen3moe") return load_qwen3moe(gguf);
  if (arch == "gemma4") return load_gemma4(gguf);
  if (arch == "gpt-oss") return load_gpt_oss(gguf);
  if (is_nemotron_h(arch)) return load_nemotron_h(gguf, arch, nullptr);
  if (arch == "gemma4-assistant") {
    FULGUR_CHECK(base != nullptr, gguf.where(), ": a 'gemma4-assistant' file drafts for a Gemma 4 target; "
                 "load it as a draft for one (--spec draft-mtp -md FILE)");
    return load_gemma4_assistant(gguf, *base);
  }
  if (arch == "eagle3") {
    FULGUR_CHECK(base != nullptr, gguf.where(),
                 ": an 'eagle3' file is an EAGLE-3 drafter; load it as a draft for a target model");
    return load_eagle3(gguf, *base);
  }
  if (arch == dflash_gguf::kArch) {
    FULGUR_CHECK(base != nullptr, gguf.where(),
                 ": a 'dflash' file is a block drafter; load it as a draft for a target model");
    return load_dflash(gguf, *base);
  }
  fail(gguf.where(), ": unsupported architecture '", arch, "' (supported: ", supported_archs(), ")");
}

std::vector<int32_t> read_d2t(const GgufReader& gguf, const std::string& who, int64_t n_vocab_draft,
                              int64_t n_vocab) {
  const GgufTensorInfo* d2t = gguf.find_tensor(dflash_gguf::kD2t);
  if (d2t == nullptr) {
    FULGUR_CHECK(n_vocab_draft == n_vocab, who, ": the draft's output has ", n_vocab_draft,
                 " rows but there is no d2t map to the target's ", n_vocab, " tokens");
    return {};
  }
  FULGUR_CHECK(d2t->type == DType::kI64 && d2t->n_dims == 1 && d2t->ne[0] == n_vocab_draft,
               gguf.where(), ": tensor 'd2t' must be I64 {", n_vocab_draft,
               "} (one target id per output row)");
  std::vector<int32_t> out(static_cast<size_t>(n_vocab_draft));
  for (int64_t i = 0; i < n_vocab_draft; ++i) {
    int64_t id = 0;
    std::memcpy(&id, d2t->data + i * 8, 8);
    FULGUR_CHECK(id >= 0 && id < n_vocab, who, ": d2t[", i, "] = ", id,
                 " is outside the target vocabulary [0, ", n_vocab, ")");
    out[static_cast<size_t>(i)] = static_cast<int32_t>(id);
  }
  return out;
}

ModelDesc read_transformer_keys(const GgufReader& gguf, const std::string& arch, bool kv_heads_optional) {
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
    if (kv_heads_optional && n_head_kv.present() && L.attn.n_head_kv == 0) {
      L.mixer = MixerKind::kNone;
      L.attn = AttentionDesc{};
      continue;
    }
    FULGUR_CHECK(L.attn.n_head > 0 && L.attn.n_head_kv > 0 && L.attn.n_head % L.attn.n_head_kv == 0,
                 gguf.where(), ": layer ", l, " has head_count ", L.attn.n_head,
                 " and head_count_kv ", L.attn.n_head_kv,
                 "; need head_count a positive multiple of head_count_kv");
  }
  d.rms_eps = gguf.get_f32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
  d.rope.n_rot = gguf.get_i64(a + "rope.dimension_count", head_dim);
  FULGUR_CHECK(d.rope.n_rot > 0 && d.rope.n_rot <= head_dim && d.rope.n_rot % 2 == 0,
               gguf.where(), ": rope.dimension_count ", d.rope.n_rot,
               " must be even and at most the head dim ", head_dim);
  read_rope_keys(gguf, arch, d);
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

void bind_layer(const Binder& bind, const std::string& p, const LayerDesc& L, int64_t n_embd,
                NormLayout norms, ModelWeights& w, LayerWeights& lw) {
  const int64_t E = n_embd;
  FULGUR_CHECK(norms != NormLayout::kOnePerBlock || L.mixer == MixerKind::kNone || L.ffn == FfnKind::kNone,
               bind.gguf().where(), ": block ", p, " has both a mixer and a feed-forward but one norm");
  if (L.mixer != MixerKind::kNone) lw.mixer_norm = bind.vector(p + "attn_norm.weight", E);
  if (L.ffn != FfnKind::kNone) {
    const char* norm = norms == NormLayout::kPerSublayer    ? "ffn_norm"
                       : norms == NormLayout::kPostAttention ? "post_attention_norm"
                                                             : "attn_norm";
    lw.ffn_norm = bind.vector(p + norm + ".weight", E);
  }
  if (L.post_norms) {
    lw.mixer_post_norm = bind.vector(p + "post_attention_norm.weight", E);
    lw.ffn_post_norm = bind.vector(p + "post_ffw_norm.weight", E);
  }
  if (L.output_scale) lw.output_scale = bind.vector(p + "layer_output_scale.weight", 1);
  switch (L.mixer) {
    case MixerKind::kNone: break;
    case MixerKind::kAttention: lw.attn = bind.attention(p, L.attn, E); break;
    case MixerKind::kGatedDeltaNet: lw.gdn = bind.gated_delta_net(p, L.gdn, E, w.owned.emplace_back()); break;
    case MixerKind::kMamba2: lw.ssm = bind.mamba2(p, L.ssm, E, w.owned.emplace_back()); break;
  }
  switch (L.ffn) {
    case FfnKind::kNone: break;
    case FfnKind::kSwiGlu:
    case FfnKind::kRelu2:
    case FfnKind::kGeGlu: lw.ffn = bind.dense_ffn(p, dense_ffn_act(L.ffn), L.n_ff, E); break;
    case FfnKind::kMoe: lw.moe = bind.moe(p, L.moe, E); break;
  }
}

void bind_layers(const GgufReader& gguf, const ModelDesc& desc, ModelWeights& w, NormLayout norms) {
  const Binder bind(gguf);
  w.layers.resize(static_cast<size_t>(desc.n_layer()));
  for (int64_t l = 0; l < desc.n_layer(); ++l) {
    bind_layer(bind, cat("blk.", l, "."), desc.layers[static_cast<size_t>(l)], desc.n_embd, norms, w,
               w.layers[static_cast<size_t>(l)]);
  }
}

}  // namespace fulgur
