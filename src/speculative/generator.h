// The generation loop (DESIGN §4), shared by `fulgur run`, `fulgur bench` and `fulgur serve`.
// It serves many sequences at once; each step():
//
//   1. prefills the prompts of newly started sequences (all but their last token, which becomes
//      the first anchor) in one target decode, at most GeneratorParams::prefill_budget tokens per
//      step (oldest start first; the rest follows in later steps, so sequences already decoding
//      keep going while a long prompt is read), and commits them to every drafter;
//   2. asks the drafters, in priority order, for a draft per sequence (the first non-empty one
//      wins, as in llama.cpp), cut to what the sequence may still emit, the free KV cells and
//      the length that promises the most tokens per second, and then (confidence schedule) to
//      the prefix of each draft worth verifying (speculative/scheduler.h);
//   3. decodes [anchor, d1..dk] of every sequence in ONE target batch, logits on every row;
//   4. verifies each sequence (speculative/verifier.h), emits the kept drafts and the next token, removes
//      the rejected rows from the target's KV (seq_rm) and commits the kept rows to every drafter,
//      which rolls back its own memory from that.
//
// With no drafter, or no draft for a sequence, a step is plain decoding of one token: the batch
// holds just the anchor. Greedy output is then byte-identical with and without drafters, because
// the batch path is bitwise identical to token-by-token decoding and the verifier emits the
// target's argmax; sampled output has exactly the target's distribution.
//
// A sequence may be constrained by a grammar (SeqOptions::grammar): its drafts are cut at the
// first token the grammar rejects (checked on a copy of its matcher), and the verifier masks
// every row with what the grammar allows after the drafts before it, so the losslessness above
// holds for the constrained target. The matcher then stands after the kept drafts and the
// emitted token.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "model/batch.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_mask.h"
#include "model/context.h"
#include "sampling/logprobs.h"
#include "sampling/params.h"
#include "sampling/rng.h"
#include "speculative/drafter.h"
#include "speculative/scheduler.h"
#include "speculative/stats.h"
#include "speculative/target_features.h"
#include "speculative/verifier.h"

namespace fulgur {

struct SpecParams {
  int n_min = 0;        // drafts shorter than this are discarded (--spec-n-min)
  float p_min = 0.0f;   // handed to drafters: stop before a token less likely than this (--spec-p-min)
  // How much to draft and verify (speculative/scheduler.h): kFixed drafts up to each drafter's
  // maximum and verifies all of it (--spec-schedule fixed, llama.cpp's behaviour).
  SpecSchedule schedule = SpecSchedule::kAdaptive;
  // This host's step-time table for the target (speculative/calibration.h); empty: measured on the fly.
  StepTable step_table = {};
  // [drafter] sequential temperature scaling of its confidences, or empty (none).
  std::vector<std::vector<float>> confidence_temperatures = {};
};

struct GeneratorParams {
  SamplerParams sampling;
  SpecParams spec;
  // Tokens that end a sequence (emitted, then the sequence stops); empty: none do.
  std::function<bool(int32_t)> is_eog;
  // Seconds on a monotonic clock; empty: the steady clock. The draft-length choice runs on the
  // times measured with it, so a test that checks that choice gives a deterministic clock.
  std::function<double()> clock;
  // Most prompt tokens prefilled in one step, over all sequences; 0: every pending prompt whole.
  int64_t prefill_budget = 0;
  // Every token's bytes, for sequences with a grammar (Generator::set_token_vocab sets it later).
  std::shared_ptr<const TokenVocab> token_vocab;
};

// One sequence's own settings (a server request's); unset fields take the generator's.
struct SeqOptions {
  std::optional<SamplerParams> sampling;
  // Sampling seed; unset: GeneratorParams::sampling.seed + seq.
  std::optional<uint64_t> seed;
  bool draft = true;             // false: plain decoding for this sequence
  int n_max = 0;                 // > 0: at most this many drafted tokens per step
  std::optional<int> n_min;      // SpecParams::n_min for this sequence
  std::optional<float> p_min;    // SpecParams::p_min for this sequence
  // >= 0: record for every emitted token its log-probability and the n most likely tokens'
  // (log-softmax of the target's raw logits at that position: what the model thinks, before the
  // sampler's transforms, like OpenAI's logprobs).
  int n_logprobs = -1;
  // Keep what the sequence's KV and drafter state already hold of the longest common prefix of
  // its previous history and the new prompt (a prompt cache; a recurrent target keeps the
  // longest prefix it can restore, and checkpoints the end of each prompt so the next one can
  // continue it); false: start from nothing.
  bool reuse_prefix = false;
  // Constrained generation: only token sequences this grammar accepts are emitted (the
  // generator's token_vocab must be set); the sequence ends once the grammar is complete and the
  // model picks an end-of-generation token, or when the grammar allows no token at all.
  std::shared_ptr<const Grammar> grammar;
  // The token bytes this sequence's grammar is matched against; unset: the generator's
  // token_vocab. A grammar that must emit some CONTROL tokens (a tool-call format's tags) gets a
  // vocabulary where exactly those carry their text, while other sequences keep the plain one.
  std::shared_ptr<const TokenVocab> token_vocab;
};

// Per-sequence counters since its start().
struct SeqStats {
  int64_t prompt_tokens = 0;
  int64_t reused_tokens = 0;  // prompt tokens whose KV came from the prefix cache
  int64_t steps = 0;          // verify steps (one target row set each)
  int64_t drafts = 0;         // steps that verified a non-empty draft
  int64_t drafted = 0;        // drafted tokens verified
  int64_t accepted = 0;       // drafted tokens kept
  int64_t grammar_cut = 0;    // drafted tokens dropped before verification: the grammar rejects
                              // them or a token before them
};

class Generator {
 public:
  // The drafters (not owned; may be empty) are tried in this order. Throws fulgur::Error before
  // any generation when a drafter needs target taps the target cannot give, or the sampler
  // settings are invalid.
  Generator(Context& target, GeneratorParams params, std::vector<Drafter*> drafters);

