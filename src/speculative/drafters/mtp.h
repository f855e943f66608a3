// Multi-token prediction (llama.cpp's draft-mtp; reference/llamacpp-speculative.md §5): the MTP
// (NextN) block stored in the target's own GGUF drafts for it. The block runs as a model of its
// own (ModelOptions::nextn: eh_proj over [enorm(embedding) ; hnorm(hidden)], the block's gated
// attention with its own KV, its FFN, shared_head_norm and the target's output head) in a
// context of its own, on the target's weights file.
//
// Pairing, as llama.cpp's driver does it: the MTP row at position q holds (token x_q, the
// target's pre-norm hidden state h_{q-1} at the previous position; zeros at q = 0) and predicts
// x_{q+1}. The MTP KV holds one such row per committed position. A draft for the anchor x_P at
// position P runs the seed row (x_P, h_{P-1}) and then chains: the row (d_i, h') at P + i, where
// h' is the MTP block's own pre-norm output of the row before, gives d_{i+1}. The chain rows
// leave the MTP KV after drafting; after verification the committed rows get their real pairs
// (the target's hidden states of the verification batch), whichever drafter made that step's
// draft (so with `--spec ngram,draft-mtp` the MTP state stays paired on n-gram steps).
//
// Each drafted token is drawn from the head's distribution under the target's sampler settings
// (greedy: its top token), and that distribution is q for the verifier; p_min cuts before a
// token whose probability is below it.
//
// The same chain runs EAGLE-3 drafts (speculative/drafters/eagle3.h), which differ in three things
// only, given by a ChainHead: the features paired with a token are three target taps (the head's
// fc turns them into its input), a row sits one position earlier (EAGLE-3's row at P holds
// (x_{P+1}, g_P), so x_0 has none), and a chain row feeds the head's own hidden state in as the
// row itself (embd rows beside the tokens) instead of through the input matrix; its reduced
// vocabulary is mapped to target ids by d2t.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/context.h"
#include "speculative/drafter.h"
#include "speculative/drafters/draft_sampling.h"

namespace fulgur {

struct MtpParams {
  int n_max = 3;          // most tokens per draft (--spec-n-max)
  ContextParams context;  // the MTP block's context (n_ctx 0 = like the target's training context)
  bool pack = true;       // repack the block's matrices at load, as the target's (ModelOptions::pack)
};

// What a chain drafter runs and how it pairs tokens with the target's features.
struct ChainHead {
  std::unique_ptr<Model> model;
  std::vector<int> taps;       // target taps whose rows, side by side, are a token's features
  int32_t shift = 0;           // a token at position q has its row at q - shift
  bool chain_as_embd = false;  // chain rows: the hidden state is the row (Batch::embd), not aux
  std::vector<int32_t> d2t;    // [head vocabulary] target ids; empty = the same vocabulary
};

class MtpDrafter : public Drafter {
 public:
  // Loads the MTP block of the target's GGUF (the target must have been loaded from a file).
  // Throws fulgur::Error naming the file when it has no MTP block, or n_max < 1.
  MtpDrafter(const Model& target, MtpParams params);
  ~MtpDrafter() override;

  std::string name() const override { return "draft-mtp"; }
  // The target's final pre-norm hidden state of every row (tap n_layer).
  std::vector<int> required_taps() const override;
  int max_draft() const override { return params_.n_max; }
  void reset(int seq) override;
  void commit(int seq, std::span<const int32_t> tokens, int32_t pos0, const Context& target,
              std::span<const int64_t> rows) override;
  void catch_up(std::span<const DraftRequest> requests) override;
  void draft(const DraftRequest& request, Draft& out) override;
  // The seed rows of every sequence in one MTP decode, then each chain step in one decode.
  void draft_many(std::span<const DraftRequest> requests, std::span<Draft> out) override;

  const Model& model() const { return *model_; }
  Context& context() { return *ctx_; }

 protected:
  MtpDrafter(const Model& target, MtpParams params, ChainHead head);

 private:
  struct Seq {
    int32_t end = 0;              // committed positions [0, end)
    int32_t kv_end = 0;           // MTP KV rows at positions [0, kv_end)
    int32_t seed = -1;            // token of the row at end when kv_end == end + 1 (a draft's seed)
    std::vector<int32_t> tokens;  // [m] committed tokens at kv_end.. not yet in the MTP KV
    std::vector<float> h;         // [m][F] their paired features
    std::vector<float> last_h;    // [F] the target's features at end - 1 (zeros at end 0)
  };
  Seq& state(int seq);
  // Adds seq's rows not yet in the MTP KV to batch_ (no output).
  void add_pending(int seq, Seq& s);
  // A row of token at token position pos (its row at pos - shift) with features h [F].
  void add_row(int32_t token, int32_t pos, int seq, const float* h, bool output);
  // A chain row: the head's own hidden state h [E_head] of the row before.
  void add_chain_row(int32_t token, int32_t pos, int seq, const float* h);
  // The head's logits of a row in target ids (d2t scattered, -inf elsewhere).
  const float* target_logits(int64_t row);
  // Drops seq's MTP KV from position p on.
  void truncate(int seq, Seq& s, int32_t p);

  MtpParams params_;
  std::vector<int> taps_;   // ChainHead::taps
  int32_t shift_;           // ChainHead::shift
  bool chain_as_embd_;      // ChainHead::chain_as_embd
  std::vector<int32_t> d2t_;
  int64_t n_feat_;          // F: floats of a token's features (taps x the target's width)
  int64_t n_embd_head_;     // the head's width
  std::vector<float> full_;  // [target vocabulary] target_logits' buffer
  std::unique_ptr<Model> model_;
  std::unique_ptr<Context> ctx_;
  DraftSampler sampler_;
  std::vector<Seq> seqs_;             // [kMaxSequences]
  Batch batch_;
  std::vector<int64_t> rows_;         // [requests] this step's output row per request
  std::vector<uint8_t> live_;         // [requests] still drafting
};

}  // namespace fulgur
