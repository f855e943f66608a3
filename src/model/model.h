// A loaded target model (weights in the mapped GGUF, hyperparameters, binding table) and a
// Context that runs it: decode(batch) over a KV cache, logits for flagged rows, and the
// hidden-state taps speculative drafters read (DESIGN §2–3).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "gguf/gguf_reader.h"
#include "model/batch.h"
#include "model/hparams.h"
#include "model/kv_cache.h"
#include "model/tile_cache.h"
#include "kernels/packed.h"
#include "model/weights.h"

namespace fulgur {

class Model {
 public:
  // Maps, validates and binds a GGUF file; throws fulgur::Error naming what is wrong.
  explicit Model(const std::string& path);
  explicit Model(GgufReader gguf);

  const GgufReader& gguf() const { return gguf_; }
  const Hparams& hparams() const { return hp_; }
  const ModelWeights& weights() const { return w_; }
  int64_t n_vocab() const { return w_.token_embd.rows; }
  // Bytes of weights one decoded token reads (every matrix once; one embedding row).
  uint64_t bytes_per_token() const { return bytes_per_token_; }
  // Seconds spent repacking matrices into 16-row tiles at load (0 when nothing was packed).
  double pack_seconds() const { return pack_seconds_; }
  // Whether the packed matrices were mapped from a tile cache file (FULGUR_TILE_CACHE).
  bool tiles_from_cache() const { return tile_cache_ != nullptr; }

 private:
  // Replaces every matrix the active kernels read faster as 16-row tiles (kernels/packed.h) by
  // an owned packed copy, or by its tiles in the tile cache file when FULGUR_TILE_CACHE names
  // a directory (model/tile_cache.h); the mapped original stays for row fetches (token_embd).
  void pack_matrices();

  GgufReader gguf_;
  Hparams hp_;
  ModelWeights w_;
  uint64_t bytes_per_token_ = 0;
  std::vector<kernels::PackedWeight> packed_;
  std::unique_ptr<TileCache> tile_cache_;  // set while the tiles are mapped from it
  double pack_seconds_ = 0;
};

struct ContextParams {
  int64_t n_ctx = 0;       // KV cells; 0 = min(training context, 4096)
  int64_t n_batch = 512;   // most rows one decode may hold (scratch is sized for it)
  int n_threads = 0;       // 0 = physical cores
  // Run on this pool (not owned; it must outlive the context) instead of a new one of
  // n_threads: a drafter's context shares the target's, so no second set of threads spins
  // beside the target's between jobs.
  ThreadPool* shared_pool = nullptr;
};

class Context {
 public:
  Context(const Model& model, ContextParams params);

  const Model& model() const { return model_; }
  int64_t n_ctx() const { return kv_.n_ctx(); }
  int64_t n_batch() const { return n_batch_; }
  ThreadPool& pool() { return pool_; }
  KvCache& kv() { return kv_; }

  // Which layer inputs to export for every row of each following decode: indices in
  // [0, n_layer]; index n_layer is the final hidden state before output_norm.
  void set_taps(std::vector<int> layer_inputs);
  const std::vector<int>& taps() const { return taps_; }

  // Runs the batch. Larger batches than n_batch are split. Errors (bad token id, full
  // context, ...) are thrown before any state changes.
  void decode(const Batch& batch);

  // Logits of batch row `row` (it must have been flagged): [n_vocab] f32.
  const float* logits(int64_t row) const;
  // Tap `tap` (index into taps()) of batch row `row` of the last decode: [n_embd] f32.
  const float* tap(int tap, int64_t row) const;

 private:
  void decode_chunk(const Batch& batch, int64_t begin, int64_t end);
  void layer_forward(int64_t l, int64_t n);
  // fn(r0, r1) over row ranges covering [0, n): split across the pool when n is large enough.
  template <class Fn>
  void for_rows(int64_t n, Fn&& fn);
  void validate(const Batch& batch) const;
  void group_by_sequence(int64_t n);
  void attention(int64_t l);

  const Model& model_;
  const Hparams& hp_;
  int64_t n_batch_;
  std::unique_ptr<ThreadPool> own_pool_;  // unless params.shared_pool
  ThreadPool& pool_;
  KvCache kv_;
  std::vector<int> taps_;

  // Scratch sized once for n_batch rows (no allocation in the token loop).
  std::vector<float> x_;      // [n_batch][E] residual stream
  std::vector<float> h_;      // [n_batch][E] normed input of a sublayer
  std::vector<float> q_;      // [n_batch][H*Dh]
  std::vector<float> k_;      // [n_batch][Hkv*Dh]
  std::vector<float> v_;      // [n_batch][Hkv*Dh]
  std::vector<float> attn_;   // [n_batch][H*Dh]
  std::vector<float> gate_;   // [n_batch][F]
  std::vector<float> up_;     // [n_batch][F]
  std::vector<float> rope_cs_;  // [n_batch][2][n_rot]
  std::vector<int32_t> cells_;  // [n_batch] KV cells of this chunk's rows
  std::vector<int32_t> pos_;    // [n_batch]
  std::vector<int32_t> seq_;    // [n_batch]
  // Per sequence of the chunk: its rows and its KV cells in canonical order. Attention runs once
  // per sequence so that a row's cell list never interleaves cells of other sequences: the
  // kernel's online softmax groups cells into fixed tiles, and only a list that is the same
  // prefix-ordered sequence history, whatever else the batch holds, gives bitwise identical sums.
  struct SeqGroup {
    int32_t seq;
    std::vector<int32_t> rows;                 // chunk rows of this sequence
    std::vector<int32_t> cells, cell_pos;      // visible cells, canonical order
    std::vector<uint64_t> cell_seq;
    std::vector<int32_t> row_pos, row_seq;     // [rows] positions and sequence ids
  };
  std::vector<SeqGroup> groups_;
  int64_t n_groups_ = 0;
  std::vector<float> q_gather_, out_gather_;  // [n_batch][H*Dh] rows of one sequence

  // Results of the last decode, indexed by batch row.
  std::vector<int64_t> out_index_;  // [batch rows] row -> index into logits_, -1 = none
  std::vector<float> logits_;       // [n_outputs][n_vocab]
  std::vector<float> tap_data_;     // [n_taps][batch rows][E]
  int64_t batch_rows_ = 0;
};

}  // namespace fulgur