  Context& target() { return target_; }
  // The token bytes grammars are matched against (must cover the model's vocabulary's text
  // tokens; ids beyond it are never allowed under a grammar).
  void set_token_vocab(std::shared_ptr<const TokenVocab> vocab) { params_.token_vocab = std::move(vocab); }
  const TokenVocab* token_vocab() const { return params_.token_vocab.get(); }
  const GenerationStats& stats() const { return stats_; }
  bool has_drafters() const { return !drafters_.empty(); }

  // Starts (or restarts) sequence `seq` in [0, kMaxSequences): forgets its KV and drafter state;
  // its prompt (>= 1 token) is prefilled at the next step(); it stops after n_predict tokens or
  // an end-of-generation token. Sampling uses an Rng seeded with params.sampling.seed + seq, so
  // sequence 0 without drafters draws exactly what a plain sampling loop with that seed draws.
  void start(int seq, std::vector<int32_t> prompt, int n_predict);
  // The same with the sequence's own sampling seed (e.g. a request's seed).
  void start(int seq, std::vector<int32_t> prompt, int n_predict, uint64_t seed);
  // The same with the sequence's own settings (validated here: throws fulgur::Error naming the
  // bad field). A sequence may start between any two step()s and joins the next one.
  void start(int seq, std::vector<int32_t> prompt, int n_predict, const SeqOptions& options);
  // The prompt cache's other half (server/prompt_cache.h): seq's prompt and emitted tokens (the
  // target's memory holds a prefix of them: Context::seq_pos_max), and a way to tell the
  // generator that this memory was replaced (Context::load_seq) by that of `tokens`. adopt()
  // resets the drafters of seq and feeds them `tokens` again, which only drafters that read no
  // target features can take (can_adopt()); a following start() with reuse_prefix keeps what
  // the prompt shares with `tokens`.
  const std::vector<int32_t>& history(int seq) const { return seqs_[checked(seq)].history; }
  bool can_adopt() const;
  void adopt(int seq, std::vector<int32_t> tokens);
  // Stops seq now: nothing more is emitted for it. Its KV and drafter state up to what was
  // committed stay for a later start() with reuse_prefix. May be called from on_tokens.
  void cancel(int seq);

  // One draft / verify / accept round over every active sequence. Returns whether any sequence
  // is still active afterwards.
  bool step();
  // step() until every sequence has finished.
  void run();

  bool active(int seq) const { return seqs_[checked(seq)].active; }
  // Tokens emitted so far for seq (its prompt not included).
  const std::vector<int32_t>& output(int seq) const { return seqs_[checked(seq)].out; }
  const SeqStats& seq_stats(int seq) const { return seqs_[checked(seq)].stats; }
  // Whether seq's prompt is still (partly) waiting for its prefill.
  bool prefilling(int seq) const { return seqs_[checked(seq)].needs_prefill; }
  // Inside on_tokens: the log-probabilities of the tokens it is called with (empty unless the
  // sequence asked for them).
  std::span<const TokenLogprobs> last_logprobs(int seq) const {
    const Seq& s = seqs_[checked(seq)];
    return {s.logprobs.data(), s.n_logprobs_ready};
  }

