#include "speculative/drafters/dflash.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/log.h"
#include "model/context.h"
#include "model/dflash_heads.h"
#include "sampling/draft_confidence.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"
#include "speculative/drafters/draft_sampling.h"

namespace fulgur {
namespace {

// Index of the largest value (lowest index among ties).
int64_t argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (x[i] > x[best]) best = i;
  }
  return best;
}


// The block size of a block drafter's model, refusing any other arch.
int64_t block_size_of(const Model& draft) {
  FULGUR_CHECK(draft.dflash() != nullptr, draft.where(), ": general.architecture is '",
               draft.arch(), "', expected 'dflash' (a DFlash / DSpark / DFlash2 drafter)");
  return draft.dflash()->block_size;
}

struct DflashBlock {
  int seq = 0;
  int32_t anchor = 0;      // token of slot 0
  int32_t anchor_pos = 0;  // position of slot 0
};

}  // namespace

void check_dflash_p_min(const DflashInfo& info, float p_min, std::string_view who) {
  // As llama.cpp: a DSpark draft cuts on its confidence head; the top probability of
  // Markov-biased logits is no survival estimate, so without a head p_min is refused.
  FULGUR_CHECK(p_min == 0.0f || info.kind != DflashKind::kDspark || info.confidence, who,
               " has no confidence head: --spec-p-min ", p_min,
               " cannot be applied (set --spec-p-min 0)");
}

struct DflashDrafter::Impl {
  Impl(const std::string& path, const Model& target_model, const DflashOptions& o)
      : target(target_model),
        model(path, ModelOptions{.base = &target_model}),
        ctx(model, {.n_ctx = o.n_ctx > 0 ? o.n_ctx : 4096,
                    .n_batch = std::max<int64_t>(kInjectChunk, std::max(1, o.max_sequences) *
                                                                    block_size_of(model)),
                    .n_threads = o.n_threads,
                    .shared_pool = o.shared_pool}),
        max_blocks(std::max(1, o.max_sequences)),
        heads(model, ctx.pool()),
        sampler(static_cast<int>(model.dflash()->n_vocab)) {
    const DflashInfo& hp = *model.dflash();
    width = static_cast<int64_t>(hp.target_layers.size()) * target_model.n_embd();
    cur.resize(hp.n_vocab_draft);
    full.resize(hp.n_vocab);
    FULGUR_CHECK(o.n_max >= 0, "dflash: --spec-n-max ", o.n_max, " must be >= 0");
    n_max = hp.max_drafts();
    if (o.n_max > 0 && o.n_max < n_max) n_max = o.n_max;
    block_rows = o.short_block ? n_max + hp.first_slot() : hp.block_size;
    if (o.n_max > hp.max_drafts()) {
      log_warn("dflash: --spec-n-max ", o.n_max, " exceeds the ", hp.max_drafts(),
               " drafts a block of ", hp.block_size, " gives (",
               hp.sample_from_anchor ? "anchor-first" : "1+N", " layout); clamped to ",
               hp.max_drafts());
    }
    if (hp.kind == DflashKind::kDflash2) {
      scaled.resize(hp.n_vocab);
      sel_ids.resize(hp.selector_top_k);
      sel_scores.resize(hp.selector_top_k);
    }
  }

  const DflashInfo& hp() const { return *model.dflash(); }
  int32_t to_target(int64_t draft_id) const {
    const std::vector<int32_t>& d2t = hp().d2t;
    return d2t.empty() ? static_cast<int32_t>(draft_id) : d2t[static_cast<size_t>(draft_id)];
  }

  // Runs one block per entry in one backbone pass: slot 0 the anchor, the other slots the mask
  // token, at positions anchor_pos.., attending (non-causally) to the sequence's injected
  // context and their own block. Logits and hidden states are kept for the first n_out[b]
  // prediction slots of block b. The block rows leave the draft's KV afterwards: it only ever
  // holds committed positions.
  void run_blocks(std::span<const DflashBlock> blocks, std::span<const int64_t> n_out);
  // Batch row of prediction k of block b of the last run_blocks.
  int64_t row(int64_t b, int64_t k) const { return b * block_rows + hp().first_slot() + k; }

