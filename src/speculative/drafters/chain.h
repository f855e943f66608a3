// The chain drafter: a small head (a model of its own, in a context of its own, with its own KV)
// fed one row per committed position, pairing each token with target features, and drafting a
// chain that feeds the head's own hidden state back. Three heads configure it (ChainHead):
//  * MTP (llama.cpp's draft-mtp; drafters/mtp.h): the target's own NextN block, paired with the
//    target's final hidden state (pre-norm, or after output_norm for Nemotron-H's block);
//  * EAGLE-3 (llama.cpp's draft-eagle3; drafters/eagle3.h): a one-layer draft fed three target
//    taps, with a reduced vocabulary mapped to target ids by d2t;
//  * the Gemma 4 assistant (llama.cpp's draft-mtp with a gemma4-assistant -md;
//    drafters/gemma4_assistant.h): a head with no KV of its own (ChainHead::target_kv), see
//    below.
//
// Pairing, as llama.cpp's driver does it for MTP: the row at position q holds (token x_q, the
// features of the previous position q - 1; zeros at q = 0) and predicts x_{q+1}. The head's KV
// holds one such row per committed position. A draft for the anchor x_P at position P runs the
// seed row (x_P, features of P - 1) and then chains: the row (d_i, h') at P + i, where h' is the
// head's own output of the row before (pre-norm, or after its final norm with
// ChainHead::chain_normed), gives d_{i+1}. The chain rows leave the head's
// KV after drafting; after verification the committed rows get their real pairs (the target's
// features of the verification batch), whichever drafter made that step's draft (so with
// `--spec ngram,draft-mtp` the head's state stays paired on n-gram steps). EAGLE-3 sits one
// position earlier (its row at P holds (x_{P+1}, g_P), so x_0 has none: ChainHead::shift) and
// feeds its hidden state in as the row itself (ChainHead::chain_as_embd) instead of through the
// input matrix.
//
// A head that reads the target's KV (ChainHead::target_kv, the Gemma 4 assistant) keeps no
// rows: commit() only remembers the target's features of the last committed position, and a
// draft runs the seed row (anchor, those features) and every chain row (d_i, the head's
// projected hidden state of the row before: ChainFeed::kProjectedAux) at the anchor's position,
// each attending to what the target context holds for the sequence, i.e. the committed
// positions before the anchor (the loop rolls the target back before asking for a draft), as
// llama.cpp's driver does for an assistant sharing its target's memory.
//
// Each drafted token is drawn from the head's distribution under the target's sampler settings
// (greedy: its top token), and that distribution is q for the verifier; p_min cuts before a
// token whose probability is below it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/context.h"
#include "model/model.h"
#include "speculative/drafter.h"
#include "speculative/drafters/draft_sampling.h"

namespace fulgur {

struct ChainParams {
  int n_max = 3;          // most tokens per draft (--spec-n-max)
  ContextParams context;  // the head's context (n_ctx 0 = like the target's training context)
  bool pack = true;       // repack the block's matrices at load, as the target's (ModelOptions::pack)
};

// What a chain row carries from the row that drafted its token.
enum class ChainFeed : uint8_t {
  kPreNormAux,    // the head's pre-norm output, as the row's aux features (MTP)
  kPreNormEmbd,   // the head's pre-norm output, as the row itself (Batch::embd; EAGLE-3)
  kProjectedAux,  // Context::projected_hidden of the head, as aux features (Gemma 4 assistant)
};

// What a chain drafter runs and how it pairs tokens with the target's features.
struct ChainHead {
  std::string name;            // the drafter's name (llama.cpp's --spec-type)
  std::unique_ptr<Model> model;
  std::vector<int> taps;       // target taps whose rows, side by side, are a token's features
  // Chain rows feed back the head's final-norm output (tap final_norm_tap) instead of its
  // pre-norm hidden state (an MTP block that pairs with normed rows: Nemotron-H's).
  bool chain_normed = false;
  int32_t shift = 0;           // a token at position q has its row at q - shift
  ChainFeed feed = ChainFeed::kPreNormAux;
  std::vector<int32_t> d2t;    // [head vocabulary] target ids; empty = the same vocabulary
  // The target's context, when the head's layers attend to its KV (Context::read_kv_from)
  // instead of keeping their own; read only, it must outlive the drafter.
  const Context* target_kv = nullptr;
};

class ChainDrafter : public Drafter {
 public:
  // Throws fulgur::Error when n_max < 1.
  ChainDrafter(const Model& target, ChainParams params, ChainHead head);
  ~ChainDrafter() override;

  std::string name() const override { return name_; }
  // ChainHead::taps.
  std::vector<int> required_taps() const override { return taps_; }
  int max_draft() const override { return params_.n_max; }
  void reset(int seq) override;
  void commit(int seq, std::span<const int32_t> tokens, int32_t pos0,
              const TargetFeatures& features) override;
  void catch_up(std::span<const DraftRequest> requests) override;
  void draft(const DraftRequest& request, Draft& out) override;
  // The seed rows of every sequence in one head decode, then each chain step in one decode.
  void draft_many(std::span<const DraftRequest> requests, std::span<Draft> out) override;

  const Model& model() const { return *model_; }
  Context& context() { return *ctx_; }

 private:
  struct Seq {
    int32_t end = 0;              // committed positions [0, end)
    int32_t kv_end = 0;           // head KV rows at positions [0, kv_end)
    int32_t seed = -1;            // token of the row at end when kv_end == end + 1 (a draft's seed)
    std::vector<int32_t> tokens;  // [m] committed tokens at kv_end.. not yet in the head's KV
    std::vector<float> h;         // [m][F] their paired features
    std::vector<float> last_h;    // [F] the target's features at end - 1 (zeros at end 0)
  };
  Seq& state(int seq);
  // Adds seq's rows not yet in the head's KV to batch_ (no output).
  void add_pending(int seq, Seq& s);
  // A row of token at token position pos (its row at pos - shift) with features h [F].
  void add_row(int32_t token, int32_t pos, int seq, const float* h, bool output);
  // A chain row of token at position pos, fed from the head's output row `from` (ChainFeed).
  void add_chain_row(int32_t token, int32_t pos, int seq, int64_t from);
  // The head's logits of a row in target ids (d2t scattered, -inf elsewhere).
  const float* target_logits(int64_t row);
  // Drops seq's head KV from position p on.
  void truncate(int seq, Seq& s, int32_t p);

  ChainParams params_;
  std::string name_;        // ChainHead::name
  std::vector<int> taps_;   // ChainHead::taps
  int32_t shift_;           // ChainHead::shift
  ChainFeed feed_;          // ChainHead::feed
  bool own_kv_;             // !ChainHead::target_kv: the head keeps a row per committed position
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