  // Called with each sequence's newly emitted tokens, in order, as soon as they are verified.
  std::function<void(int seq, std::span<const int32_t> tokens)> on_tokens;
  // Called after each verified non-empty draft with the drafter's index, the draft as verified
  // (tokens, confidences) and how many of its tokens were accepted (`fulgur calibrate` fits the
  // confidence temperatures from these).
  std::function<void(int seq, int drafter, const Draft& draft, int n_accepted)> on_verify;

 private:
  struct Seq {
    bool active = false;
    bool needs_prefill = false;
    std::vector<int32_t> history;  // prompt + emitted tokens; back() is the anchor
    std::vector<int32_t> out;      // emitted tokens
    int n_predict = 0;
    int32_t anchor_pos = 0;        // position of history.back(), not yet decoded by the target
    // history[0, n_past) is in the target's KV and committed to every drafter: during the
    // prefill the part read so far, then the anchor's position.
    int32_t n_past = 0;
    int64_t prefill_rows = 0;      // rows of this step's prefill batch
    uint64_t start_tick = 0;       // start() order: older prompts are prefilled first
    SamplerParams sampling;
    bool draft_on = true;
    int n_max = 0, n_min = 0;
    float p_min = 0.0f;
    int n_logprobs = -1;
    bool checkpoint_prompt = false;  // SeqOptions::reuse_prefix: checkpoint the prompt's end
    GrammarMatcher matcher;          // the grammar's state after history (invalid: none)
    std::shared_ptr<const TokenVocab> vocab;  // what matcher reads tokens as (with a grammar)
    // This step's draft was cut where the grammar rejects token grammar_cut_at (drawn from
    // grammar_cut_q when the drafter gave q).
    bool grammar_cut = false;
    size_t grammar_cut_at = 0;
    bool grammar_cut_has_q = false;
    Distribution grammar_cut_q;
    std::vector<TokenLogprobs> logprobs;  // [this step's emitted tokens] when n_logprobs >= 0 (sampling/logprobs.h)
    size_t n_logprobs_ready = 0;
    SeqStats stats;
    Rng rng, draft_rng;
    Draft draft;                   // this step's draft (tokens cut to what is verified)
    int drafter = -1;              // index of the drafter that made it, -1 = none
    int64_t row0 = 0;              // batch row of the anchor in this step's verify batch
    bool decoding() const { return active && !needs_prefill; }
  };

  int checked(int seq) const;
  // Keeps history[0, n_keep) of seq in the target's memory, dropping the rest. Returns how much
  // it could keep: with an attention KV cache, all of it; a recurrent target's memory restores
  // only its snapshots and checkpoint, so the longest of those up to n_keep, or nothing.
  int32_t truncate_target(int seq, int32_t n_keep);
  void prefill();
  void draft_all();
  // Confidence schedule: cuts each sequence's draft to the prefix worth verifying.
  void plan_verification(double draft_seconds);
  void verify_and_commit();
  double now() const;
  void emit(int seq, Seq& s, std::span<const int32_t> tokens);
  // How many of the draft's first n tokens the sequence's grammar accepts in a row.
  size_t grammar_prefix(Seq& s, std::span<const int32_t> tokens, size_t n);

  Context& target_;
  std::vector<DraftRequest> requests_;  // this step's requests to one drafter
  std::vector<int> request_seqs_;       // [requests_] their sequences
  std::vector<Draft> drafts_;           // [requests_] answers, swapped into Seq::draft
  GeneratorParams params_;
  std::vector<Drafter*> drafters_;
  std::vector<FeatureGather> features_;  // [drafters_] the taps each reads, per target decode
  Verifier verifier_;
  DraftScheduler scheduler_;
  std::vector<PlannedDraft> plans_;   // scratch: [kMaxSequences] this step's drafts to plan
  std::vector<int> plan_seqs_;        // scratch: [plans_] their sequences
  int n_vocab_;
  std::vector<Seq> seqs_;             // [kMaxSequences]
  GenerationStats stats_;
  uint64_t start_ticks_ = 0;
  std::vector<int> prefill_order_;    // scratch: sequences waiting for their prefill
  std::vector<float> lp_scratch_;     // scratch: [n_vocab] log-softmax of one row
  Batch batch_;                       // scratch: the step's target batch
  std::vector<const float*> rows_;    // scratch: logits rows of one sequence [1 + k]
  std::vector<int64_t> row_ids_;      // scratch: batch rows committed to drafters
  std::vector<int32_t> committed_;    // scratch: tokens committed to drafters
  GrammarMatcher draft_matcher_;      // scratch: a sequence's matcher walked along its draft
};

}  // namespace fulgur
