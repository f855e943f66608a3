#include "speculative/drafters/mtp.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace fulgur {
namespace {

// Committed rows a draft takes into its own first MTP decode; catch_up() decodes a longer
// backlog (steps on which another drafter, or none, drafted) ahead of the timed draft.
constexpr size_t kFoldRows = 8;
// Committed rows held back at most (a long prompt goes into the MTP KV as it is committed).
constexpr size_t kMaxPending = 256;

// The MTP block of the target's own file, paired with the target's final pre-norm hidden state.
ChainHead mtp_head(const Model& target, const MtpParams& p) {
  const GgufReader& g = target.gguf();
  FULGUR_CHECK(target.desc().n_nextn > 0, "--spec draft-mtp: ", g.where(), " has no MTP block (",
               target.desc().arch, ".nextn_predict_layers is absent or 0; convert the checkpoint "
               "with its MTP block: fulgur convert --mtp)");
  FULGUR_CHECK(g.is_mapped_file(), "--spec draft-mtp: the target was not loaded from a file");
  ChainHead h;
  h.model = std::make_unique<Model>(g.name(), ModelOptions{.pack = p.pack, .base = &target, .nextn = true});
  h.taps = {static_cast<int>(target.n_layer())};
  return h;
}

}  // namespace

MtpDrafter::MtpDrafter(const Model& target, MtpParams params) : MtpDrafter(target, params, mtp_head(target, params)) {}

MtpDrafter::MtpDrafter(const Model& target, MtpParams params, ChainHead head)
    : params_(params),
      taps_(std::move(head.taps)),
      shift_(head.shift),
      chain_as_embd_(head.chain_as_embd),
      d2t_(std::move(head.d2t)),
      n_feat_(static_cast<int64_t>(taps_.size()) * target.desc().n_embd),
      n_embd_head_(head.model->desc().n_embd),
      full_(static_cast<size_t>(target.n_vocab())),
      model_(std::move(head.model)),
      ctx_(std::make_unique<Context>(*model_, params.context)),
      sampler_(static_cast<int>(target.n_vocab())),
      seqs_(kMaxSequences) {
  FULGUR_CHECK(params_.n_max >= 1, "--spec-n-max ", params_.n_max, " must be >= 1");
  // The head's own pre-norm output of every row: the hidden state a chain feeds back.
  ctx_->set_taps({static_cast<int>(model_->n_layer())});
  for (Seq& s : seqs_) s.last_h.assign(static_cast<size_t>(n_feat_), 0.0f);
}

MtpDrafter::~MtpDrafter() = default;

std::vector<int> MtpDrafter::required_taps() const { return taps_; }

MtpDrafter::Seq& MtpDrafter::state(int seq) {
  FULGUR_CHECK(seq >= 0 && seq < kMaxSequences, "draft-mtp: sequence id ", seq, " is outside [0, ",
               kMaxSequences, ")");
  return seqs_[static_cast<size_t>(seq)];
}

void MtpDrafter::reset(int seq) {
  Seq& s = state(seq);
  s.end = s.kv_end = 0;
  s.seed = -1;
  s.tokens.clear();
  s.h.clear();
  std::fill(s.last_h.begin(), s.last_h.end(), 0.0f);
  ctx_->seq_rm(seq, 0, -1);
}

void MtpDrafter::truncate(int seq, Seq& s, int32_t p) {
  ctx_->seq_rm(seq, std::max(0, p - shift_), -1);
  s.kv_end = std::min(s.kv_end, p);
  s.seed = -1;
}

void MtpDrafter::add_row(int32_t token, int32_t pos, int seq, const float* h, bool output) {
  batch_.add(token, pos - shift_, seq, output);
  batch_.aux.insert(batch_.aux.end(), h, h + n_feat_);
}

void MtpDrafter::add_chain_row(int32_t token, int32_t pos, int seq, const float* h) {
  if (!chain_as_embd_) return add_row(token, pos, seq, h, true);
  batch_.add(token, pos - shift_, seq, true);
  batch_.embd.insert(batch_.embd.end(), h, h + n_embd_head_);
}

const float* MtpDrafter::target_logits(int64_t row) {
  const float* l = ctx_->logits(row);
  if (d2t_.empty()) return l;
  std::fill(full_.begin(), full_.end(), -std::numeric_limits<float>::infinity());
  for (size_t i = 0; i < d2t_.size(); ++i) full_[static_cast<size_t>(d2t_[i])] = l[i];
  return full_.data();
}

void MtpDrafter::add_pending(int seq, Seq& s) {
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    add_row(s.tokens[i], s.kv_end + static_cast<int32_t>(i), seq, s.h.data() + i * n_feat_, false);
  }
  s.kv_end += static_cast<int32_t>(s.tokens.size());
  s.tokens.clear();
  s.h.clear();
}