  // DFlash2's base logits of a block row, scaled and soft-capped as the draft asks.
  const float* selector_logits(int64_t batch_row) {
    const float* l = ctx.logits(batch_row);
    const DflashInfo& h = hp();
    if (h.logit_scale == 1.0f && h.softcap <= 0.0f) return l;
    for (int64_t i = 0; i < h.n_vocab; ++i) {
      const float v = l[i] * h.logit_scale;
      scaled[static_cast<size_t>(i)] = h.softcap > 0.0f ? h.softcap * std::tanh(v / h.softcap) : v;
    }
    return scaled.data();
  }

  void walk(int64_t b, const DraftRequest& req, Draft& out);
  void walk_selector(int64_t b, const DraftRequest& req, int64_t n, bool greedy, Draft& out);

  // Rows per injection pass.
  static constexpr int64_t kInjectChunk = 256;

  const Model& target;
  Model model;   // the `dflash` GGUF, borrowing the target's embeddings / head if it has none
  Context ctx;   // its KV holds each sequence's injected context
  int max_blocks;  // most blocks one backbone pass may hold
  DflashHeads heads;
  // Committed rows not yet injected: [rows][m*E] features, their positions and sequences. The
  // cache catches up in one batch when a draft needs it (or when kMaxPending rows have piled
  // up), so a step on which the draft-length choice skips this drafter costs a copy of the
  // taps instead of a pass over the fc and K/V weights for one row (bitwise the same cache:
  // every row's projection is independent of the batch around it).
  static constexpr int64_t kMaxPending = 64;
  std::vector<float> pend_feat;
  std::vector<int32_t> pend_pos, pend_seq;
  int64_t width = 0;  // floats per pending row: m tapped layers * the target's n_embd
  void drop_pending(int seq_id, int32_t from_pos);
  // Once sequence seq_id holds more than `above` pending rows, drops all but its last n (the
  // oldest go, never injected).
  void keep_recent(int seq_id, int64_t n, int64_t above);
  // Erases the pending rows of which drop(seq, pos) is true, the rest kept in order.
  template <class Drop>
  void erase_pending(Drop drop);
  bool resting = false;  // DflashDrafter::set_resting
  void flush();
  Batch batch;                    // the blocks of one backbone pass
  std::vector<float> cur;         // [V_d] corrected logits of one slot
  std::vector<float> full;        // [V] logits in target ids
  std::vector<float> scaled;      // [V] DFlash2 base logits after logit_scale / softcap
  std::vector<int32_t> sel_ids;   // [k]
  std::vector<float> sel_scores;  // [k]
  std::vector<DflashBlock> blocks;
  std::vector<int64_t> blocks_out;  // [blocks] prediction slots whose logits are wanted
  DraftSampler sampler;  // the target's settings, over the target's vocabulary
  int64_t n_max = 0;  // drafts per step after clamping to the block
  int64_t block_rows = 0;  // rows run per block (DflashOptions::short_block)
};

void DflashDrafter::Impl::run_blocks(std::span<const DflashBlock> blocks_in,
                                     std::span<const int64_t> n_out) {
  const int64_t nb = static_cast<int64_t>(blocks_in.size()), B = block_rows;
  FULGUR_CHECK(nb >= 1 && nb <= max_blocks, "dflash: ", nb, " blocks in one call; at most ",
               max_blocks);
  uint64_t seen = 0;
  batch.clear();
  for (int64_t b = 0; b < nb; ++b) {
    const DflashBlock& blk = blocks_in[b];
    FULGUR_CHECK(blk.seq >= 0 && blk.seq < kMaxSequences && !((seen >> blk.seq) & 1),
                 "dflash: block ", b, " has sequence ", blk.seq,
                 " (must be in [0, 64) and distinct within a call)");
    seen |= uint64_t{1} << blk.seq;
    // Only committed positions < anchor_pos may be visible to the block.
    ctx.seq_rm(blk.seq, blk.anchor_pos, -1);
    for (int64_t s = 0; s < B; ++s) {
      const int64_t k = s - hp().first_slot();
      batch.add(s == 0 ? blk.anchor : hp().mask_token, blk.anchor_pos + static_cast<int32_t>(s),
                blk.seq, k >= 0 && k < n_out[b]);
    }
  }
  ctx.decode(batch);
  for (const DflashBlock& blk : blocks_in) ctx.seq_rm(blk.seq, blk.anchor_pos, -1);
}

