#include "speculative/drafters/draft_model.h"

#include <algorithm>

#include "core/error.h"

namespace fulgur {
namespace {

// A recurrent draft model (a Gated-DeltaNet or Mamba2 hybrid) cannot truncate its state like a
// KV cache: it rolls back over the anchor and the n_max - 1 drafts decoded one by one after it,
// so it keeps that many states (decodes that continue a sequence keep the earlier snapshots).
// Further back, sync() decodes the history again. No cost for attention-only drafts.
ContextParams with_rollback(ContextParams c, int n_max) {
  c.n_rollback = std::max(c.n_rollback, n_max + 1);
  return c;
}

}  // namespace

void check_same_vocabulary(const Model& target, const Model& draft) {
  FULGUR_CHECK(draft.n_vocab() == target.n_vocab(), "the draft model's vocabulary has ",
               draft.n_vocab(), " tokens, the target's ", target.n_vocab(),
               "; a draft model must share the target's vocabulary");
  const std::vector<std::string>* t = target.vocab_tokens();
  const std::vector<std::string>* d = draft.vocab_tokens();
  FULGUR_CHECK((t == nullptr) == (d == nullptr), "only the ", t ? "target" : "draft model",
               " has tokenizer.ggml.tokens; cannot check that the draft model shares the target's vocabulary");
  if (t == nullptr) return;
  FULGUR_CHECK(t->size() == d->size(), "the draft model's tokenizer.ggml.tokens has ", d->size(),
               " entries, the target's ", t->size(), "; a draft model must share the target's vocabulary");
  for (size_t i = 0; i < t->size(); ++i) {
    FULGUR_CHECK((*t)[i] == (*d)[i], "token ", i, " is '", (*d)[i], "' in the draft model but '", (*t)[i],
                 "' in the target; a draft model must share the target's vocabulary");
  }
}

DraftModelDrafter::DraftModelDrafter(const Model& target, const Model& draft, DraftModelParams params)
    : params_(params),
      ctx_((check_same_vocabulary(target, draft), draft), with_rollback(params.context, params.n_max)),
      sampler_(static_cast<int>(draft.n_vocab())),
      history_(kMaxSequences),
      in_kv_(kMaxSequences) {
  FULGUR_CHECK(params_.n_max >= 1, "--spec-n-max ", params_.n_max, " must be >= 1");
}

void DraftModelDrafter::reset(int seq) {
  history_.at(static_cast<size_t>(seq)).clear();
  in_kv_.at(static_cast<size_t>(seq)).clear();
  ctx_.seq_rm(seq, 0, -1);
}

void DraftModelDrafter::commit(int seq, std::span<const int32_t> tokens, int32_t pos0,
                               const TargetFeatures&) {
  // Only the history is recorded here; the draft's KV catches up lazily (sync(), from catch_up()
  // and draft()) in one batch, after dropping whatever it holds that the history does not (the
  // rejected drafts): rollback by comparison, so it is exact whatever happened in between.
  std::vector<int32_t>& h = history_.at(static_cast<size_t>(seq));
  h.resize(std::min(h.size(), static_cast<size_t>(std::max(pos0, 0))));
  h.insert(h.end(), tokens.begin(), tokens.end());
}

size_t DraftModelDrafter::sync(int seq, int32_t anchor_pos) {
  std::vector<int32_t>& h = history_.at(static_cast<size_t>(seq));
  std::vector<int32_t>& kv = in_kv_.at(static_cast<size_t>(seq));
  h.resize(std::min(h.size(), static_cast<size_t>(std::max(anchor_pos, 0))));
  FULGUR_CHECK(static_cast<int32_t>(h.size()) == anchor_pos, "draft-model: sequence ", seq,
               " has ", h.size(), " committed tokens, but its anchor is at position ", anchor_pos);
  // Roll the draft's KV back to the longest prefix that still matches the history.
  const size_t common = static_cast<size_t>(
      std::mismatch(kv.begin(), kv.end(), h.begin(), h.end()).first - kv.begin());
  if (common < kv.size()) {
    if (!ctx_.seq_rm(seq, static_cast<int32_t>(common), -1)) {
      // Further back than the recurrent draft's snapshots reach (the history changed before the
      // last drafts): restart the sequence from its empty state and decode the history again.
      ctx_.seq_rm(seq, 0, -1);
      kv.clear();
      ++replays_;
    }
    kv.resize(std::min(kv.size(), common));
  }
  const size_t kept = kv.size();
  // The last committed token stays for draft(), in one batch with the anchor: while drafting
  // every step that is all there is to catch up (the kept drafts were decoded as drafts), and
  // a separate pass for it would read the draft's weights once more.
  if (h.size() < kept + 2) return kept;
  const size_t end = h.size() - 1;
  batch_.clear();
  for (size_t i = kept; i < end; ++i) batch_.add(h[i], static_cast<int32_t>(i), seq, false);
  ctx_.decode(batch_);
  kv.insert(kv.end(), h.begin() + static_cast<std::ptrdiff_t>(kept), h.begin() + static_cast<std::ptrdiff_t>(end));
  return end;
}

void DraftModelDrafter::catch_up(std::span<const DraftRequest> requests) {
  for (const DraftRequest& req : requests) sync(req.seq, req.anchor_pos);
}

void DraftModelDrafter::draft(const DraftRequest& req, Draft& out) {
  const int seq = req.seq;
  std::vector<int32_t>& h = history_.at(static_cast<size_t>(seq));
  std::vector<int32_t>& kv = in_kv_.at(static_cast<size_t>(seq));
  const size_t from = sync(seq, req.anchor_pos);
  batch_.clear();
  for (size_t i = from; i < h.size(); ++i) batch_.add(h[i], static_cast<int32_t>(i), seq, false);
  batch_.add(req.anchor, req.anchor_pos, seq, true);
  ctx_.decode(batch_);
  kv.insert(kv.end(), h.begin() + static_cast<std::ptrdiff_t>(from), h.end());
  kv.push_back(req.anchor);

  // Penalties read the history with the drafts appended, exactly as the target's sampler will.
  const bool penalties = sampler_.sampler(req).params().penalties_active();
  if (penalties) {
    hist_scratch_.assign(h.begin(), h.end());
    hist_scratch_.push_back(req.anchor);
  }
  const int n_max = std::min(req.n_max, params_.n_max);
  int64_t row = batch_.size() - 1;
  for (int i = 0; i < n_max; ++i) {
    if (!sampler_.pick(ctx_.logits(row), penalties ? std::span<const int32_t>(hist_scratch_)
                                                   : std::span<const int32_t>(),
                       req, out)) {
      break;
    }
    const int32_t tok = out.tokens.back();
    if (i + 1 == n_max) break;
    batch_.clear();
    batch_.add(tok, req.anchor_pos + 1 + i, seq, true);
    ctx_.decode(batch_);
    kv.push_back(tok);
    if (penalties) hist_scratch_.push_back(tok);
    row = 0;
  }
}

}  // namespace fulgur
