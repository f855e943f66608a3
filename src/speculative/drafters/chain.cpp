#include "speculative/drafters/chain.h"

#include <algorithm>

#include "core/error.h"

namespace fulgur {
namespace {

// Committed rows a draft takes into its own first head decode; catch_up() decodes a longer
// backlog (steps on which another drafter, or none, drafted) ahead of the timed draft.
constexpr size_t kFoldRows = 8;
// Committed rows held back at most (a long prompt goes into the head's KV as it is committed).
constexpr size_t kMaxPending = 256;

}  // namespace

ChainDrafter::ChainDrafter(const Model& target, ChainParams params, ChainHead head)
    : params_(params),
      name_(std::move(head.name)),
      taps_(std::move(head.taps)),
      shift_(head.shift),
      feed_(head.feed),
      own_kv_(head.target_kv == nullptr),
      d2t_(std::move(head.d2t)),
      n_feat_(static_cast<int64_t>(taps_.size()) * target.n_embd()),
      n_embd_head_(head.model->n_embd()),
      full_(static_cast<size_t>(target.n_vocab())),
      model_(std::move(head.model)),
      ctx_(std::make_unique<Context>(*model_, params.context)),
      sampler_(static_cast<int>(target.n_vocab())),
      seqs_(kMaxSequences) {
  FULGUR_CHECK(params_.n_max >= 1, "--spec-n-max ", params_.n_max, " must be >= 1");
  // The head's own output of every row (pre-norm, or normed): the hidden state a chain feeds back
  // (a projected-aux head feeds back its projection instead).
  const int64_t n_layer = model_->n_layer();
  if (feed_ != ChainFeed::kProjectedAux) {
    ctx_->set_taps({head.chain_normed ? final_norm_tap(n_layer) : static_cast<int>(n_layer)});
  }
  FULGUR_CHECK(feed_ != ChainFeed::kProjectedAux || model_->n_projected_hidden() == n_feat_, name_, ": ",
               model_->where(), " projects its hidden state to ", model_->n_projected_hidden(),
               " values, its input takes ", n_feat_);
  ctx_->read_kv_from(head.target_kv);
  for (Seq& s : seqs_) s.last_h.assign(static_cast<size_t>(n_feat_), 0.0f);
}

ChainDrafter::~ChainDrafter() = default;

ChainDrafter::Seq& ChainDrafter::state(int seq) {
  FULGUR_CHECK(seq >= 0 && seq < kMaxSequences, name_, ": sequence id ", seq, " is outside [0, ",
               kMaxSequences, ")");
  return seqs_[static_cast<size_t>(seq)];
}

void ChainDrafter::reset(int seq) {
  Seq& s = state(seq);
  s.end = s.kv_end = 0;
  s.seed = -1;
  s.tokens.clear();
  s.h.clear();
  std::fill(s.last_h.begin(), s.last_h.end(), 0.0f);
  ctx_->seq_rm(seq, 0, -1);
}

void ChainDrafter::truncate(int seq, Seq& s, int32_t p) {
  ctx_->seq_rm(seq, std::max(0, p - shift_), -1);
  s.kv_end = std::min(s.kv_end, p);
  s.seed = -1;
}

void ChainDrafter::add_row(int32_t token, int32_t pos, int seq, const float* h, bool output) {
  batch_.add(token, pos - shift_, seq, output);
  batch_.aux.insert(batch_.aux.end(), h, h + n_feat_);
}

void ChainDrafter::add_chain_row(int32_t token, int32_t pos, int seq, int64_t from) {
  switch (feed_) {
    case ChainFeed::kPreNormAux: return add_row(token, pos, seq, ctx_->tap(0, from), true);
    case ChainFeed::kProjectedAux: return add_row(token, pos, seq, ctx_->projected_hidden(from), true);
    case ChainFeed::kPreNormEmbd: {
      const float* h = ctx_->tap(0, from);
      batch_.add(token, pos - shift_, seq, true);
      batch_.embd.insert(batch_.embd.end(), h, h + n_embd_head_);
      return;
    }
  }
}

const float* ChainDrafter::target_logits(int64_t row) {
  return in_target_ids(d2t_, ctx_->logits(row), full_);
}

void ChainDrafter::add_pending(int seq, Seq& s) {
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    add_row(s.tokens[i], s.kv_end + static_cast<int32_t>(i), seq, s.h.data() + i * n_feat_, false);
  }
  s.kv_end += static_cast<int32_t>(s.tokens.size());
  s.tokens.clear();
  s.h.clear();
}

