// A Context runs a Model (DESIGN §3): decode(batch) over its memory, logits and final hidden
// states for flagged rows, the hidden-state taps speculative drafters read, and the memory
// operations the speculative loop uses to roll back (seq_rm and friends; nothing above model/
// touches the KV cache itself).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/thread_pool.h"
#include "model/batch.h"
#include "model/model.h"

namespace fulgur {

struct ForwardPass;
struct SeqState;

struct ContextParams {
  int64_t n_ctx = 0;       // KV cells; 0 = min(training context, 4096)
  int64_t n_batch = 512;   // most rows one decode may hold (scratch is sized for it)
  int n_threads = 0;       // 0 = physical cores
  // Run on this pool (not owned; it must outlive the context) instead of a new one of
  // n_threads: a drafter's context shares the target's, so no second set of threads spins
  // beside the target's between jobs.
  ThreadPool* shared_pool = nullptr;
  // Models with recurrent layers only (model/recurrent_state.h): sequences that may hold state
  // at once, and how many rows back from the end of each decode seq_rm can roll back to (the
  // longest verification batch: 1 + the most tokens any drafter drafts).
  int n_seq_max = 4;
  int n_rollback = 0;
};

// The tap of the final norm's output in a model of n_layer layers (Context::set_taps): what an
// MTP block that pairs with the normed hidden state reads (ModelDesc::pairs_normed_hidden).
inline constexpr int final_norm_tap(int64_t n_layer) { return static_cast<int>(n_layer) + 1; }

class Context {
 public:
  Context(const Model& model, ContextParams params);
  ~Context();

  const Model& model() const { return model_; }
  int64_t n_ctx() const;
  int64_t n_batch() const { return n_batch_; }
  ThreadPool& pool() { return pool_; }

  // Which layer inputs to export for every row of each following decode: indices in
  // [0, n_layer + 1]; index n_layer is the final hidden state before output_norm, and
  // n_layer + 1 (final_norm_tap) that state after it, for every row, flagged or not.
  void set_taps(std::vector<int> layer_inputs);
  const std::vector<int>& taps() const { return taps_; }

  // Runs the batch. Larger batches than n_batch are split. Errors (bad token id, full
  // context, ...) are thrown before any state changes.
  void decode(const Batch& batch);

  // Logits of batch row `row` (it must have been flagged): [n_vocab] f32 (the output head's rows).
  const float* logits(int64_t row) const;
  // The final-normed hidden state of a flagged row (what the output head multiplies): [E] f32.
  const float* hidden(int64_t row) const;
  // ModelWeights::hidden_proj · hidden(row) of a flagged row: [hidden_proj rows] f32. Only for
  // models with that projection (the Gemma 4 assistant's post-projection to its target's width).
  const float* projected_hidden(int64_t row) const;
  // Distinct experts the last decode ran per MoE layer, on average (0 without MoE layers):
  // how many experts' weights a batch of rows reads.
  double experts_per_moe_layer() const;
  // Tap `tap` (index into taps()) of batch row `row` of the last decode: [n_embd] f32.
  const float* tap(int tap, int64_t row) const;

  // KV injection (models with an injection input: `dflash`): features [n][m*E_target] (tapped
  // target rows) -> c = RMSNorm(fc · features) -> every attention layer's K and V of (pos[i],
  // seq[i]) computed from c as the layer would from its input, replacing what the cache held
  // there. No layer runs; no logits.
  void inject_kv(const float* features, const int32_t* pos, const int32_t* seq, int64_t n);

  // Attend to another context's cache (read only): the layers whose AttentionDesc::kv_external
  // is set read layer kv_layer's K and V there, over the cells that context holds for each
  // row's sequence. Checks that each such layer's cache exists there with the same KV heads,
  // head dim and window; null detaches. `other` must outlive this use; a decode of a model with
  // such layers and no source is an error.
  void read_kv_from(const Context* other);