template <class Drop>
void DflashDrafter::Impl::erase_pending(Drop drop) {
  size_t kept = 0;
  for (size_t i = 0; i < pend_pos.size(); ++i) {
    if (drop(pend_seq[i], pend_pos[i])) continue;
    if (kept != i) {
      pend_pos[kept] = pend_pos[i];
      pend_seq[kept] = pend_seq[i];
      std::copy_n(pend_feat.begin() + static_cast<int64_t>(i) * width, width,
                  pend_feat.begin() + static_cast<int64_t>(kept) * width);
    }
    ++kept;
  }
  pend_pos.resize(kept);
  pend_seq.resize(kept);
  pend_feat.resize(kept * static_cast<size_t>(width));
}

void DflashDrafter::Impl::drop_pending(int seq_id, int32_t from_pos) {
  erase_pending([&](int seq, int32_t pos) { return seq == seq_id && pos >= from_pos; });
}

void DflashDrafter::Impl::keep_recent(int seq_id, int64_t n, int64_t above) {
  int64_t held = 0;
  for (int seq : pend_seq) held += seq == seq_id;
  int64_t excess = held - n;
  if (held > above) erase_pending([&](int seq, int32_t) { return seq == seq_id && excess-- > 0; });
}

void DflashDrafter::Impl::flush() {
  if (pend_pos.empty()) return;
  if (resting) {  // a draft after a rest sees each sequence's last kRestWindow rows of it
    uint64_t seen = 0;
    for (int seq : pend_seq) seen |= uint64_t{1} << seq;
    for (int seq = 0; seq < kMaxSequences; ++seq) {
      if ((seen >> seq) & 1) keep_recent(seq, kRestWindow, kRestWindow);
    }
  }
  ctx.inject_kv(pend_feat.data(), pend_pos.data(), pend_seq.data(),
                static_cast<int64_t>(pend_pos.size()));
  pend_feat.clear();
  pend_pos.clear();
  pend_seq.clear();
}

// Drafts from block b of the last run_blocks() for one request.
void DflashDrafter::Impl::walk(int64_t b, const DraftRequest& req, Draft& out) {
  out.clear();
  const DflashInfo& h = hp();
  const int64_t n = std::min<int64_t>(req.n_max, n_max);
  if (n <= 0) return;
  const bool greedy = req.sampling == nullptr || req.sampling->greedy();
  FULGUR_CHECK(greedy || req.rng != nullptr, "dflash: sampling needs an rng");
  if (h.kind == DflashKind::kDflash2) return walk_selector(b, req, n, greedy, out);
  check_dflash_p_min(h, req.p_min, "dspark: the draft");
  heads.begin_block();
  const int64_t Vd = h.n_vocab_draft;
  int32_t prev = req.anchor;
  for (int64_t k = 0; k < n; ++k) {
    const float* hid = ctx.hidden(row(b, k));
    float conf = std::numeric_limits<float>::quiet_NaN();
    if (h.confidence) {
      conf = heads.confidence(hid, prev);
      if (req.p_min > 0.0f && conf < req.p_min) break;  // decided before x_k is drawn
    }
    const float* base = ctx.logits(row(b, k));
    std::copy(base, base + Vd, cur.begin());
    heads.add_markov_bias(hid, prev, cur.data());
    // Without a confidence head (plain DFlash), p_min cuts on llama.cpp's measure: the top
    // probability renormalised over the 10 largest logits, whatever the sampling settings.
    if (req.p_min > 0.0f && !h.confidence && draft_confidence(cur.data(), Vd) < req.p_min) break;
    int32_t tok;
    if (greedy) {
      tok = to_target(argmax(cur.data(), Vd));
    } else {
      const Distribution& q = sampler.sampler(req).distribution(in_target_ids(hp().d2t, cur.data(), full));
      tok = sample(q, *req.rng);
      out.add_q(static_cast<int>(h.n_vocab)) = q;  // reuses the draft's buffers
    }
    out.tokens.push_back(tok);
    if (h.confidence) out.confidence.push_back(conf);
    prev = tok;
  }
}

