#include "model/model.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "core/log.h"
#include "gguf/gguf_reader.h"
#include "kernels/packed.h"
#include "model/archs/archs.h"
#include "model/desc.h"
#include "model/tile_cache.h"
#include "model/weights.h"

namespace fulgur {
namespace {

// Bytes of a matrix as it is held: rows of the file's layout, or 16-row tiles.
uint64_t matrix_bytes(const kernels::WeightView& w) {
  const bool tiles = w.layout == kernels::WeightLayout::kRows16;
  const int64_t strides = tiles ? (w.rows + kernels::kPackRows - 1) / kernels::kPackRows : w.rows;
  return w.row_stride * static_cast<uint64_t>(strides);
}

}  // namespace

std::vector<kernels::WeightView*> ModelWeights::matrices() {
  std::vector<kernels::WeightView*> out;
  for (LayerWeights& L : layers) {
    for (kernels::WeightView* m : {&L.attn.wq, &L.attn.wk, &L.attn.wv, &L.attn.wo, &L.gdn.qkv,
                                   &L.gdn.z, &L.gdn.beta, &L.gdn.alpha, &L.gdn.ba, &L.gdn.out,
                                   &L.ssm.in, &L.ssm.out, &L.ffn.gate, &L.ffn.up, &L.ffn.down,
                                   &L.moe.router, &L.moe.gate_exps, &L.moe.up_exps,
                                   &L.moe.down_exps, &L.moe.latent_down, &L.moe.latent_up,
                                   &L.moe.shared.gate, &L.moe.shared.up, &L.moe.shared.down,
                                   &L.mixer_conv.proj, &L.ffn_conv.proj, &L.ple.gate, &L.ple.proj}) {
      if (m->data != nullptr) out.push_back(m);
    }
  }
  if (inject_fc.data != nullptr) out.push_back(&inject_fc);
  if (input.fc.data != nullptr) out.push_back(&input.fc);
  if (hidden_proj.data != nullptr) out.push_back(&hidden_proj);
  if (ple.model_proj.data != nullptr) out.push_back(&ple.model_proj);
  out.push_back(&output);
  return out;
}

std::vector<const kernels::WeightView*> ModelWeights::matrices() const {
  const std::vector<kernels::WeightView*> all = const_cast<ModelWeights*>(this)->matrices();
  return {all.begin(), all.end()};
}

Model::Model(const std::string& path, ModelOptions options) : Model(GgufReader(path), options) {}

Model::Model(GgufReader gguf, ModelOptions options)
    : gguf_(std::make_unique<GgufReader>(std::move(gguf))),
      path_(gguf_->is_mapped_file() ? gguf_->name() : std::string()) {
  ArchModel arch = load_arch(*gguf_, options.base, options.nextn);
  desc_ = std::make_unique<ModelDesc>(std::move(arch.desc));
  apply_rope_overrides(options.rope, desc_->rope, desc_->n_ctx_train);
  w_ = std::make_unique<ModelWeights>(std::move(arch.weights));
  dflash_ = std::move(arch.dflash);
  eagle3_ = std::move(arch.eagle3);

  // Counted before repacking, so in the file's bytes.
  for (std::span<const uint8_t> r : token_weight_ranges()) bytes_per_token_ += r.size();
  pack_matrices(options);
}

Model::~Model() = default;

const std::string& Model::arch() const { return desc_->arch; }
int64_t Model::n_vocab() const { return desc_->n_vocab; }
int64_t Model::n_layer() const { return desc_->n_layer(); }
int64_t Model::n_embd() const { return desc_->n_embd; }
int64_t Model::n_nextn() const { return desc_->n_nextn; }
bool Model::pairs_normed_hidden() const { return desc_->pairs_normed_hidden; }
int64_t Model::n_projected_hidden() const { return w_->hidden_proj.data != nullptr ? w_->hidden_proj.rows : 0; }
std::string Model::where() const { return gguf_->where(); }

const std::vector<std::string>* Model::vocab_tokens() const {
  constexpr const char* kTokens = "tokenizer.ggml.tokens";
  return gguf_->has(kTokens) ? &gguf_->get_string_array(kTokens) : nullptr;
}

std::vector<std::span<const uint8_t>> Model::token_weight_ranges() const {
  std::vector<std::span<const uint8_t>> out;
  const auto add = [&](const void* p, uint64_t n) { out.emplace_back(static_cast<const uint8_t*>(p), n); };
  add(w_->token_embd.data, w_->token_embd.row_stride);
  std::vector<const kernels::WeightView*> stacks;  // expert stacks: k of n experts per token
  for (size_t l = 0; l < w_->layers.size(); ++l) {
    const MoeWeights& e = w_->layers[l].moe;
    const MoeDesc& d = desc_->layers[l].moe;
    for (const kernels::WeightView* m : {&e.gate_exps, &e.up_exps, &e.down_exps}) {
      if (m->data == nullptr) continue;
      stacks.push_back(m);
      add(m->data, matrix_bytes(*m) / d.n_expert * d.n_expert_used);
    }
  }
  for (const kernels::WeightView* m : w_->matrices())
    if (std::find(stacks.begin(), stacks.end(), m) == stacks.end()) add(m->data, matrix_bytes(*m));
  return out;
}

void Model::pack_matrices(const ModelOptions& options) {
  if (!options.pack) return;
  std::vector<kernels::WeightView*> todo = w_->matrices();
  // Borrowed matrices (a draft's LM head from its target) may be packed already. An expert
  // stack packs as one matrix only when no 16-row tile would straddle two experts.
  std::vector<const kernels::WeightView*> unpackable;
  for (size_t l = 0; l < w_->layers.size(); ++l) {
    const MoeWeights& e = w_->layers[l].moe;
    const MoeDesc& d = desc_->layers[l].moe;
    if (e.up_exps.data == nullptr) continue;
    if (!kernels::expert_stack_packable(d.n_ff_exp)) unpackable.insert(unpackable.end(), {&e.gate_exps, &e.up_exps});
    if (!kernels::expert_stack_packable(d.expert_io(desc_->n_embd))) unpackable.push_back(&e.down_exps);
  }
  std::erase_if(todo, [&](const kernels::WeightView* m) {
    return m->layout != kernels::WeightLayout::kRows || !kernels::should_pack(m->type) ||
           std::find(unpackable.begin(), unpackable.end(), m) != unpackable.end();
  });
  if (todo.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  const auto done = [&](const char* how) {
    pack_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    log_info(how, " ", todo.size(), " matrices as 16-row tiles in ", pack_seconds_, " s");
  };
  // The mapped originals are not read again (a tied token_embd's lookups fault in single rows).
  const auto use = [&](kernels::WeightView* m, const kernels::WeightView& packed) {
    gguf_->drop_pages(m->data, matrix_bytes(*m));
    *m = packed;
  };

  std::unique_ptr<TileCache> cache;
  // The cache file is keyed on the GGUF, so it holds the trunk's tiles; an MTP block loaded from
  // the same file (a few matrices) packs its own.
  if (!options.tile_cache_dir.empty() && gguf_->is_mapped_file() && !options.nextn) {
    cache = std::make_unique<TileCache>(
        options.tile_cache_dir, gguf_->name(),
        std::vector<const kernels::WeightView*>(todo.begin(), todo.end()));
    if (cache->open()) {
      for (size_t i = 0; i < todo.size(); ++i) use(todo[i], kernels::packed_view(*todo[i], cache->tiles(i)));
      tile_cache_ = std::move(cache);
      done("mapped");
      return;
    }
  }
  ThreadPool pool;  // load-time only: the contexts own the token-loop pools
  packed_.reserve(todo.size());
  for (kernels::WeightView* m : todo) {
    packed_.emplace_back(*m, &pool);
    use(m, packed_.back().view());
  }
  done("packed");
  if (cache == nullptr && pack_seconds_ > 1.0)
    log_info("--tile-cache DIR keeps the tiles in a file, so the next load maps them");
  if (cache != nullptr) {
    std::vector<const uint8_t*> data;
    for (const kernels::PackedWeight& p : packed_) data.push_back(static_cast<const uint8_t*>(p.view().data));
    cache->write(data);
  }
}

}  // namespace fulgur
