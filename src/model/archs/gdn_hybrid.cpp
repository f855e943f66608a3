// The Gated-DeltaNet hybrids qwen3next, qwen35 and qwen35moe (reference/archs-gguf.md §3.4, §3.5,
// §4.3; llamacpp-speculative.md §5.1): in the trunk, layer i is gated full attention when
// (i + 1) % full_attention_interval == 0 and Gated DeltaNet otherwise; every layer has attn_norm
// before its mixer and post_attention_norm before its FFN (SwiGLU for qwen35, the MoE with its
// gated shared expert for the others). The last nextn_predict_layers blocks, counted in
// block_count, are MTP blocks (gguf/block_layout.h): not part of the trunk, loaded on their own
// with ModelOptions::nextn.
//
// The MTP model (llama.cpp's MTP graph, llamacpp-speculative.md §5.2; loaded by the loader every
// arch with MTP blocks shares, archs/nextn.cpp) is block N = the first MTP block: its input row is eh_proj · [enorm(embedding of the token) ; hnorm(aux row)], where the
// aux row is the target's pre-norm hidden state at the previous position (or the MTP model's own
// output hidden state when drafting further); then the block's gated attention (its own KV) and
// FFN; then shared_head_norm and the target's output head (nextn.shared_head_head when present),
// the target's embeddings unless nextn.embed_tokens is present.
#include <cmath>

#include "core/error.h"
#include "gguf/block_layout.h"
#include "gguf/gguf_reader.h"
#include "model/archs/archs.h"

