#include "model/archs/dflash.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "gguf/dflash_keys.h"
#include "gguf/gguf_reader.h"
#include "model/archs/archs.h"
#include "model/binder.h"
#include "model/model.h"

namespace fulgur {
namespace {

namespace g = dflash_gguf;

MarkovHead markov_head_from(const std::string& type, const GgufReader& gguf) {
  if (type == "vanilla") return MarkovHead::kVanilla;
  if (type == "gated") return MarkovHead::kGated;
  if (type == "rnn") return MarkovHead::kRnn;
  fail(gguf.what(g::kMarkovHeadType), " is '", type, "', expected vanilla, gated or rnn");
}

// Block layout and target taps; checked against the target.
void read_block_keys(const GgufReader& gguf, const Model& target, const std::string& who,
                     DflashInfo& info) {
  const ModelDesc& t = target.desc();
  // llama.cpp defaults block_size to 16 when absent; fulgur requires it (a wrong block size
  // silently changes what the drafter reads out).
  info.block_size = gguf.get_i64(g::kBlockSize);
  info.target_layers = gguf.get_int_array<int>(g::kTargetLayers);
  FULGUR_CHECK(!info.target_layers.empty(), gguf.what(g::kTargetLayers), " is empty");
  info.mask_token = gguf.get_i32(g::kMaskToken);
  // An absent layout key means what llama.cpp reads: anchor-first for DSpark (markov_w1
  // present), 1+N for plain DFlash and DFlash2 (reference/llamacpp-speculative.md §2.5, §3).
  const bool dspark = gguf.find_tensor(g::kMarkovW1) != nullptr;
  info.sample_from_anchor = gguf.get_bool(g::kSampleFromAnchor, dspark);
  FULGUR_CHECK(info.block_size > 0, gguf.what(g::kBlockSize), " is ", info.block_size,
               "; a block needs at least one slot");
  FULGUR_CHECK(info.max_drafts() >= 1, gguf.what(g::kBlockSize), " is ", info.block_size,
               ", which gives no draft in the 1+N layout (sample_from_anchor = false)");
  for (int l : info.target_layers) {
    FULGUR_CHECK(l >= 0 && l <= t.n_layer(), who, ": ", g::kTargetLayers, " holds ", l,
                 ", beyond the target's ", t.n_layer(), " layers (valid inputs 0..", t.n_layer(),
                 ")");
  }
  info.n_vocab = target.n_vocab();
  FULGUR_CHECK(info.mask_token >= 0 && info.mask_token < info.n_vocab, who, ": mask token id ",
               info.mask_token, " is outside the target vocabulary [0, ", info.n_vocab, ")");
}

// DSpark's Markov and confidence heads.
void bind_dspark_heads(const Binder& bind, const GgufReader& gguf, int64_t E, DflashInfo& info,
                       DflashHeadWeights& w) {
  if (bind.has(g::kMarkovW1)) {
    w.markov_w1 = bind.matrix(g::kMarkovW1, -1, info.n_vocab);
    info.markov_rank = w.markov_w1.cols;
    const int64_t r = info.markov_rank;
    w.markov_w2 = bind.matrix(g::kMarkovW2, r, info.n_vocab_draft);
    info.markov = markov_head_from(gguf.get_string(g::kMarkovHeadType, "vanilla"), gguf);
    if (info.markov == MarkovHead::kGated) {
      w.markov_gate = bind.matrix(g::kMarkovGate, E + r, r);
      w.markov_gate_b = bind.f32(g::kMarkovGateBias, {r});
    } else if (info.markov == MarkovHead::kRnn) {
      w.markov_joint = bind.matrix(g::kMarkovJoint, 2 * r + E, 3 * r);
      w.markov_joint_b = bind.f32(g::kMarkovJointBias, {3 * r});
    }
  } else {
    FULGUR_CHECK(!gguf.has(g::kMarkovHeadType) && !bind.has(g::kMarkovW2), gguf.where(),
                 ": has a Markov head type or markov_w2 but no markov_w1");
  }
  if (bind.has(g::kConfProj)) {
    w.conf_proj = bind.matrix(g::kConfProj, -1, 1);
    info.confidence = true;
    info.conf_with_markov = w.conf_proj.cols == E + info.markov_rank && info.markov_rank > 0;
    FULGUR_CHECK(w.conf_proj.cols == E || info.conf_with_markov, gguf.where(),
                 ": conf_proj has ", w.conf_proj.cols, " inputs; expected ", E, " or ",
                 E + info.markov_rank, " (hidden + Markov rank)");
    if (bind.has(g::kConfBias)) w.conf_bias = *bind.f32(g::kConfBias, {1});
  }
}

}  // namespace

const char* dflash_kind_name(DflashKind kind) {
  switch (kind) {
    case DflashKind::kDflash: return "dflash";
    case DflashKind::kDspark: return "dspark";
    case DflashKind::kDflash2: return "dflash2";
  }
  return "?";
}

// Keys and tensors of llama.cpp's `dflash` arch whose forward fulgur does not have: refused by
// name rather than silently misread. M-RoPE sections are accepted in their text-only form.
void refuse_unsupported(const GgufReader& gguf, int64_t n_rot) {
  for (const char* key : {"dflash.attention.sliding_window", "dflash.attention.sliding_window_pattern"}) {
    FULGUR_CHECK(!gguf.has(key), gguf.where(), ": ", key,
                 " is set; sliding-window drafts are not supported");
  }
  for (const GgufTensorInfo& t : gguf.tensors()) {
    FULGUR_CHECK(t.name.find("attn_sinks") == std::string::npos, gguf.where(), ": tensor '",
                 t.name, "': attention sinks are not supported in drafts");
  }
  if (gguf.has(g::kRopeSections)) {
    // llama.cpp runs a text-only draft with positions (p, p, p, 0); with all rotated pairs in
    // the first section that is plain NEOX RoPE. Other splits are not.
    const std::vector<int> s = gguf.get_int_array<int>(g::kRopeSections);
    FULGUR_CHECK(s.size() == 4 && s[0] == n_rot / 2 && s[1] == 0 && s[2] == 0 && s[3] == 0,
                 gguf.what(g::kRopeSections), " must be [", n_rot / 2,
                 ", 0, 0, 0] (text-only M-RoPE); other splits are not supported");
  }
}

ArchModel load_dflash(const GgufReader& gguf, const Model& target) {
  ArchModel m;
  ModelDesc& d = m.desc;
  d = read_transformer_keys(gguf, g::kArch);
  d.rope.mode = kernels::RopeMode::kNeox;  // HF rotate-half layout (Qwen3 and Gemma layers)
  refuse_unsupported(gguf, d.rope.n_rot);
  const bool causal = gguf.get_bool(g::kCausal, false);
  const PerLayerKey n_ff(gguf, "dflash.feed_forward_length", d.n_layer(), -1);
  // Qwen3 layers, or Gemma-style ones (llama.cpp's Gemma4DSparkModel export): scaled
  // embeddings, attention scale 1, GELU-tanh GEGLU, and per layer what its tensors say (no
  // attn_v: V from K's projection with a weightless norm; sandwich norms; an output scale).
  // The proportional RoPE's rope_freqs is read with the other RoPE keys.
  d.embd_scale = gguf.get_f32(g::kEmbdScale, 1.0f);
  const float kq_scale = gguf.get_f32(g::kAttnScale, 0.0f);
  FULGUR_CHECK(std::isfinite(d.embd_scale) && d.embd_scale > 0.0f && std::isfinite(kq_scale) && kq_scale >= 0.0f,
               gguf.where(), ": ", g::kEmbdScale, " ", d.embd_scale, " must be positive and ", g::kAttnScale, " ",
               kq_scale, " >= 0");
  const std::string act = gguf.get_string(g::kHiddenAct, "silu");
  FULGUR_CHECK(act == "silu" || act == "gelu" || act == "gelu_pytorch_tanh", gguf.what(g::kHiddenAct), " is '",
               act, "'; expected silu, gelu or gelu_pytorch_tanh");
  const Binder layer_bind(gguf);
  for (int64_t l = 0; l < d.n_layer(); ++l) {
    LayerDesc& L = d.layers[static_cast<size_t>(l)];
    const std::string p = cat("blk.", l, ".");
    L.attn.qk_norm = true;
    L.attn.causal = causal;
    L.attn.kq_scale = kq_scale;
    L.attn.v_from_k = !layer_bind.has(p + "attn_v.weight");
    L.attn.v_norm = L.attn.v_from_k;  // llama.cpp norms V only when it is K's projection
    L.post_norms = layer_bind.has(p + "post_attention_norm.weight");
    FULGUR_CHECK(L.post_norms == layer_bind.has(p + "post_ffw_norm.weight"), gguf.where(), ": layer ", l,
                 " has one of post_attention_norm and post_ffw_norm but not the other (sandwich norms come in pairs)");
    L.output_scale = layer_bind.has(p + "layer_output_scale.weight");
    L.ffn = act == "silu" ? FfnKind::kSwiGlu : FfnKind::kGeGlu;
    L.n_ff = n_ff.at(l);
    FULGUR_CHECK(L.n_ff > 0, gguf.where(), ": layer ", l, " has feed_forward_length ", L.n_ff);
  }

  auto info = std::make_unique<DflashInfo>();
  const ModelDesc& t = target.desc();
  const int64_t E = d.n_embd;
  const std::string who = cat("draft ", gguf.where(), " and target ", target.gguf().where());
  FULGUR_CHECK(E == t.n_embd, who, ": draft hidden size ", E, " differs from the target's ",
               t.n_embd);
  info->target_hidden = gguf.get_i64(g::kTargetHidden, E);
  FULGUR_CHECK(info->target_hidden == t.n_embd, who, ": ", g::kTargetHidden, " is ",
               info->target_hidden, " but the target's hidden size is ", t.n_embd);
  read_block_keys(gguf, target, who, *info);

  const Binder bind(gguf);
  ModelWeights& w = m.weights;
  const int64_t n_taps = static_cast<int64_t>(info->target_layers.size());
  w.inject_fc = bind.matrix(g::kFc, -1, E);
  FULGUR_CHECK(w.inject_fc.cols == n_taps * t.n_embd, who, ": fc input width ", w.inject_fc.cols,
               " is not the target width ", t.n_embd, " x ", n_taps, " taps = ",
               n_taps * t.n_embd);
  w.inject_norm = bind.vector(g::kEncNorm, E);
  w.output_norm = bind.vector(g::kOutputNorm, E);
  const int64_t V = info->n_vocab;
  w.token_embd = bind.has(g::kTokenEmbd) ? bind.matrix(g::kTokenEmbd, E, V) : target.weights().token_embd;
  w.output = bind.has(g::kOutput) ? bind.matrix(g::kOutput, E, -1) : target.weights().output;
  d.n_vocab = V;
  info->n_vocab_draft = w.output.rows;
  info->d2t = read_d2t(gguf, who, info->n_vocab_draft, info->n_vocab);

  const bool dflash2 = bind.has(g::kSelHidden);
  if (dflash2) {
    d.block_conv_kernel = gguf.get_i64(g::kConvKernel);
    d.block_conv_group = gguf.get_i64(g::kConvGroup);
    info->selector_rank = gguf.get_i64(g::kSelectorRank);
    info->selector_top_k = gguf.get_i64(g::kSelectorTopK);
    FULGUR_CHECK(d.block_conv_kernel > 0 && d.block_conv_group > 0 && E % d.block_conv_group == 0 &&
                     info->selector_rank > 0 && info->selector_top_k > 0 &&
                     info->selector_top_k <= V,
                 gguf.where(), ": DFlash2 keys conv_kernel_size ", d.block_conv_kernel,
                 ", conv_group_size ", d.block_conv_group, " (must divide ", E,
                 "), selector_rank ", info->selector_rank, ", selector_top_k ",
                 info->selector_top_k, " are invalid");
    FULGUR_CHECK(info->d2t.empty(), gguf.where(), ": DFlash2 needs the full target vocabulary");
  }
  bind_layers(gguf, d, w, NormLayout::kPerSublayer);
  for (int64_t l = 0; dflash2 && l < d.n_layer(); ++l) {
    const std::string p = cat("blk.", l, ".");
    const int64_t K = d.block_conv_kernel, G = E / d.block_conv_group;
    LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    lw.mixer_conv = {bind.f32(p + "attn_conv_base", {E, K, 2}),
                     bind.matrix(p + "attn_conv_proj.weight", E, 2 * K * G)};
    lw.ffn_conv = {bind.f32(p + "ffn_conv_base", {E, K, 2}),
                   bind.matrix(p + "ffn_conv_proj.weight", E, 2 * K * G)};
  }

  bind_dspark_heads(bind, gguf, E, *info, w.dflash_heads);
  if (dflash2) {
    const int64_t R = info->selector_rank;
    w.dflash_heads.sel_pred = bind.matrix(g::kSelPred, R, V);
    w.dflash_heads.sel_succ = bind.matrix(g::kSelSucc, R, V);
    w.dflash_heads.sel_hidden = bind.matrix(g::kSelHidden, E, R);
    FULGUR_CHECK(info->markov == MarkovHead::kNone, gguf.where(),
                 ": a draft cannot have both a Markov head and a DFlash2 selector");
    info->kind = DflashKind::kDflash2;
  } else if (info->markov != MarkovHead::kNone) {
    info->kind = DflashKind::kDspark;
  }
  // llama.cpp scales and soft-caps the base logits of DFlash2 drafts (before the selector's
  // top-k) and ignores these keys for the other kinds, so there neither engine honours them.
  for (const char* key : {g::kLogitScale, g::kSoftcap}) {
    FULGUR_CHECK(!gguf.has(key) || info->kind == DflashKind::kDflash2, gguf.where(), ": ", key,
                 " is set on a ", dflash_kind_name(info->kind),
                 " draft; only DFlash2 drafts use it (llama.cpp ignores it elsewhere)");
  }
  info->logit_scale = gguf.get_f32(g::kLogitScale, 1.0f);
  info->softcap = gguf.get_f32(g::kSoftcap, 0.0f);
  m.dflash = std::move(info);
  return m;
}

}  // namespace fulgur
