#include "spec/drafters/mtp.h"

#include <algorithm>

#include "core/error.h"

namespace fulgur {
namespace {

// Committed rows a draft takes into its own first MTP decode; catch_up() decodes a longer
// backlog (steps on which another drafter, or none, drafted) ahead of the timed draft.
constexpr size_t kFoldRows = 8;
// Committed rows held back at most (a long prompt goes into the MTP KV as it is committed).
constexpr size_t kMaxPending = 256;

std::unique_ptr<Model> load_block(const Model& target, const MtpParams& p) {
  const GgufReader& g = target.gguf();
  FULGUR_CHECK(target.desc().n_nextn > 0, "--spec draft-mtp: ", g.where(), " has no MTP block (",
               target.desc().arch, ".nextn_predict_layers is absent or 0; convert the checkpoint "
               "with its MTP block: fulgur convert --mtp)");
  FULGUR_CHECK(g.is_mapped_file(), "--spec draft-mtp: the target was not loaded from a file");
  return std::make_unique<Model>(g.name(), ModelOptions{.pack = p.pack, .base = &target, .nextn = true});
}

}  // namespace

MtpDrafter::MtpDrafter(const Model& target, MtpParams params)
    : params_(params),
      target_layers_(static_cast<int>(target.n_layer())),
      n_embd_(target.desc().n_embd),
      model_(load_block(target, params)),
      ctx_(std::make_unique<Context>(*model_, params.context)),
      sampler_(static_cast<int>(target.n_vocab())),
      seqs_(kMaxSequences) {
  FULGUR_CHECK(params_.n_max >= 1, "--spec-n-max ", params_.n_max, " must be >= 1");
  // The block's own pre-norm output of every row: the hidden state a chain feeds back.
  ctx_->set_taps({static_cast<int>(model_->n_layer())});
  for (Seq& s : seqs_) s.last_h.assign(static_cast<size_t>(n_embd_), 0.0f);
}

MtpDrafter::~MtpDrafter() = default;

std::vector<int> MtpDrafter::required_taps() const { return {target_layers_}; }

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
  ctx_->seq_rm(seq, p, -1);
  s.kv_end = std::min(s.kv_end, p);
  s.seed = -1;
}

void MtpDrafter::add_row(int32_t token, int32_t pos, int seq, const float* h, bool output) {
  batch_.add(token, pos, seq, output);
  batch_.aux.insert(batch_.aux.end(), h, h + n_embd_);
}

void MtpDrafter::add_pending(int seq, Seq& s) {
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    add_row(s.tokens[i], s.kv_end + static_cast<int32_t>(i), seq, s.h.data() + i * n_embd_, false);
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
  const std::vector<int>& taps = target.taps();
  const auto it = std::find(taps.begin(), taps.end(), target_layers_);
  FULGUR_CHECK(it != taps.end(), "draft-mtp: the target context does not export its final hidden "
               "state (tap ", target_layers_, "; set_taps must include required_taps())");
  const int tap = static_cast<int>(it - taps.begin());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int32_t q = pos0 + static_cast<int32_t>(i);
    const float* h = i == 0 ? s.last_h.data() : target.tap(tap, rows[i - 1]);
    if (q < s.kv_end) {
      // The row a draft wrote as its seed holds exactly this pair when the token is the anchor.
      if (s.seed == tokens[i]) continue;
      truncate(seq, s, q);
    }
    s.tokens.push_back(tokens[i]);
    s.h.insert(s.h.end(), h, h + n_embd_);
  }
  s.seed = -1;
  const float* last = target.tap(tap, rows.back());
  std::copy(last, last + n_embd_, s.last_h.begin());
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
    rows_[i] = batch_.size();
    add_row(req.anchor, req.anchor_pos, req.seq, s.last_h.data(), true);
    s.kv_end = req.anchor_pos + 1;
    s.seed = req.anchor;
  }
  ctx_->decode(batch_);
  // Chains: each step drafts one token per live sequence from the last decode, then decodes
  // (that token, the block's own hidden state of the row that drafted it) one position on.
  for (int step = 0;; ++step) {
    batch_.clear();
    for (size_t i = 0; i < n; ++i) {
      if (!live_[i]) continue;
      const DraftRequest& req = requests[i];
      const int n_max = std::min(req.n_max, params_.n_max);
      if (!sampler_.pick(ctx_->logits(rows_[i]), {}, req, out[i]) ||
          static_cast<int>(out[i].tokens.size()) >= n_max) {
        live_[i] = 0;
        continue;
      }
      const float* h = ctx_->tap(0, rows_[i]);
      rows_[i] = batch_.size();
      add_row(out[i].tokens.back(), req.anchor_pos + step + 1, req.seq, h, true);
    }
    if (batch_.size() == 0) break;
    ctx_->decode(batch_);
  }
  // The chain rows were drafts, not history: the MTP KV keeps the seed rows only.
  for (const DraftRequest& req : requests) {
    if (ctx_->seq_pos_max(req.seq) > req.anchor_pos) ctx_->seq_rm(req.seq, req.anchor_pos + 1, -1);
  }
}

}  // namespace fulgur