void DflashDrafter::Impl::walk_selector(int64_t b, const DraftRequest& req, int64_t n,
                                        bool greedy, Draft& out) {
  const DflashInfo& h = hp();
  const int64_t k_top = h.selector_top_k;
  int32_t prev = req.anchor;
  for (int64_t k = 0; k < n; ++k) {
    heads.select(ctx.hidden(row(b, k)), selector_logits(row(b, k)), prev, sel_ids.data(),
                 sel_scores.data());
    // llama.cpp's measure: the softmax of the selector scores within the k candidates.
    if (req.p_min > 0.0f && top_probability(sel_scores.data(), k_top) < req.p_min) break;
    int32_t tok;
    if (greedy) {
      tok = sel_ids[argmax(sel_scores.data(), k_top)];
    } else {
      // q lives on the k candidates only (zero elsewhere), still exact for the verifier.
      std::fill(full.begin(), full.end(), -std::numeric_limits<float>::infinity());
      for (int64_t c = 0; c < k_top; ++c) full[sel_ids[c]] = sel_scores[c];
      const Distribution& q = sampler.sampler(req).distribution(full.data());
      tok = sample(q, *req.rng);
      out.add_q(static_cast<int>(h.n_vocab)) = q;  // reuses the draft's buffers
    }
    out.tokens.push_back(tok);
    prev = tok;
  }
}

DflashDrafter::DflashDrafter(const std::string& gguf_path, const Model& target,
                             const DflashOptions& options)
    : impl_(std::make_unique<Impl>(gguf_path, target, options)) {}

DflashDrafter::~DflashDrafter() = default;

std::string DflashDrafter::name() const { return dflash_kind_name(impl_->hp().kind); }

std::vector<int> DflashDrafter::required_taps() const { return impl_->hp().target_layers; }

const Model& DflashDrafter::model() const { return impl_->model; }

int DflashDrafter::max_draft() const { return static_cast<int>(impl_->n_max); }

int DflashDrafter::block_drafts() const { return static_cast<int>(impl_->hp().max_drafts()); }

void DflashDrafter::reset(int seq) {
  FULGUR_CHECK(seq >= 0 && seq < kMaxSequences, "dflash: sequence id ", seq, " out of range");
  impl_->drop_pending(seq, 0);
  impl_->ctx.seq_rm(seq, 0, -1);
}

void DflashDrafter::commit(int seq, std::span<const int32_t> tokens, int32_t pos0,
                           const TargetFeatures& features) {
  Impl& I = *impl_;
  const int64_t n = static_cast<int64_t>(tokens.size());
  FULGUR_CHECK(features.rows == n && features.width == I.width, "dflash: commit of ", n,
               " tokens with ", features.rows, " feature rows of ", features.width, " floats (",
               I.width, " expected)");
  if (n == 0) return;
  // Anything held from pos0 on, injected or pending, is stale (the loop re-commits after a
  // rollback).
  I.drop_pending(seq, pos0);
  I.ctx.seq_rm(seq, pos0, -1);
  for (int64_t i = 0; i < n; ++i) {
    I.pend_pos.push_back(pos0 + static_cast<int32_t>(i));
    I.pend_seq.push_back(seq);
  }
  I.pend_feat.insert(I.pend_feat.end(), features.data, features.data + n * features.width);
  if (I.resting) {
    // Trimmed once it holds twice the window, so the rows are moved about once each.
    I.keep_recent(seq, kRestWindow, 2 * kRestWindow);
  } else if (static_cast<int64_t>(I.pend_pos.size()) >= Impl::kMaxPending) {
    I.flush();
  }
}