void ChainDrafter::commit(int seq, std::span<const int32_t> tokens, int32_t pos0,
                          const TargetFeatures& features) {
  Seq& s = state(seq);
  FULGUR_CHECK(features.rows == static_cast<int64_t>(tokens.size()) && features.width == n_feat_,
               name_, ": commit of ", tokens.size(), " tokens with ", features.rows,
               " feature rows of ", features.width, " floats (", n_feat_, " expected)");
  if (tokens.empty()) return;
  if (pos0 == 0 && s.end > 0) reset(seq);
  // A head without KV of its own keeps only the last row's features: any history fits it.
  FULGUR_CHECK(pos0 == s.end || !own_kv_, name_, ": sequence ", seq, " commits position ", pos0,
               " but its history ends at ", s.end, " (the head pairs each token with the features "
               "of the position before it, so a history continues in order)");
  for (size_t i = 0; own_kv_ && i < tokens.size(); ++i) {
    const int32_t q = pos0 + static_cast<int32_t>(i);
    if (q < shift_) {  // no features before it (EAGLE-3's x_0): no row
      s.kv_end = std::max(s.kv_end, q + 1);
      continue;
    }
    const float* h = i > 0 ? features.row(static_cast<int64_t>(i) - 1) : s.last_h.data();
    if (q < s.kv_end) {
      // The row a draft wrote as its seed holds exactly this pair when the token is the anchor.
      if (s.seed == tokens[i]) continue;
      truncate(seq, s, q);
    }
    s.tokens.push_back(tokens[i]);
    s.h.insert(s.h.end(), h, h + n_feat_);
  }
  s.seed = -1;
  const float* last = features.row(features.rows - 1);
  std::copy(last, last + n_feat_, s.last_h.begin());
  s.end = pos0 + static_cast<int32_t>(tokens.size());
  if (s.tokens.size() > kMaxPending) {
    batch_.clear();
    add_pending(seq, s);
    ctx_->decode(batch_);
  }
}

void ChainDrafter::catch_up(std::span<const DraftRequest> requests) {
  batch_.clear();
  for (const DraftRequest& req : requests) {
    Seq& s = state(req.seq);
    if (s.tokens.size() > kFoldRows) add_pending(req.seq, s);
  }
  if (batch_.size() > 0) ctx_->decode(batch_);
}

void ChainDrafter::draft(const DraftRequest& request, Draft& out) { draft_many({&request, 1}, {&out, 1}); }

void ChainDrafter::draft_many(std::span<const DraftRequest> requests, std::span<Draft> out) {
  FULGUR_CHECK(requests.size() == out.size(), name_, ": ", requests.size(), " requests but ",
               out.size(), " outputs");
  const size_t n = requests.size();
  // The seed rows (anchor, the target's features before it), after each sequence's committed
  // rows not yet in the head's KV.
  batch_.clear();
  rows_.assign(n, 0);
  live_.assign(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const DraftRequest& req = requests[i];
    Seq& s = state(req.seq);
    FULGUR_CHECK(req.anchor_pos == s.end, name_, ": sequence ", req.seq, " drafts at position ",
                 req.anchor_pos, " but its committed history ends at ", s.end);
    if (s.kv_end > s.end) truncate(req.seq, s, s.end);  // an earlier draft's seed at this position
    add_pending(req.seq, s);
    // No features before the anchor (or, for a head reading the target's KV, nothing there yet
    // to attend to): nothing to draft from.
    if (req.anchor_pos < (own_kv_ ? shift_ : std::max(shift_, 1))) {
      live_[i] = 0;
      continue;
    }
    rows_[i] = batch_.size();
    add_row(req.anchor, req.anchor_pos, req.seq, s.last_h.data(), true);
    if (!own_kv_) continue;
    s.kv_end = req.anchor_pos + 1;
    s.seed = req.anchor;
  }
  if (batch_.size() > 0) ctx_->decode(batch_);
  // Chains: each step drafts one token per live sequence from the last decode, then decodes
  // (that token, the block's own hidden state of the row that drafted it) one position on.
  for (int step = 0;; ++step) {
    batch_.clear();
    for (size_t i = 0; i < n; ++i) {
      if (!live_[i]) continue;
      const DraftRequest& req = requests[i];
      const int n_max = std::min(req.n_max, params_.n_max);
      if (!sampler_.pick(target_logits(rows_[i]), {}, req, out[i]) ||
          static_cast<int>(out[i].tokens.size()) >= n_max) {
        live_[i] = 0;
        continue;
      }
      const int64_t from = rows_[i];
      rows_[i] = batch_.size();
      // Without KV of its own the head runs every row at the anchor's position (llama.cpp).
      add_chain_row(out[i].tokens.back(), own_kv_ ? req.anchor_pos + step + 1 : req.anchor_pos, req.seq, from);
    }
    if (batch_.size() == 0) break;
    ctx_->decode(batch_);
  }
  // The chain rows were drafts, not history: the head's KV keeps the seed rows only (a head
  // that reads the target's KV keeps none: its cells only bookkept this draft's rows).
  for (const DraftRequest& req : requests) {
    if (!own_kv_) {
      ctx_->seq_rm(req.seq, 0, -1);
      continue;
    }
    const int32_t chain = req.anchor_pos + 1 - shift_;  // the first chain row's position
    if (ctx_->seq_pos_max(req.seq) >= chain) ctx_->seq_rm(req.seq, chain, -1);
  }
}

}  // namespace fulgur