  // Memory (DESIGN §3). seq_rm removes sequence `seq`'s positions p0 <= pos < p1 (p1 < 0: no
  // upper bound; seq < 0: every sequence) and returns whether the memory could; when it cannot,
  // nothing changed. Attention memory always can; a recurrent layer's state only rolls back
  // to a position the snapshots of the last decode cover (ContextParams::n_rollback), to 0, or
  // not at all (can_rm says which before trying).
  bool can_rm(int seq, int32_t p0, int32_t p1) const;
  // Keeps at least `rows` states back from the end of each decode (ContextParams::n_rollback),
  // so that seq_rm into a verification batch of that many rows succeeds. Growing it is only
  // possible while no sequence holds recurrent state (before the first decode).
  void reserve_rollback(int rows);
  bool seq_rm(int seq, int32_t p0, int32_t p1);
  // Saves seq's recurrent state as it is now, so that seq_rm back to its current end succeeds
  // later however far back that is (one checkpoint per sequence; model/recurrent_state.h). A
  // no-op on attention-only models, whose KV rolls back anywhere.
  void checkpoint(int seq);
  // Sequences that may hold recurrent state at once (ContextParams::n_seq_max).
  int n_seq_max() const { return n_seq_max_; }
  // Sequence dst also holds src's positions p0 <= pos < p1 (shared, not copied).
  void seq_cp(int src, int dst, int32_t p0, int32_t p1);
  // Drops every sequence except seq.
  void seq_keep(int seq);
  // Largest position sequence seq holds, -1 when none.
  int32_t seq_pos_max(int seq) const;
  // Rows a decode may still add (free KV cells).
  int64_t n_free_cells() const;
  // Bytes of K and V the context holds (both caches: a sliding-window layer's is bounded by its
  // window, not by n_ctx).
  int64_t kv_bytes() const;
  void clear();

  // Sequence seq's memory copied out (model/seq_state.h), and copied back into a sequence
  // (replacing what it held): the server's host-memory prompt cache. load_seq throws, changing
  // nothing, when the context lacks the cells or recurrent slot the state needs.
  SeqState save_seq(int seq);
  void load_seq(int seq, const SeqState& state);

 private:
  void validate(const Batch& batch) const;
  void decode_chunk(const Batch& batch, int64_t begin, int64_t end);
  // Per-chunk setup: claims KV cells for the chunk's (pos, seq) rows, computes their RoPE table
  // and, when the chunk will attend, groups them by sequence with their visible cells.
  ForwardPass begin_chunk(const int32_t* pos, const int32_t* seq, int64_t n, bool attends);
  void group_by_sequence(int64_t n);
  void layer(const ForwardPass& p, int64_t l);
  // x_ [n][E] of a chunk from its tokens (and aux rows, through the input matrix) or embd rows.
  void input_rows(const Batch& batch, int64_t begin, int64_t n);
  // y [n][E] = the final norm (ModelDesc::output_norm, with output_norm's gain) of x [n][E].
  void final_norm(const float* x, float* y, int64_t n) const;

  const Model& model_;
  const ModelDesc& desc_;
  int64_t n_batch_;
  std::unique_ptr<ThreadPool> own_pool_;  // unless params.shared_pool
  ThreadPool& pool_;
  int n_seq_max_;
  struct Memory;              // the KV cache, recurrent state and layer scratch (context.cpp)
  std::unique_ptr<Memory> m_;
  std::vector<int> taps_;

  // Scratch sized once for n_batch rows (no allocation in the token loop).
  std::vector<float> x_;        // [n_batch][E] residual stream
  std::vector<float> h_;        // [n_batch][E] normed input of a sublayer ([n_batch][2E] with eagle3_input)
  std::vector<float> y_;        // [n_batch][E] output of a sublayer
  std::vector<float> in_;       // [n_batch][input width] input parts, when the model has them
  std::vector<float> rope_cs_[2];  // per RoPE table (layers.h kMaxRopeTables): [n_batch][2][n_rot]
  std::vector<int32_t> cells_[2]; // per KV cache (layers.h kKvCaches): [n_batch] this chunk's cells
  std::vector<int32_t> pos_;    // [n_batch]
  std::vector<int32_t> seq_;    // [n_batch]
  int64_t n_groups_ = 0;        // sequences in this chunk (Memory::groups)

  // Results of the last decode, indexed by batch row.
  std::vector<int64_t> out_index_;  // [batch rows] row -> index into logits_, -1 = none
  std::vector<float> logits_;       // [n_outputs][n_vocab]
  std::vector<float> hidden_;       // [n_outputs][E] final-normed rows
  std::vector<float> projected_;    // [n_outputs][hidden_proj rows] when the model has hidden_proj
  const Context* kv_source_ = nullptr;  // read_kv_from
  std::vector<float> tap_data_;     // [n_taps][batch rows][E]
  int64_t batch_rows_ = 0;
  const int32_t* chunk_tokens_ = nullptr;  // [chunk rows] the chunk's tokens (null: embd rows only)
};

}  // namespace fulgur
