// nemotron_h and nemotron_h_moe (reference/archs-gguf.md §3.6, §4.4; the files fulgur convert
// and llama.cpp's converter write, Puzzle included): every block is ONE sublayer behind its
// attn_norm, told apart by the per-layer arrays:
//   head_count_kv[i] == 0 && feed_forward_length[i] == 0   Mamba2
//   feed_forward_length[i] == 0                             attention without RoPE or q/k norm
//   otherwise                                               ReLU² MLP (nemotron_h) or MoE
//                                                           (nemotron_h_moe)
// The MoE (DeepSeek-V3's router): sigmoid gating, top-k chosen on probabilities +
// exp_probs_b, weights renormalised (expert_weights_norm) and scaled (expert_weights_scale),
// ReLU² experts, optionally in a latent space (moe_latent_size), plus a ReLU² shared expert.
// Puzzle files give expert_used_count and expert_feed_forward_length per layer (0 on the
// other layers); each layer's expert width is read from its ffn_up_exps and must match the key.
//
// The last nextn_predict_layers blocks, counted in block_count, are MTP blocks (llama.cpp's
// NemotronH MTP export: HF mtp.layers.0, NextN fusion + attention, and mtp.layers.1, MoE + the
// final_layernorm, folded into one block): attn_norm, attention (no RoPE), post_attention_norm,
// the MoE (nemotron_h_moe; on nemotron_h, whose files llama.cpp gives no MTP block, fulgur's
// own ReLU² MLP), then nextn.shared_head_norm, a LayerNorm (llama.cpp's LLM_NORM). They are not
// part of the trunk and load on their own with ModelOptions::nextn (load_nextn_block). The hidden
// row the block pairs with is normed: the target's output_norm output, in a chain the block's
// own shared_head_norm output (llama.cpp's t_h_nextn for nemotron_h_moe).
#include <memory>

#include "core/error.h"
#include "gguf/block_layout.h"
#include "gguf/gguf_reader.h"
#include "model/archs/archs.h"

namespace fulgur {
namespace {

Mamba2Desc read_mamba2(const GgufReader& gguf, const std::string& a) {
  Mamba2Desc m;
  m.conv_kernel = gguf.get_i64(a + "ssm.conv_kernel");
  m.d_inner = gguf.get_i64(a + "ssm.inner_size");
  m.d_state = gguf.get_i64(a + "ssm.state_size");
  m.n_heads = gguf.get_i64(a + "ssm.time_step_rank");
  m.n_groups = gguf.get_i64(a + "ssm.group_count");
  FULGUR_CHECK(m.conv_kernel >= 1 && m.d_inner > 0 && m.d_state > 0 && m.n_heads > 0 && m.n_groups > 0 &&
                   m.d_inner % m.n_heads == 0 && m.n_heads % m.n_groups == 0,
               gguf.where(), ": ssm.conv_kernel ", m.conv_kernel, ", ssm.inner_size ", m.d_inner,
               ", ssm.state_size ", m.d_state, ", ssm.time_step_rank ", m.n_heads, ", ssm.group_count ",
               m.n_groups, ": need positive values, inner_size a multiple of time_step_rank (the heads) "
               "and time_step_rank a multiple of group_count");
  m.head_dim = m.d_inner / m.n_heads;
  return m;
}

// Every block of the file (trunk and MTP) as a LayerDesc.
ModelDesc read_nemotron_desc(const GgufReader& gguf, const std::string& arch, const BlockLayout& layout) {
  const std::string a = arch + ".";
  const bool moe = arch == "nemotron_h_moe";
  ModelDesc d = read_transformer_keys(gguf, arch, /*kv_heads_optional=*/true);
  // llama.cpp reads layer_norm_epsilon for these archs (the norms are RMSNorms all the same).
  d.rms_eps = gguf.get_f32(a + "attention.layer_norm_epsilon",
                           gguf.get_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f));
  const int64_t n = d.n_layer();
  const PerLayerKey n_head_kv(gguf, a + "attention.head_count_kv", n, -1);
  const PerLayerKey n_ff(gguf, a + "feed_forward_length", n, -1);

  bool any_mamba = false;
  for (int64_t l = 0; l < n; ++l) any_mamba |= n_head_kv.at(l) == 0 && n_ff.at(l) == 0;
  const Mamba2Desc ssm = any_mamba ? read_mamba2(gguf, a) : Mamba2Desc{};