namespace fulgur {
namespace {

// Whether llama.cpp's IMROPE over these sections rotates every one of the n_rot / 2 pairs by the
// text position: for text the t, h and w positions are the token's position and the fourth is 0,
// so IMROPE is NEOX over n_rot dims exactly when no pair falls to the fourth section
// (archs-gguf.md §4.0, §4.3: pair i takes sector i mod Σsections, sector s goes to t, h or w
// when s mod 3 = 0, 1, 2 and s < 3·sections[s mod 3], else to the fourth position).
bool imrope_is_neox(const std::vector<int64_t>& sec, int64_t n_rot) {
  int64_t dims = 0;
  for (int64_t s : sec) dims += s;
  if (dims <= 0) return false;
  for (int64_t i = 0; i < n_rot / 2; ++i) {
    const int64_t sector = i % dims;
    if (sector >= 3 * sec[static_cast<size_t>(sector % 3)]) return false;
  }
  return true;
}

// Every block of the file (trunk and MTP) as a LayerDesc: the MTP blocks as gated attention.
ModelDesc read_gdn_desc(const GgufReader& gguf, const std::string& arch, const BlockLayout& layout) {
  ModelDesc d = read_transformer_keys(gguf, arch);
  const std::string a = arch + ".";
  d.rope.mode = kernels::RopeMode::kNeox;
  if (arch != "qwen3next") {
    const std::string key = a + "rope.dimension_sections";
    const std::vector<int64_t> sec = gguf.get_int_array<int64_t>(key);
    FULGUR_CHECK(sec.size() == 4, gguf.what(key), " has ", sec.size(), " entries; IMROPE needs 4");
    FULGUR_CHECK(imrope_is_neox(sec, d.rope.n_rot), gguf.what(key), " = [", sec[0], ", ", sec[1],
                 ", ", sec[2], ", ", sec[3], "] leaves some of the ", d.rope.n_rot / 2,
                 " rotated pairs to the fourth (zero) position for text; fulgur runs IMROPE as "
                 "NEOX and supports only sections whose first three cover every pair");
  }
  GdnDesc g;
  g.conv_kernel = gguf.get_i64(a + "ssm.conv_kernel");
  g.k_dim = gguf.get_i64(a + "ssm.state_size");
  g.n_k_heads = gguf.get_i64(a + "ssm.group_count");
  g.n_v_heads = gguf.get_i64(a + "ssm.time_step_rank");
  const int64_t inner = gguf.get_i64(a + "ssm.inner_size");
  FULGUR_CHECK(g.conv_kernel >= 1 && g.k_dim > 0 && g.k_dim <= kernels::kGdnMaxKeyDim &&
                   g.n_k_heads > 0 && g.n_v_heads > 0 && g.n_v_heads % g.n_k_heads == 0 &&
                   inner > 0 && inner % g.n_v_heads == 0,
               gguf.where(), ": Gated DeltaNet keys ssm.conv_kernel ", g.conv_kernel,
               ", ssm.state_size ", g.k_dim, " (at most ", kernels::kGdnMaxKeyDim,
               "), ssm.group_count ", g.n_k_heads, ", ssm.time_step_rank ", g.n_v_heads,
               " (a multiple of group_count) and ssm.inner_size ", inner,
               " (a multiple of time_step_rank) are inconsistent");
  g.v_dim = inner / g.n_v_heads;
  // Qwen3.5 GGUFs store the v-heads tiled, Qwen3-Next's grouped (archs-gguf.md §4.3 step 7).
  g.head_map = arch == "qwen3next" ? kernels::GdnHeadMap::kGrouped : kernels::GdnHeadMap::kTiled;
  g.fused_ba = arch == "qwen3next";

  const int64_t n = d.n_layer();
  const bool moe = arch != "qwen35";
  const PerLayerKey n_ff(gguf, a + "feed_forward_length", n, moe ? 0 : -1);
  const PerLayerKey n_expert(gguf, a + "expert_count", n, moe ? -1 : 0);
  const PerLayerKey n_used(gguf, a + "expert_used_count", n, moe ? -1 : 0);
  const PerLayerKey n_ff_exp(gguf, a + "expert_feed_forward_length", n, moe ? -1 : 0);
  const PerLayerKey n_ff_shared(gguf, a + "expert_shared_feed_forward_length", n, 0);
  for (int64_t l = 0; l < n; ++l) {
    LayerDesc& L = d.layers[static_cast<size_t>(l)];
    if (layout.kinds[static_cast<size_t>(l)] == BlockKind::kGatedDeltaNet) {
      L.mixer = MixerKind::kGatedDeltaNet;
      L.gdn = g;
    } else {
      L.attn.qk_norm = true;
      L.attn.output_gate = true;
    }
    if (!moe) {
      L.ffn = FfnKind::kSwiGlu;
      L.n_ff = n_ff.at(l);
      FULGUR_CHECK(L.n_ff > 0, gguf.where(), ": layer ", l, " has feed_forward_length ", L.n_ff);
      continue;
    }
    // Softmax over every expert, top-k, weights renormalised (llama.cpp hard-codes it for these
    // archs, as for qwen3moe), SwiGLU experts; the shared expert gated by
    // sigmoid(ffn_gate_inp_shexp · h) (archs-gguf.md §4.3 "MoE").
    L.ffn = FfnKind::kMoe;
    MoeDesc& e = L.moe;
    e.n_expert = n_expert.at(l);
    e.n_expert_used = n_used.at(l);
    e.n_ff_exp = n_ff_exp.at(l);
    e.norm_weights = true;
    e.n_ff_shared = n_ff_shared.at(l);
    e.shared_gate = e.n_ff_shared > 0;
    FULGUR_CHECK(e.n_expert > 0 && e.n_expert_used > 0 && e.n_expert_used <= e.n_expert && e.n_ff_exp > 0,
                 gguf.where(), ": layer ", l, " has ", n_expert.key(), " ", e.n_expert, ", ",
                 n_used.key(), " ", e.n_expert_used, " and ", n_ff_exp.key(), " ", e.n_ff_exp,
                 "; need 0 < experts used <= experts and a positive width");
  }
  return d;
}

ArchModel load_trunk(const GgufReader& gguf, const std::string& arch, const BlockLayout& layout) {
  ArchModel m;
  ModelDesc& d = m.desc;
  d = read_gdn_desc(gguf, arch, layout);
  d.layers.resize(static_cast<size_t>(layout.n_trunk()));
  d.n_nextn = layout.n_nextn;
  bind_embeddings(gguf, d, m.weights);
  bind_layers(gguf, d, m.weights, NormLayout::kPostAttention);
  return m;
}

}  // namespace

bool is_gdn_hybrid(const std::string& arch) {
  return arch == "qwen3next" || arch == "qwen35" || arch == "qwen35moe";
}

ArchModel load_gdn_hybrid(const GgufReader& gguf, const std::string& arch, const Model* nextn_base) {
  const BlockLayout layout = read_block_layout(gguf);
  if (nextn_base == nullptr) return load_trunk(gguf, arch, layout);
  return load_nextn_block(gguf, layout, read_gdn_desc(gguf, arch, layout), *nextn_base);
}

}  // namespace fulgur
