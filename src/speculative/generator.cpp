#include "speculative/generator.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>

#include "core/error.h"

namespace fulgur {
namespace {

// Separate streams for drafting and verification, so that a drafter's use of randomness never
// shifts the verifier's draws (and sequence 0 without drafters matches a plain sampling loop).
constexpr uint64_t kDraftStream = 0xD1B54A32D192ED03ull;

}  // namespace

double Generator::now() const {
  if (params_.clock) return params_.clock();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Generator::Generator(Context& target, GeneratorParams params, std::vector<Drafter*> drafters)
    : target_(target),
      params_(std::move(params)),
      drafters_(std::move(drafters)),
      verifier_(params_.sampling, static_cast<int>(target.model().n_vocab())),
      scheduler_(static_cast<int>(drafters_.size()), params_.spec.schedule),
      n_vocab_(static_cast<int>(target.model().n_vocab())),
      seqs_(kMaxSequences) {
  FULGUR_CHECK(params_.spec.n_min >= 0, "--spec-n-min ", params_.spec.n_min, " must be >= 0");
  FULGUR_CHECK(params_.spec.p_min >= 0.0f && params_.spec.p_min <= 1.0f, "--spec-p-min ",
               params_.spec.p_min, " must be in [0, 1]");
  if (!params_.spec.step_table.empty()) scheduler_.set_step_table(params_.spec.step_table);
  FULGUR_CHECK(params_.spec.confidence_temperatures.size() <= drafters_.size(), "generator: ",
               params_.spec.confidence_temperatures.size(), " confidence temperature sets for ",
               drafters_.size(), " drafters");
  for (size_t d = 0; d < params_.spec.confidence_temperatures.size(); ++d) {
    scheduler_.set_temperatures(static_cast<int>(d), params_.spec.confidence_temperatures[d]);
  }
  // Taps: the union of what the drafters read, on top of what the context already exports.
  const int n_layer = static_cast<int>(target.model().n_layer());
  std::vector<int> taps = target.taps();
  for (Drafter* d : drafters_) {
    FULGUR_CHECK(d != nullptr, "generator: null drafter");
    for (int t : d->required_taps()) {
      FULGUR_CHECK(t >= 0 && t <= final_norm_tap(n_layer), "drafter '", d->name(),
                   "' needs the target's layer input ", t, ", but the target has ", n_layer,
                   " layers (taps 0..", n_layer, " exist, and ", final_norm_tap(n_layer),
                   " for the final norm's output); is this draft made for this target?");
      if (std::find(taps.begin(), taps.end(), t) == taps.end()) taps.push_back(t);
    }
    DrafterStats s;
    s.name = d->name();
    stats_.drafters.push_back(s);
  }
  if (taps != target.taps()) target.set_taps(taps);
  for (Drafter* d : drafters_) features_.emplace_back(target, d->required_taps());
  // A recurrent target keeps the state after each row of a verification batch, so rejected
  // rows roll back exactly (model/recurrent_state.h).
  int longest = 0;
  for (Drafter* d : drafters_) longest = std::max(longest, d->max_draft());
  if (longest > 0) target.reserve_rollback(1 + longest);
}

int Generator::checked(int seq) const {
  FULGUR_CHECK(seq >= 0 && seq < kMaxSequences, "sequence id ", seq, " is outside [0, ",
               kMaxSequences, ")");
  return seq;
}

void Generator::start(int seq, std::vector<int32_t> prompt, int n_predict) {
  start(seq, std::move(prompt), n_predict, SeqOptions{});
}

void Generator::start(int seq, std::vector<int32_t> prompt, int n_predict, uint64_t seed) {
  SeqOptions o;
  o.seed = seed;
  start(seq, std::move(prompt), n_predict, o);
}

void Generator::start(int seq, std::vector<int32_t> prompt, int n_predict, const SeqOptions& o) {
  Seq& s = seqs_[checked(seq)];
  FULGUR_CHECK(!prompt.empty(), "sequence ", seq, ": the prompt is empty");
  FULGUR_CHECK(n_predict >= 1, "sequence ", seq, ": n_predict ", n_predict, " must be >= 1");
  for (int32_t t : prompt) {
    FULGUR_CHECK(t >= 0 && t < n_vocab_, "sequence ", seq, ": prompt token ", t,
                 " is outside the vocabulary [0, ", n_vocab_, ")");
  }
  const SamplerParams sampling = o.sampling.value_or(params_.sampling);
  validate(sampling);
  const int n_min = o.n_min.value_or(params_.spec.n_min);
  const float p_min = o.p_min.value_or(params_.spec.p_min);
  FULGUR_CHECK(o.n_max >= 0, "sequence ", seq, ": draft n_max ", o.n_max, " must be >= 0");
  FULGUR_CHECK(n_min >= 0, "sequence ", seq, ": draft n_min ", n_min, " must be >= 0");
  FULGUR_CHECK(p_min >= 0.0f && p_min <= 1.0f, "sequence ", seq, ": draft p_min ", p_min,
               " must be in [0, 1]");
  FULGUR_CHECK(o.n_logprobs <= n_vocab_, "sequence ", seq, ": ", o.n_logprobs,
               " top log-probabilities asked, the vocabulary has ", n_vocab_);

  // The prompt cache: the longest common prefix of what seq holds and the new prompt, short of
  // the prompt's last token (the first anchor is decoded with the first draft). With drafters,
  // at least one more token is prefilled: its commit at position `keep` is what tells each
  // drafter to forget what it held past the prefix, before it is asked for a draft.
  int32_t keep = 0;
  if (o.reuse_prefix) {
    const int32_t n_fresh = drafters_.empty() ? 1 : 2;
    const int32_t limit = std::min<int32_t>(s.n_past, static_cast<int32_t>(prompt.size()) - n_fresh);
    while (keep < limit && s.history[static_cast<size_t>(keep)] == prompt[static_cast<size_t>(keep)]) ++keep;
    keep = truncate_target(seq, keep);
  } else {
    truncate_target(seq, 0);
  }
  if (keep == 0) {
    const double t0 = now();
    for (size_t i = 0; i < drafters_.size(); ++i) drafters_[i]->reset(seq);
    stats_.t_prefill += now() - t0;
  }
  // A drafter keeps its state of the kept prefix: the next commit at position `keep` makes it
  // forget what followed (Drafter::commit).
  s.active = true;
  s.history = std::move(prompt);
  s.out.clear();
  s.n_predict = n_predict;
  s.anchor_pos = static_cast<int32_t>(s.history.size()) - 1;
  s.n_past = keep;
  s.needs_prefill = true;
  s.start_tick = start_ticks_++;
  s.sampling = sampling;
  s.draft_on = o.draft;
  s.n_max = o.n_max;
  s.n_min = n_min;
  s.p_min = p_min;
  s.n_logprobs = o.n_logprobs;
  s.checkpoint_prompt = o.reuse_prefix;
  s.n_logprobs_ready = 0;
  s.stats = SeqStats{};
  s.stats.prompt_tokens = static_cast<int64_t>(s.history.size());
  s.stats.reused_tokens = keep;
  if (o.grammar) {
    FULGUR_CHECK(params_.token_vocab != nullptr, "sequence ", seq,
                 ": a grammar needs the tokens' bytes (Generator::set_token_vocab)");
    s.matcher = GrammarMatcher(o.grammar);
  } else {
    s.matcher = GrammarMatcher();
  }
  const uint64_t seed = o.seed.value_or(params_.sampling.seed + static_cast<uint64_t>(seq));
  s.rng.reseed(seed);
  s.draft_rng.reseed(seed ^ kDraftStream);
  stats_.prompt_tokens += static_cast<int64_t>(s.history.size());
}

bool Generator::can_adopt() const {
  return std::all_of(drafters_.begin(), drafters_.end(), [](const Drafter* d) { return d->required_taps().empty(); });
}

void Generator::adopt(int seq, std::vector<int32_t> tokens) {
  Seq& s = seqs_[checked(seq)];
  FULGUR_CHECK(!s.active, "sequence ", seq, " is running: adopt() a memory only between requests");
  FULGUR_CHECK(can_adopt(), "sequence ", seq, ": a drafter reads the target's features, which a copied memory does not hold");
  const double t0 = now();
  for (Drafter* d : drafters_) {
    d->reset(seq);
    if (!tokens.empty()) d->commit(seq, tokens, 0, TargetFeatures{nullptr, static_cast<int64_t>(tokens.size()), 0});
  }
  stats_.t_prefill += now() - t0;
  s.n_past = static_cast<int32_t>(tokens.size());
  s.history = std::move(tokens);
  s.out.clear();
}

void Generator::cancel(int seq) {
  Seq& s = seqs_[checked(seq)];
  s.active = false;
  s.needs_prefill = false;
}

int32_t Generator::truncate_target(int seq, int32_t n_keep) {
  // A recurrent memory rolls back only to the positions its snapshots and its checkpoint hold
  // (model/recurrent_state.h): keep the longest prefix it can restore, else start over (that
  // always works).
  int32_t keep = n_keep;
  while (keep > 0 && !target_.can_rm(seq, keep, -1)) --keep;
  FULGUR_CHECK(target_.seq_rm(seq, keep, -1), "sequence ", seq, ": the target's memory cannot roll back to ",
               keep);
  return keep;
}

void Generator::prefill() {
  prefill_order_.clear();
  for (int q = 0; q < kMaxSequences; ++q) {
    if (seqs_[q].active && seqs_[q].needs_prefill) prefill_order_.push_back(q);
  }
  if (prefill_order_.empty()) return;
  std::sort(prefill_order_.begin(), prefill_order_.end(),
            [this](int a, int b) { return seqs_[a].start_tick < seqs_[b].start_tick; });
  batch_.clear();
  int64_t budget = params_.prefill_budget > 0 ? params_.prefill_budget : INT64_MAX;
  for (int q : prefill_order_) {
    Seq& s = seqs_[q];
    s.row0 = batch_.size();
    // Everything but the last prompt token: that one is the first anchor, decoded with the first
    // draft (no logits needed here).
    const int64_t n = std::min<int64_t>(s.anchor_pos - s.n_past, budget);
    for (int32_t i = s.n_past; i < s.n_past + n; ++i) batch_.add(s.history[i], i, q, false);
    s.prefill_rows = n;
    budget -= n;
  }
  const double t0 = now();
  if (batch_.size() > 0) target_.decode(batch_);
  for (int q : prefill_order_) {
    Seq& s = seqs_[q];
    const int32_t n = static_cast<int32_t>(s.prefill_rows);
    if (n > 0) {
      row_ids_.resize(static_cast<size_t>(n));
      for (int32_t i = 0; i < n; ++i) row_ids_[i] = s.row0 + i;
      const std::span<const int32_t> tokens(s.history.data() + s.n_past, static_cast<size_t>(n));
      for (size_t di = 0; di < drafters_.size(); ++di) {
        drafters_[di]->commit(q, tokens, s.n_past, features_[di].gather(row_ids_));
      }
      s.n_past += n;
    }
    s.needs_prefill = s.n_past < s.anchor_pos;
    // The prompt is read: a recurrent target keeps its state here, so that a later prompt that
    // continues this one but not what is generated next still reuses it (the prompt cache).
    if (!s.needs_prefill && s.checkpoint_prompt) target_.checkpoint(q);
  }
  stats_.t_prefill += now() - t0;
}

void Generator::draft_all() {
  // KV cells left for drafted rows once every active sequence's anchor has its cell.
  int64_t n_active = 0;
  for (const Seq& s : seqs_) n_active += s.decoding();
  int64_t room = target_.n_free_cells() - n_active;
  for (Seq& s : seqs_) {
    s.draft.clear();
    s.drafter = -1;
    s.grammar_cut = false;
  }
  scheduler_.begin_step();
  double draft_forecast = 0.0;  // the drafters' predicted seconds this step (plan() needs them)
  // Drafters in priority order; each is asked, in one call, for every sequence that no earlier
  // drafter served, so a block drafter drafts all of them in one forward pass.
  for (size_t di = 0; di < drafters_.size(); ++di) {
    requests_.clear();
    request_seqs_.clear();
    const int cap = std::min(drafters_[di]->max_draft(),
                             scheduler_.cap(static_cast<int>(di), static_cast<int>(n_active)));
    drafters_[di]->set_resting(scheduler_.losing(static_cast<int>(di)));
    int64_t asked = 0;
    for (int q = 0; q < kMaxSequences; ++q) {
      Seq& s = seqs_[q];
      if (!s.decoding() || !s.draft_on || s.drafter >= 0 || s.grammar_cut) continue;
      // A step emits n_accepted + 1 tokens: never draft past what the sequence may still emit.
      const int64_t remaining = s.n_predict - static_cast<int64_t>(s.out.size());
      const int64_t own = s.n_max > 0 ? s.n_max : INT64_MAX;
      const int n_max = static_cast<int>(std::min<int64_t>({remaining - 1, room, cap, own}));
      if (n_max < 1) continue;
      DraftRequest req;
      req.seq = q;
      req.anchor = s.history.back();
      req.anchor_pos = s.anchor_pos;
      req.n_max = n_max;
      req.p_min = s.p_min;
      req.sampling = &s.sampling;
      req.rng = &s.draft_rng;
      requests_.push_back(req);
      request_seqs_.push_back(q);
      asked += n_max;
    }
    if (requests_.empty()) break;
    draft_forecast += scheduler_.draft_seconds(static_cast<int>(di), asked);
    if (drafts_.size() < requests_.size()) drafts_.resize(requests_.size());
    for (size_t i = 0; i < requests_.size(); ++i) drafts_[i].clear();
    const double c0 = now();
    drafters_[di]->catch_up(requests_);
    const double t0 = now();
    stats_.t_commit += t0 - c0;
    stats_.drafters[di].t_commit += t0 - c0;
    drafters_[di]->draft_many(requests_, std::span<Draft>(drafts_.data(), requests_.size()));
    const double dt = now() - t0;
    stats_.t_draft += dt;
    stats_.drafters[di].t_draft += dt;
    int64_t n_drafted = 0;
    for (size_t i = 0; i < requests_.size(); ++i) n_drafted += static_cast<int64_t>(drafts_[i].tokens.size());
    scheduler_.on_draft(static_cast<int>(di), n_drafted, dt);
    for (size_t i = 0; i < requests_.size(); ++i) {
      Draft& d = drafts_[i];
      FULGUR_CHECK(d.q.empty() || d.q.size() == d.tokens.size(), "drafter '", drafters_[di]->name(),
                   "' returned ", d.q.size(), " distributions for ", d.tokens.size(), " tokens");
      // A drafter never decides what is emitted, but a bad id would make the target's decode
      // throw: keep only the valid prefix.
      size_t n = 0;
      while (n < d.tokens.size() && d.tokens[n] >= 0 && d.tokens[n] < n_vocab_) ++n;
      n = std::min(n, static_cast<size_t>(std::min<int64_t>(requests_[i].n_max, room)));
      Seq& s = seqs_[request_seqs_[i]];
      // Dropping a short draft is decided before the grammar reads the tokens: a choice that
      // depended on their values would bias what is emitted.
      if (n < static_cast<size_t>(std::max(1, s.n_min))) continue;
      if (s.matcher.valid()) {
        const size_t m = grammar_prefix(s, d.tokens, n);
        if (m < n) {
          // Token m was drawn (from q[m]) and the grammar rejects it: the verifier treats it as
          // rejected at the last kept row (residual of that row's p and q[m]), which keeps the
          // emitted token distributed as p. The step stays with this drafter even when nothing
          // is left of its draft.
          s.grammar_cut = true;
          s.grammar_cut_at = m;
          s.grammar_cut_has_q = !d.q.empty();
          if (s.grammar_cut_has_q) s.grammar_cut_q = d.q[m];
        }
        n = m;
      }
      if (!d.confidence.empty()) d.confidence.resize(std::min(n, d.confidence.size()));
      scheduler_.on_confidences(static_cast<int>(di), d.confidence);
      if (n == 0) continue;
      d.tokens.resize(n);
      if (!d.q.empty()) d.q.resize(n);
      std::swap(s.draft, d);
      s.drafter = static_cast<int>(di);
      room -= static_cast<int64_t>(n);
    }
  }
  plan_verification(draft_forecast);
}

size_t Generator::grammar_prefix(Seq& s, std::span<const int32_t> tokens, size_t n) {
  // Walk a copy of the matcher along the draft: the verifier would give the first rejected token
  // probability 0, so verifying it and anything after it is wasted rows.
  draft_matcher_ = s.matcher;
  const TokenVocab& vocab = *params_.token_vocab;
  size_t m = 0;
  while (m < n && vocab.accept(draft_matcher_, tokens[m])) {
    if (vocab.is_eog(tokens[m++])) break;  // the sequence ends there
  }
  s.stats.grammar_cut += static_cast<int64_t>(n - m);
  return m;
}

void Generator::plan_verification(double draft_seconds) {
  if (scheduler_.mode() != SpecSchedule::kConfidence) return;
  // Every decoding sequence, drafted or not: each one's anchor row is in the step.
  plans_.clear();
  plan_seqs_.clear();
  for (int q = 0; q < kMaxSequences; ++q) {
    const Seq& s = seqs_[q];
    if (!s.decoding()) continue;
    PlannedDraft p;
    p.drafter = s.drafter;
    p.drafted = static_cast<int>(s.draft.tokens.size());
    p.confidence = s.draft.confidence;
    plans_.push_back(p);
    plan_seqs_.push_back(q);
  }
  scheduler_.plan(plans_, draft_seconds);
  for (size_t i = 0; i < plans_.size(); ++i) {
    Seq& s = seqs_[plan_seqs_[i]];
    if (s.drafter < 0) continue;
    const size_t n = static_cast<size_t>(plans_[i].verify);
    // As llama.cpp's p_min cut: a draft cut below n_min is dropped.
    if (n < static_cast<size_t>(std::max(1, s.n_min))) {
      s.draft.clear();
      s.drafter = -1;
      continue;
    }
    s.draft.tokens.resize(n);
    if (!s.draft.q.empty()) s.draft.q.resize(n);
    if (s.draft.confidence.size() > n) s.draft.confidence.resize(n);
  }
}

void Generator::emit(int seq, Seq& s, std::span<const int32_t> tokens) {
  size_t n = 0;
  while (n < tokens.size()) {
    const int32_t t = tokens[n++];
    s.out.push_back(t);
    if (static_cast<int>(s.out.size()) >= s.n_predict || (params_.is_eog && params_.is_eog(t))) {
      s.active = false;
      break;
    }
  }
  stats_.generated += static_cast<int64_t>(n);
  s.n_logprobs_ready = std::min(s.n_logprobs_ready, n);
  if (on_tokens) on_tokens(seq, tokens.first(n));
  s.n_logprobs_ready = 0;
}

void Generator::verify_and_commit() {
  batch_.clear();
  for (int q = 0; q < kMaxSequences; ++q) {
    Seq& s = seqs_[q];
    if (!s.decoding()) continue;
    s.row0 = batch_.size();
    batch_.add(s.history.back(), s.anchor_pos, q, true);
    for (size_t i = 0; i < s.draft.tokens.size(); ++i) {
      batch_.add(s.draft.tokens[i], s.anchor_pos + 1 + static_cast<int32_t>(i), q, true);
    }
  }
  if (batch_.size() == 0) return;
  const double t_start = now();
  double t0 = t_start;
  target_.decode(batch_);
  ++stats_.decodes;
  for (int q = 0; q < kMaxSequences; ++q) {
    Seq& s = seqs_[q];
    if (!s.decoding()) continue;
    const size_t k = s.draft.tokens.size();
    rows_.resize(k + 1);
    for (size_t i = 0; i <= k; ++i) rows_[i] = target_.logits(s.row0 + static_cast<int64_t>(i));
    const size_t h0 = s.history.size();  // the anchor is history[h0 - 1]
    verifier_.set_params(s.sampling);
    verifier_.set_grammar(s.matcher.valid() ? &s.matcher : nullptr, params_.token_vocab.get());
    // The grammar's cut stands only if nothing else shortened the draft since.
    const Distribution* cut_q =
        s.grammar_cut && s.grammar_cut_has_q && k == s.grammar_cut_at ? &s.grammar_cut_q : nullptr;
    VerifyResult r = verifier_.verify(rows_, s.draft.tokens, s.draft.q, s.history, s.rng, cut_q);
    // A grammar that allows nothing more: the kept drafts are the sequence's last tokens.
    const bool exhausted = r.next < 0;
    ++stats_.seq_steps;
    ++s.stats.steps;
    if (k > 0) {
      ++s.stats.drafts;
      s.stats.drafted += static_cast<int64_t>(k);
      s.stats.accepted += r.n_accepted;
    }
    if (s.n_logprobs >= 0) {
      // Emitted token j was chosen from verify row j (the anchor's row first).
      const size_t n_emitted = static_cast<size_t>(r.n_accepted) + (exhausted ? 0 : 1);
      if (s.logprobs.size() < n_emitted) s.logprobs.resize(n_emitted);
      for (size_t j = 0; j < n_emitted; ++j) {
        token_logprobs(rows_[j], n_vocab_, s.history[h0 + j], static_cast<size_t>(s.n_logprobs),
                       lp_scratch_, s.logprobs[j], verifier_.row_mask(j));
      }
      s.n_logprobs_ready = n_emitted;
    }
    if (s.drafter >= 0) {
      if (k > 0) drafters_[static_cast<size_t>(s.drafter)]->on_verified(q, static_cast<int>(k), r.n_accepted);
      stats_.drafters[static_cast<size_t>(s.drafter)].add_verify(static_cast<int>(k), r.n_accepted);
      scheduler_.on_outcome(s.drafter, static_cast<int>(k), r.n_accepted);
      if (on_verify && k > 0) on_verify(q, s.drafter, s.draft, r.n_accepted);
    }
    const double t1 = now();
    stats_.t_verify += t1 - t0;
    t0 = t1;

    // history[h0 ..] now holds the kept drafts and the next token.
    emit(q, s, std::span<const int32_t>(s.history).subspan(h0));
    if (exhausted) s.active = false;
    // Forget the rejected rows; the anchor and the kept drafts stay.
    const int32_t n_kept = 1 + r.n_accepted;
    FULGUR_CHECK(target_.seq_rm(q, s.anchor_pos + n_kept, -1), "sequence ", q,
                 ": the target's memory cannot roll back to position ", s.anchor_pos + n_kept,
                 " (a recurrent target keeps ContextParams::n_rollback states back; it must "
                 "cover the longest verification batch)");
    if (s.active) {
      committed_.assign(s.history.begin() + static_cast<std::ptrdiff_t>(h0 - 1),
                        s.history.begin() + static_cast<std::ptrdiff_t>(h0 + r.n_accepted));
      row_ids_.resize(static_cast<size_t>(n_kept));
      for (int32_t i = 0; i < n_kept; ++i) row_ids_[i] = s.row0 + i;
      for (size_t di = 0; di < drafters_.size(); ++di) {
        const double c0 = now();
        drafters_[di]->commit(q, committed_, s.anchor_pos, features_[di].gather(row_ids_));
        stats_.drafters[di].t_commit += now() - c0;
      }
      s.anchor_pos += n_kept;
      s.n_past = s.anchor_pos;
    }
    const double t2 = now();
    stats_.t_commit += t2 - t0;
    t0 = t2;
  }
  scheduler_.on_step(batch_.size(), now() - t_start);
}

bool Generator::step() {
  prefill();
  draft_all();
  verify_and_commit();
  for (const Seq& s : seqs_) {
    if (s.active) return true;
  }
  return false;
}

void Generator::run() {
  while (step()) {
  }
}

}  // namespace fulgur
