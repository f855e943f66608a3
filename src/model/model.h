// A loaded model: the mapped GGUF, its description (model/desc.h: a list of layer kinds) and
// its bound weights, with the matrices the active kernels read faster repacked at load. Contexts
// (model/context.h) run it. This header names no kernel or GGUF type: code above model/
// (drafters, the server) sees a model through the accessors here, while model/ itself and the
// CLI include desc.h, weights.h or gguf/gguf_reader.h for the rest.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/archs/dflash.h"
#include "model/archs/eagle3.h"

namespace fulgur {

class GgufReader;
struct ModelDesc;
struct ModelWeights;
class TileCache;
namespace kernels {
class PackedWeight;
}

// llama.cpp's RoPE overrides (--rope-scaling, --rope-freq-base, --rope-freq-scale,
// --yarn-orig-ctx); empty / 0 keeps what the file says.
struct RopeOverrides {
  std::string scaling;      // none | linear | yarn
  float freq_base = 0.0f;
  float freq_scale = 0.0f;  // 1 / the context scaling factor
  int64_t yarn_orig_ctx = 0;
};

struct ModelOptions {
  // Repack matrices into 16-row tiles where the active kernels read them faster
  // (kernels/packed.h); false keeps the file's layout (to compare).
  bool pack = true;
  // Keep the repacked tiles in a file under this directory, so the next load maps them instead
  // of repacking (model/tile_cache.h); empty = no cache.
  std::string tile_cache_dir = {};
  // The model a draft borrows its embeddings and LM head from when its file has none (a
  // `dflash` block drafter must have it), or the target a `gemma4-assistant` drafts for (its
  // input embeddings and KV layout); other archs ignore it. Must outlive this model.
  const class Model* base = nullptr;
  // Load the file's MTP (NextN) block as the model (archs/nextn.cpp) instead of its trunk;
  // `base` must be the trunk loaded from the same file, whose embeddings and output head the
  // block uses.
  bool nextn = false;
  RopeOverrides rope = {};
};

class Model {
 public:
  // Maps, validates and binds a GGUF file; throws fulgur::Error naming what is wrong.
  explicit Model(const std::string& path, ModelOptions options = {});
  explicit Model(GgufReader gguf, ModelOptions options = {});
  ~Model();

  const GgufReader& gguf() const { return *gguf_; }
  const ModelDesc& desc() const { return *desc_; }
  const ModelWeights& weights() const { return *w_; }
  // The block-drafter parts of a `dflash` model, else null.
  const DflashInfo* dflash() const { return dflash_.get(); }
  // The EAGLE-3 parts of an `eagle3` model, else null.
  const Eagle3Info* eagle3() const { return eagle3_.get(); }
  const std::string& arch() const;  // general.architecture
  int64_t n_vocab() const;
  int64_t n_layer() const;
  int64_t n_embd() const;
  int64_t n_nextn() const;          // MTP (NextN) blocks after the trunk
  // An MTP model (ModelOptions::nextn): whether it pairs each token with the final norm's
  // output (tap final_norm_tap) rather than the pre-norm hidden state (ModelDesc).
  bool pairs_normed_hidden() const;
  // Values of Context::projected_hidden (ModelWeights::hidden_proj rows); 0 = no projection.
  int64_t n_projected_hidden() const;
  // The GGUF file's path; empty when the model was read from memory.
  const std::string& path() const { return path_; }
  // The file (or buffer) for messages: "file 'x.gguf'".
  std::string where() const;
  // The vocabulary's token strings (tokenizer.ggml.tokens), or null when the file has none.
  const std::vector<std::string>* vocab_tokens() const;
  // Bytes of weights one decoded token reads: every dense matrix once, the router and the
  // experts a token is routed to (k of each MoE layer), one embedding row.
  uint64_t bytes_per_token() const { return bytes_per_token_; }
  // Where those bytes are, as the model holds them (16-row tiles where repacked, so slightly
  // more than bytes_per_token(), which sums these before repacking); of an MoE expert stack the
  // first k experts' share stands for whichever k a token picks. What `fulgur bench --floor`
  // reads.
  std::vector<std::span<const uint8_t>> token_weight_ranges() const;
  // Seconds spent repacking matrices into 16-row tiles at load (0 when nothing was packed).
  double pack_seconds() const { return pack_seconds_; }
  // Whether the packed matrices were mapped from a tile cache file.
  bool tiles_from_cache() const { return tile_cache_ != nullptr; }

 private:
  // Replaces every row-major matrix the active kernels read faster as 16-row tiles
  // (kernels/packed.h) by an owned packed copy, or by its tiles in the tile cache file; the
  // mapped original stays for row fetches (token_embd).
  void pack_matrices(const ModelOptions& options);

  std::unique_ptr<GgufReader> gguf_;
  std::string path_;
  std::unique_ptr<ModelDesc> desc_;
  std::unique_ptr<ModelWeights> w_;
  std::unique_ptr<DflashInfo> dflash_;
  std::unique_ptr<Eagle3Info> eagle3_;
  uint64_t bytes_per_token_ = 0;
  std::vector<kernels::PackedWeight> packed_;  // complete in model.cpp (C++17 allows this)
  std::unique_ptr<TileCache> tile_cache_;  // set while the tiles are mapped from it
  double pack_seconds_ = 0;
};

}  // namespace fulgur