void MtpDrafter::commit(int seq, std::span<const int32_t> tokens, int32_t pos0, const Context& target,
                        std::span<const int64_t> rows) {
  Seq& s = state(seq);
  FULGUR_CHECK(tokens.size() == rows.size(), "draft-mtp: commit of ", tokens.size(), " tokens with ",
               rows.size(), " rows");
  if (tokens.empty()) return;
  if (pos0 == 0 && s.end > 0) reset(seq);
  FULGUR_CHECK(pos0 == s.end, "draft-mtp: sequence ", seq, " commits position ", pos0,
               " but its history ends at ", s.end, " (the MTP head pairs each token with the hidden "
               "state of the position before it, so a history continues in order)");
  // The target context's tap index of each feature tap.
  const std::vector<int>& have = target.taps();
  int index[8];
  FULGUR_CHECK(taps_.size() <= 8, name(), ": ", taps_.size(), " taps");
  for (size_t t = 0; t < taps_.size(); ++t) {
    const auto it = std::find(have.begin(), have.end(), taps_[t]);
    FULGUR_CHECK(it != have.end(), name(), ": the target context does not export tap ", taps_[t],
                 " (set_taps must include required_taps())");
    index[t] = static_cast<int>(it - have.begin());
  }
  const int64_t E = n_feat_ / static_cast<int64_t>(taps_.size());
  // feat [F]: the features of target row r, the taps side by side.
  const auto features = [&](int64_t r, float* feat) {
    for (size_t t = 0; t < taps_.size(); ++t) std::copy_n(target.tap(index[t], r), E, feat + t * E);
  };
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int32_t q = pos0 + static_cast<int32_t>(i);
    if (q < shift_) {  // no features before it (EAGLE-3's x_0): no row
      s.kv_end = std::max(s.kv_end, q + 1);
      continue;
    }
    if (i > 0) features(rows[i - 1], s.last_h.data());
    const float* h = s.last_h.data();
    if (q < s.kv_end) {
      // The row a draft wrote as its seed holds exactly this pair when the token is the anchor.
      if (s.seed == tokens[i]) continue;
      truncate(seq, s, q);
    }
    s.tokens.push_back(tokens[i]);
    s.h.insert(s.h.end(), h, h + n_feat_);
  }
  s.seed = -1;
  features(rows.back(), s.last_h.data());
  s.end = pos0 + static_cast<int32_t>(tokens.size());
  if (s.tokens.size() > kMaxPending) {
    batch_.clear();
    add_pending(seq, s);
    ctx_->decode(batch_);
  }
}

void MtpDrafter::catch_up(std::span<const DraftRequest> requests) {
  batch_.clear();
  for (const DraftRequest& req : requests) {
    Seq& s = state(req.seq);
    if (s.tokens.size() > kFoldRows) add_pending(req.seq, s);
  }
  if (batch_.size() > 0) ctx_->decode(batch_);
}

void MtpDrafter::draft(const DraftRequest& request, Draft& out) { draft_many({&request, 1}, {&out, 1}); }

void MtpDrafter::draft_many(std::span<const DraftRequest> requests, std::span<Draft> out) {
  FULGUR_CHECK(requests.size() == out.size(), "draft-mtp: ", requests.size(), " requests but ",
               out.size(), " outputs");
  const size_t n = requests.size();
  // The seed rows (anchor, the target's hidden state before it), after each sequence's
  // committed rows not yet in the MTP KV.
  batch_.clear();
  rows_.assign(n, 0);
  live_.assign(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const DraftRequest& req = requests[i];
    Seq& s = state(req.seq);
    FULGUR_CHECK(req.anchor_pos == s.end, "draft-mtp: sequence ", req.seq, " drafts at position ",
                 req.anchor_pos, " but its committed history ends at ", s.end);
    if (s.kv_end > s.end) truncate(req.seq, s, s.end);  // an earlier draft's seed at this position
    add_pending(req.seq, s);
    if (req.anchor_pos < shift_) {  // no features before the anchor: nothing to draft from
      live_[i] = 0;
      continue;
    }
    rows_[i] = batch_.size();
    add_row(req.anchor, req.anchor_pos, req.seq, s.last_h.data(), true);
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
      const float* h = ctx_->tap(0, rows_[i]);
      rows_[i] = batch_.size();
      add_chain_row(out[i].tokens.back(), req.anchor_pos + step + 1, req.seq, h);
    }
    if (batch_.size() == 0) break;
    ctx_->decode(batch_);
  }
  // The chain rows were drafts, not history: the MTP KV keeps the seed rows only.
  for (const DraftRequest& req : requests) {
    const int32_t chain = req.anchor_pos + 1 - shift_;  // the first chain row's position
    if (ctx_->seq_pos_max(req.seq) >= chain) ctx_->seq_rm(req.seq, chain, -1);
  }
}

}  // namespace fulgur
