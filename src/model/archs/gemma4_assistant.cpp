// gemma4-assistant (reference/archs-gguf.md "Gemma 4 assistant MTP drafter"; llama.cpp's
// llm_build_gemma4_mtp and its KV sharing in llama-model.cpp): a small separate GGUF that drafts
// for a Gemma 4 target. Its layers are Gemma 4 layers that own no KV: each attends to the
// target context's cache of the target's last layer of its kind (the last sliding layer for a
// sliding one, the last full layer for a full one, found by position as llama.cpp does; a
// KV-shared target layer stands for the layer whose cache it reads), through
// Context::read_kv_from. Its input row is
//   nextn.pre_projection · [target token_embd[token] · sqrt(E_target) ; h]
// where h is the target's final-normed hidden state (or the assistant's own projection of its
// last one, when chaining), and its outputs are the logits of its own tied embedding
// (soft-capped) and nextn.post_projection · (its final-normed hidden state): the next h.
#include <cmath>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "model/archs/archs.h"
#include "model/binder.h"
#include "model/model.h"

namespace fulgur {
namespace {

// The target layer whose cache a layer of this kind reads, as llama.cpp maps it: the target's
// layer n - 2 for a sliding layer, n - 1 for a full one (Gemma 4 targets end sliding, full), or
// the layer whose cache that one shares. -1 when that layer is not of the kind.
int64_t target_kv_layer(const ModelDesc& t, bool sliding) {
  const int64_t l = t.n_layer() - (sliding ? 2 : 1);
  if (l < 0) return -1;
  const LayerDesc& L = t.layers[static_cast<size_t>(l)];
  if (L.mixer != MixerKind::kAttention || (L.attn.window > 0) != sliding) return -1;
  return L.attn.owns_kv() ? l : L.attn.kv_layer;
}

}  // namespace

ArchModel load_gemma4_assistant(const GgufReader& gguf, const Model& target) {
  const std::string arch = "gemma4-assistant", a = arch + ".";
  const std::string who = cat(gguf.where(), " (a Gemma 4 assistant) with target ", target.where());
  FULGUR_CHECK(target.arch() == "gemma4", who, ": the target is a '", target.arch(),
               "' model; an assistant drafts for a gemma4 target only");
  ArchModel m;
  ModelDesc& d = m.desc;
  std::vector<bool> swa;
  d = read_gemma4_keys(gguf, arch, swa);
  const ModelDesc& t = target.desc();
  const int64_t E = d.n_embd, n_layer = d.n_layer();
  const int64_t Et = gguf.get_i64(a + "embedding_length_out");
  FULGUR_CHECK(
      Et == t.n_embd, who, ": embedding_length_out ", Et,
      " (the width of the target it was trained for) differs from the target's embedding_length ",
      t.n_embd);
  const int64_t n_nextn = gguf.get_i64(a + "nextn_predict_layers", n_layer);
  FULGUR_CHECK(n_nextn == n_layer, gguf.what(a + "nextn_predict_layers"), " is ", n_nextn,
               "; an assistant's blocks are all MTP blocks (block_count ", n_layer, ")");

  for (int64_t l = 0; l < n_layer; ++l) {
    AttentionDesc& at = d.layers[static_cast<size_t>(l)].attn;
    const bool sliding = swa[static_cast<size_t>(l)];
    const char* kind = sliding ? "sliding" : "full";
    const int64_t src = target_kv_layer(t, sliding);
    FULGUR_CHECK(src >= 0, who, ": layer ", l, " is a ", kind,
                 " layer and reads the target's layer ", t.n_layer() - (sliding ? 2 : 1),
                 " (as llama.cpp maps an assistant: sliding layers the "
                 "target's second last, full layers its last), which is not a ",
                 kind, " attention layer");
    const AttentionDesc& ts = t.layers[static_cast<size_t>(src)].attn;
    FULGUR_CHECK(
        ts.n_head_kv == at.n_head_kv && ts.head_dim == at.head_dim && ts.window == at.window, who,
        ": ", kind, " layer ", l, " has ", at.n_head_kv, " KV heads of ", at.head_dim,
        " dims (window ", at.window, ") but reads the target's layer ", src, " with ", ts.n_head_kv,
        " of ", ts.head_dim, " (window ", ts.window, ")");
    at.kv_layer = src;
    at.kv_external = true;
  }

  bind_embeddings(gguf, d, m.weights);
  FULGUR_CHECK(d.n_vocab == t.n_vocab, who, ": the assistant's vocabulary has ", d.n_vocab,
               " tokens, the target's ", t.n_vocab);
  bind_layers(gguf, d, m.weights, NormLayout::kPerSublayer);
  // The input row: the target's scaled embedding of the token beside h, projected to E.
  d.input = {
      InputPart{
          .token = true, .width = Et, .norm = false, .scale = std::sqrt(static_cast<float>(Et))},
      InputPart{.token = false, .width = Et, .norm = false}};
  const Binder bind(gguf);
  m.weights.input.fc = bind.matrix("nextn.pre_projection.weight", 2 * Et, E);
  m.weights.input.norms.assign(2, VectorView{});
  m.weights.input.token_embd = target.weights().token_embd;
  m.weights.hidden_proj = bind.matrix("nextn.post_projection.weight", E, Et);
  return m;
}

}  // namespace fulgur
