// The MTP (NextN) block of a target's file as a model of its own (archs.h load_nextn_block), one
// loader for every arch whose files carry one (the Gated-DeltaNet hybrids, Nemotron-H): llama.cpp
// appends the block after the trunk (block_count counts it, nextn_predict_layers marks it) and
// runs it in a context of its own with its own KV (llamacpp-speculative.md §5.2).
#include "core/error.h"
#include "gguf/block_layout.h"
#include "gguf/gguf_reader.h"
#include "model/archs/archs.h"
#include "model/binder.h"
#include "model/model.h"

namespace fulgur {

ArchModel load_nextn_block(const GgufReader& gguf, const BlockLayout& layout, ModelDesc all, const Model& base) {
  const std::string& arch = layout.arch;
  FULGUR_CHECK(layout.n_nextn > 0, gguf.where(), ": has no MTP block (", arch,
               ".nextn_predict_layers is absent or 0)");
  const ModelDesc& t = base.desc();
  FULGUR_CHECK(t.arch == arch && t.n_layer() == layout.n_trunk(), gguf.where(),
               ": the MTP block must be loaded with its own trunk as the base model (base: ",
               t.arch, ", ", t.n_layer(), " layers)");
  FULGUR_CHECK(all.n_layer() == layout.n_block, gguf.where(), ": ", all.n_layer(), " blocks described but ",
               arch, ".block_count is ", layout.n_block);
  ArchModel m;
  ModelDesc& d = m.desc;
  d = std::move(all);
  const int64_t N = layout.n_trunk(), E = d.n_embd;
  const LayerDesc block = d.layers[static_cast<size_t>(N)];
  d.layers = {block};
  d.n_vocab = t.n_vocab;
  d.input = {{.token = true, .width = E, .norm = true}, {.token = false, .width = E, .norm = true}};

  const Binder bind(gguf);
  ModelWeights& w = m.weights;
  const std::string p = cat("blk.", N, ".nextn.");
  w.input.fc = bind.matrix(p + "eh_proj.weight", 2 * E, E);  // input [embedding ; hidden]
  w.input.norms = {bind.vector(p + "enorm.weight", E), bind.vector(p + "hnorm.weight", E)};
  w.output_norm = bind.vector(p + "shared_head_norm.weight", E);
  w.token_embd = bind.has(p + "embed_tokens.weight") ? bind.matrix(p + "embed_tokens.weight", E, t.n_vocab)
                                                     : base.weights().token_embd;
  w.output = bind.has(p + "shared_head_head.weight") ? bind.matrix(p + "shared_head_head.weight", E, t.n_vocab)
                                                     : base.weights().output;
  w.layers.resize(1);
  bind_layer(bind, cat("blk.", N, "."), block, E, NormLayout::kPostAttention, w, w.layers[0]);
  return m;
}

}  // namespace fulgur
