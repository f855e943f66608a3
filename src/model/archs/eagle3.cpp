// The `eagle3` arch (model/archs/eagle3.h): llama.cpp's keys and tensor names, the layer bound
// by the shared attention and SwiGLU binders with attn_q/k/v over [embedding ; hidden].
#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "model/archs/archs.h"
#include "model/binder.h"
#include "model/model.h"

namespace fulgur {

ArchModel load_eagle3(const GgufReader& gguf, const Model& target) {
  const std::string a = "eagle3.";
  const std::string who = cat("draft ", gguf.where(), " and target ", target.gguf().where());
  ArchModel m;
  ModelDesc& d = m.desc;
  d = read_transformer_keys(gguf, "eagle3");
  FULGUR_CHECK(d.n_layer() == 1, gguf.where(), ": eagle3.block_count is ", d.n_layer(),
               "; an EAGLE-3 draft has one decoder layer");
  for (const char* key : {"eagle3.rope.scaling.type", "eagle3.attention.sliding_window"}) {
    FULGUR_CHECK(!gguf.has(key), gguf.where(), ": ", key, " is not supported for EAGLE-3 drafts");
  }
  FULGUR_CHECK(gguf.find_tensor("rope_freqs.weight") == nullptr, gguf.where(),
               ": rope_freqs (llama3 RoPE scaling) is not supported for EAGLE-3 drafts");
  // llama.cpp runs the layer as llama's (its converter permutes q and k so that adjacent pairs
  // rotate), without q/k norms or biases.
  d.rope.mode = kernels::RopeMode::kNormal;
  const int64_t E = d.n_embd;
  LayerDesc& L = d.layers[0];
  L.attn.input_width = 2 * E;
  L.eagle3_input = true;
  L.norm_before_residual = gguf.get_bool(a + "norm_before_residual", false);
  L.ffn = FfnKind::kSwiGlu;
  L.n_ff = gguf.get_i64(a + "feed_forward_length");
  FULGUR_CHECK(L.n_ff > 0, gguf.where(), ": eagle3.feed_forward_length is ", L.n_ff);

  auto info = std::make_unique<Eagle3Info>();
  const ModelDesc& t = target.desc();
  std::vector<int64_t> layers;
  // llama.cpp reads {arch}.target_layers; its first EAGLE-3 version wrote extract_layers.
  const std::string key = gguf.has(a + "target_layers") ? a + "target_layers" : a + "extract_layers";
  layers = gguf.get_int_array<int64_t>(key);
  FULGUR_CHECK(layers.size() == 3, gguf.what(key), " has ", layers.size(), " entries; EAGLE-3 taps 3 target layers");
  for (int64_t l : layers) {
    FULGUR_CHECK(l >= 0 && l <= t.n_layer(), who, ": ", key, " names layer ", l, " but the target has ",
                 t.n_layer(), " (", t.n_layer(), " = its final hidden state)");
    info->extract_layers.push_back(static_cast<int>(l));
  }
  info->target_hidden = gguf.get_i64(a + "target_hidden_size", t.n_embd);
  FULGUR_CHECK(info->target_hidden == t.n_embd, who, ": eagle3.target_hidden_size is ", info->target_hidden,
               " but the target's hidden size is ", t.n_embd);
  info->n_vocab = t.n_vocab;

  const Binder bind(gguf);
  ModelWeights& w = m.weights;
  d.n_vocab = t.n_vocab;
  d.input = {{.token = false, .width = 3 * t.n_embd, .norm = false}};
  w.input.fc = bind.matrix("fc.weight", 3 * t.n_embd, E);
  w.input.norms = {VectorView{}};
  w.token_embd = bind.has("token_embd.weight") ? bind.matrix("token_embd.weight", E, t.n_vocab)
                                               : target.weights().token_embd;
  FULGUR_CHECK(w.token_embd.cols == E, who, ": the draft's width ", E, " differs from the embeddings' ",
               w.token_embd.cols, " (a draft without token_embd borrows the target's)");
  w.output_norm = bind.vector("output_norm.weight", E);
  w.output = bind.matrix("output.weight", E, -1);
  info->n_vocab_draft = w.output.rows;
  info->d2t = read_d2t(gguf, who, info->n_vocab_draft, info->n_vocab);
  bind_layers(gguf, d, w, NormLayout::kPerSublayer);
  w.layers[0].hidden_norm = bind.vector("blk.0.attn_norm_2.weight", E);  // hidden_norm
  m.eagle3 = std::move(info);
  return m;
}

}  // namespace fulgur