void DflashDrafter::set_resting(bool resting) {
  // What was committed before the rest is context every later draft should see.
  if (resting && !impl_->resting) impl_->flush();
  impl_->resting = resting;
}

void DflashDrafter::catch_up(std::span<const DraftRequest>) { impl_->flush(); }

void DflashDrafter::draft(const DraftRequest& request, Draft& out) {
  draft_many({&request, 1}, {&out, 1});
}

void DflashDrafter::draft_many(std::span<const DraftRequest> requests, std::span<Draft> out) {
  Impl& I = *impl_;
  FULGUR_CHECK(requests.size() == out.size(), "dflash: ", requests.size(), " requests but ",
               out.size(), " outputs");
  I.flush();
  const size_t chunk = static_cast<size_t>(I.max_blocks);
  for (size_t begin = 0; begin < requests.size(); begin += chunk) {
    const size_t end = std::min(requests.size(), begin + chunk);
    I.blocks.clear();
    I.blocks_out.clear();
    for (size_t i = begin; i < end; ++i) {
      I.blocks.push_back({requests[i].seq, requests[i].anchor, requests[i].anchor_pos});
      I.blocks_out.push_back(std::min<int64_t>(requests[i].n_max, I.n_max));
    }
    I.run_blocks(I.blocks, I.blocks_out);
    for (size_t i = begin; i < end; ++i) I.walk(static_cast<int64_t>(i - begin), requests[i], out[i]);
  }
}

void DflashDrafter::score_block(int seq, int32_t anchor, int32_t anchor_pos,
                                std::span<const int32_t> next_tokens, std::vector<int32_t>& top1,
                                std::vector<float>& confidence) {
  Impl& I = *impl_;
  const DflashInfo& h = I.hp();
  const int64_t n = I.block_rows - h.first_slot();  // the prediction slots of the block run
  FULGUR_CHECK(static_cast<int64_t>(next_tokens.size()) >= n - 1, "dflash: score_block needs ",
               n - 1, " next tokens, got ", next_tokens.size());
  const DflashBlock blk{seq, anchor, anchor_pos};
  I.flush();
  I.run_blocks({&blk, 1}, {&n, 1});
  I.heads.begin_block();
  top1.clear();
  confidence.clear();
  for (int64_t k = 0; k < n; ++k) {
    const int32_t prev = k == 0 ? anchor : next_tokens[k - 1];
    const float* hid = I.ctx.hidden(I.row(0, k));
    confidence.push_back(h.confidence ? I.heads.confidence(hid, prev)
                                      : std::numeric_limits<float>::quiet_NaN());
    const float* row = I.ctx.logits(I.row(0, k));
    if (h.kind == DflashKind::kDflash2) {
      I.heads.select(hid, I.selector_logits(I.row(0, k)), prev, I.sel_ids.data(), I.sel_scores.data());
      top1.push_back(I.sel_ids[argmax(I.sel_scores.data(), h.selector_top_k)]);
      continue;
    }
    std::copy(row, row + h.n_vocab_draft, I.cur.begin());
    I.heads.add_markov_bias(hid, prev, I.cur.data());
    top1.push_back(I.to_target(argmax(I.cur.data(), h.n_vocab_draft)));
  }
}

std::unique_ptr<Drafter> make_dflash_drafter(const std::string& gguf_path, const Model& target,
                                             const DflashOptions& options) {
  return std::make_unique<DflashDrafter>(gguf_path, target, options);
}

}  // namespace fulgur
