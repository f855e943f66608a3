// The drafter interface (DESIGN §4). A drafter proposes tokens that the target then verifies in
// one batch; it never decides what is emitted, so any drafter (good, bad, or adversarial) keeps
// generation lossless. One drafter object serves every sequence of a generation loop.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sampling/distribution.h"
#include "sampling/params.h"

namespace fulgur {

class Rng;

// What the target computed for rows a drafter is told about (DESIGN §4): row i holds the taps the
// drafter named in required_taps(), side by side in that order, of the i-th committed token. The
// generator fills it once per target decode; a drafter that names no taps gets width 0.
struct TargetFeatures {
  const float* data = nullptr;  // [rows][width] f32
  int64_t rows = 0;
  int64_t width = 0;            // required_taps().size() x the target's n_embd
  const float* row(int64_t i) const { return data + i * width; }
};

// What the loop asks for one sequence.
struct DraftRequest {
  int seq = 0;
  int32_t anchor = 0;      // last committed token; not yet decoded by the target
  int32_t anchor_pos = 0;  // its position
  int n_max = 0;           // at most this many drafted tokens (>= 1)
  float p_min = 0.0f;      // stop before a token whose draft probability / confidence is below
  const SamplerParams* sampling = nullptr;  // the target's sampler settings (greedy or not)
  Rng* rng = nullptr;      // for drafters that sample
};

// The drafter's answer: tokens d1..dk, and for drafters that sample, the distribution q_i each
// d_i was really drawn from (the verifier's rejection test needs it; empty = verify by exact
// match against the target's own sample). Optional per-token confidences (DSpark).
struct Draft {
  std::vector<int32_t> tokens;
  std::vector<Distribution> q;     // [tokens.size()] or empty
  std::vector<float> confidence;   // [tokens.size()] or empty
  void clear() {
    tokens.clear();
    confidence.clear();
    // Keep the q buffers ([n_vocab] each) for the next draft instead of freeing them: a drafter
    // that fills q through add_q() then allocates nothing in the token loop.
    while (!q.empty()) {
      spare_q_.push_back(std::move(q.back()));
      q.pop_back();
    }
  }
  // Appends an empty distribution over n_vocab to q, reusing a buffer from an earlier draft.
  Distribution& add_q(int n_vocab) {
    if (spare_q_.empty()) {
      q.emplace_back(n_vocab);
    } else {
      q.push_back(std::move(spare_q_.back()));
      spare_q_.pop_back();
      q.back().reset(n_vocab);
    }
    return q.back();
  }

 private:
  std::vector<Distribution> spare_q_;  // cleared q buffers awaiting reuse
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  virtual std::string name() const = 0;

  // Target layer inputs (0..n_layer; n_layer = the final pre-norm hidden state, n_layer + 1 the
  // final-normed one: model/context.h final_norm_tap) whose rows this
  // drafter reads in commit()'s features, in this order (empty: none). A target that cannot give
  // them is refused before generation.
  virtual std::vector<int> required_taps() const { return {}; }

  // The most tokens one draft can hold. The loop never asks for more, and sizes the target's
  // rollback from it: a recurrent target keeps the state after each row of a verification
  // batch of up to 1 + max_draft() rows (model/recurrent_state.h).
  virtual int max_draft() const = 0;

  // A sequence starts (or restarts) with no history.
  virtual void reset(int seq) = 0;

  // Tokens tokens[i] at positions pos0 + i became part of sequence `seq`'s committed history;
  // features.row(i) is what the target computed for tokens[i] (features.rows == tokens.size()).
  // Called after the prompt's prefill and after every verify step with the anchor and the
  // accepted drafts.
  virtual void commit(int seq, std::span<const int32_t> tokens, int32_t pos0,
                      const TargetFeatures& features) = 0;

  // The target verified the first n_verified (>= 1) tokens of this drafter's last draft for
  // `seq` (the loop may verify fewer than were proposed: n_max, the draft-length schedule) and
  // accepted n_accepted of them. Called once per verify step that verified a draft of this
  // drafter, before that step's commit(); never for a draft that was dropped unverified
  // (llama.cpp's accept()). Default: nothing.
  virtual void on_verified(int seq, int n_verified, int n_accepted) {
    (void)seq;
    (void)n_verified;
    (void)n_accepted;
  }

  // The loop will not ask this drafter for drafts for a while (true: the scheduler judges its
  // drafts losing and only probes it now and then), or will again (false). A drafter may then
  // skip work it needs only to draft well (a block drafter keeps just the recent rows of the
  // committed features instead of injecting them all), as long as whatever it drafts when asked
  // is still a valid draft: what is emitted never depends on it. Default: nothing.
  virtual void set_resting(bool resting) { (void)resting; }

  // Work that commit() deferred, done before these sequences are asked for drafts (draft and
  // draft_many still do it themselves when it was not called). The loop times it as commit
  // work, not drafting: a drafter that catches up in one batch after steps without drafts
  // would otherwise look dear to draft with, to the draft-length choice. Default: nothing.
  virtual void catch_up(std::span<const DraftRequest> requests) { (void)requests; }

  // Proposes up to request.n_max tokens to follow request.anchor. May propose none.
  virtual void draft(const DraftRequest& request, Draft& out) = 0;

  // Drafts for several sequences (out.size() == requests.size()). Drafters that can put many
  // sequences into one forward pass (block drafters) override it.
  virtual void draft_many(std::span<const DraftRequest> requests, std::span<Draft> out) {
    for (size_t i = 0; i < requests.size(); ++i) draft(requests[i], out[i]);
  }
};

}  // namespace fulgur