  MoeDesc moe_base;
  std::unique_ptr<PerLayerKey> n_used, n_ff_exp, n_expert;
  if (moe) {
    n_expert = std::make_unique<PerLayerKey>(gguf, a + "expert_count", n, -1);
    n_used = std::make_unique<PerLayerKey>(gguf, a + "expert_used_count", n, -1);
    n_ff_exp = std::make_unique<PerLayerKey>(gguf, a + "expert_feed_forward_length", n, 0);
    moe_base.expert_act = FfnAct::kRelu2;
    moe_base.gating = kernels::MoeGating::kSigmoid;
    moe_base.selection_bias = true;
    moe_base.norm_weights = gguf.get_bool(a + "expert_weights_norm", false);
    moe_base.weights_scale = gguf.get_f32(a + "expert_weights_scale", 1.0f);
    moe_base.latent = gguf.get_i64(a + "moe_latent_size", 0);
    moe_base.n_ff_shared = gguf.get_i64(a + "expert_shared_feed_forward_length", 0);
    moe_base.shared_act = FfnAct::kRelu2;
    const int64_t gating = gguf.get_i64(a + "expert_gating_func", 2);
    FULGUR_CHECK(gating == 2, gguf.what(a + "expert_gating_func"), " is ", gating,
                 "; nemotron_h_moe routes by sigmoid (2)");
    const int64_t groups = gguf.get_i64(a + "expert_group_count", 1);
    const int64_t groups_used = gguf.get_i64(a + "expert_group_used_count", groups);
    FULGUR_CHECK(groups <= 1 || groups_used >= groups, gguf.what(a + "expert_group_count"), " is ", groups,
                 " with expert_group_used_count ", groups_used,
                 ": group-limited expert selection is not supported");
    const int64_t shared_count = gguf.get_i64(a + "expert_shared_count", 1);
    FULGUR_CHECK(shared_count == 1 || (shared_count == 0 && moe_base.n_ff_shared == 0),
                 gguf.what(a + "expert_shared_count"), " is ", shared_count, "; only one shared expert is supported");
    FULGUR_CHECK(moe_base.latent >= 0 && moe_base.n_ff_shared >= 0, gguf.where(), ": moe_latent_size ",
                 moe_base.latent, " and expert_shared_feed_forward_length ", moe_base.n_ff_shared,
                 " must not be negative");
  }

  // The MoE of layer l; the expert width comes from the tensor (Puzzle layers differ), and the
  // key, when present, must agree with it.
  const auto moe_layer = [&](int64_t l, MoeDesc& e) {
    e = moe_base;
    e.n_expert = n_expert->at(l);
    e.n_expert_used = n_used->at(l);
    FULGUR_CHECK(e.n_expert > 0 && e.n_expert_used > 0 && e.n_expert_used <= e.n_expert, gguf.where(),
                 ": layer ", l, " (MoE) has ", n_expert->key(), " ", e.n_expert, " and ", n_used->key(), " ",
                 e.n_expert_used, "; need 0 < experts used <= experts");
    const std::string up = cat("blk.", l, ".ffn_up_exps.weight");
    const GgufTensorInfo& t = gguf.tensor(up);
    FULGUR_CHECK(t.n_dims == 3, gguf.where(), ": tensor '", up, "' has ", t.n_dims,
                 " dimensions, expected 3 {in, expert width, experts}");
    e.n_ff_exp = t.ne[1];
    FULGUR_CHECK(!n_ff_exp->present() || n_ff_exp->at(l) == e.n_ff_exp, gguf.where(), ": layer ", l, " has ",
                 n_ff_exp->key(), " ", n_ff_exp->at(l), " but its tensor '", up, "' holds experts of width ",
                 e.n_ff_exp);
    FULGUR_CHECK(e.n_ff_exp > 0, gguf.where(), ": tensor '", up, "' has experts of width 0");
  };

  for (int64_t l = 0; l < n; ++l) {
    LayerDesc& L = d.layers[static_cast<size_t>(l)];
    if (l >= layout.n_trunk()) {  // an MTP block: attention, then the MoE (or ReLU² MLP)
      FULGUR_CHECK(n_head_kv.at(l) > 0 && L.mixer == MixerKind::kAttention, gguf.where(), ": MTP block ", l,
                   " has ", n_head_kv.key(), " 0; its first sublayer is attention");
      L.attn.rope = false;
      if (moe) {
        L.ffn = FfnKind::kMoe;
        moe_layer(l, L.moe);
      } else {
        L.ffn = FfnKind::kRelu2;
        L.n_ff = n_ff.at(l);
        FULGUR_CHECK(L.n_ff > 0, gguf.where(), ": MTP block ", l, " has ", n_ff.key(), " 0; its second "
                     "sublayer is a ReLU² MLP");
      }
    } else if (n_head_kv.at(l) == 0 && n_ff.at(l) == 0) {
      L.mixer = MixerKind::kMamba2;
      L.ssm = ssm;
    } else if (n_ff.at(l) == 0) {
      L.attn.rope = false;  // read_transformer_keys checked its heads
    } else {
      L.mixer = MixerKind::kNone;
      L.attn = AttentionDesc{};
      if (!moe) {
        L.ffn = FfnKind::kRelu2;
        L.n_ff = n_ff.at(l);
        continue;
      }
      L.ffn = FfnKind::kMoe;
      moe_layer(l, L.moe);
    }
  }
  return d;
}

}  // namespace

bool is_nemotron_h(const std::string& arch) { return arch == "nemotron_h" || arch == "nemotron_h_moe"; }

ArchModel load_nemotron_h(const GgufReader& gguf, const std::string& arch, const Model* nextn_base) {
  const BlockLayout layout = read_block_layout(gguf);
  ModelDesc all = read_nemotron_desc(gguf, arch, layout);
  if (nextn_base != nullptr) {
    ArchModel m = load_nextn_block(gguf, layout, std::move(all), *nextn_base);
    m.desc.output_norm = OutputNorm::kLayerNorm;
    m.desc.pairs_normed_hidden = true;
    return m;
  }
  ArchModel m;
  ModelDesc& d = m.desc;
  d = std::move(all);
  d.layers.resize(static_cast<size_t>(layout.n_trunk()));
  d.n_nextn = layout.n_nextn;
  bind_embeddings(gguf, d, m.weights);
  bind_layers(gguf, d, m.weights, NormLayout::kOnePerBlock);
  return m;
}

}  // namespace fulgur
