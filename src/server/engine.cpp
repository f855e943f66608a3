#include "server/engine.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "core/log.h"

namespace fulgur::server {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

GeneratorParams engine_generator_params(GeneratorParams gp, const Tokenizer& tok, const EngineParams& p) {
  gp.prefill_budget = p.prefill_budget;
  // A scripted reply ends where the script does, whatever the model would have ended on.
  if (!p.ignore_eos && p.scripted_reply.empty()) gp.is_eog = [&tok](int32_t id) { return tok.is_eog(id); };
  return gp;
}

// Ends a task that never reached a slot as cancelled (its handler sees it done).
void end_cancelled(Task& t) {
  std::lock_guard<std::mutex> lk(t.mu);
  t.done = true;
  t.result.finish_reason = "cancelled";
  t.cv.notify_all();
}

}  // namespace

Engine::Engine(Context& target, const Tokenizer& tokenizer, GeneratorParams params,
               std::vector<Drafter*> drafters, EngineParams engine_params)
    : target_(target),
      tokenizer_(tokenizer),
      params_(engine_params),
      gen_(target, engine_generator_params(std::move(params), tokenizer, engine_params), std::move(drafters)),
      vocabs_(tokenizer, target.model().n_vocab()),
      n_ctx_slot_(0) {
  FULGUR_CHECK(params_.n_slots >= 1 && params_.n_slots <= kMaxSequences, "-np ", params_.n_slots,
               " must be in [1, ", kMaxSequences, "]");
  FULGUR_CHECK(params_.max_queue >= 0, "--queue ", params_.max_queue, " must be >= 0");
  FULGUR_CHECK(params_.prefill_budget >= 1, "--prefill-budget ", params_.prefill_budget, " must be >= 1");
  if (!params_.scripted_reply.empty()) params_.ignore_eos = true;
  n_ctx_slot_ = target.n_ctx() / params_.n_slots;
  FULGUR_CHECK(n_ctx_slot_ >= 2, "-c ", target.n_ctx(), " split over -np ", params_.n_slots,
               " slots leaves ", n_ctx_slot_, " tokens per request; raise -c");
  slots_.resize(static_cast<size_t>(params_.n_slots));
  slot_views_.resize(slots_.size());
  for (size_t q = 0; q < slot_views_.size(); ++q) slot_views_[q].id = static_cast<int>(q);
  metrics_.n_slots = params_.n_slots;
  FULGUR_CHECK(params_.cache_ram_bytes >= 0, "--cache-ram must be >= 0 MiB");
  if (params_.cache_ram_bytes > 0 && !gen_.can_adopt()) {
    log_info("prompt cache in host memory: off (a drafter reads the target's hidden states, which a copied "
             "memory does not hold); each slot still reuses its own prefix");
  } else if (params_.cache_ram_bytes > 0) {
    cache_ = std::make_unique<PromptCache>(params_.cache_ram_bytes);
  }
  gen_.on_tokens = [this](int seq, std::span<const int32_t> tokens) { on_tokens(seq, tokens); };
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Engine::submit(const std::shared_ptr<Task>& task) {
  std::vector<std::shared_ptr<Task>> gone;
  std::string refused;
  {
    std::lock_guard<std::mutex> lk(mu_);
    gone = take_cancelled_queued();  // a request whose client left holds no place in the queue
    int64_t busy = metrics_.busy_slots;
    // Waiting room: the free slots, then the bounded queue.
    if (static_cast<int64_t>(queue_.size()) >= params_.max_queue + (params_.n_slots - busy)) {
      ++metrics_.requests_rejected;
      refused = cat("the server is busy: ", params_.n_slots, " slots in use and ", queue_.size(),
                    " requests queued (at most ", params_.max_queue, "); retry later");
    } else {
      task->t_submit = now_s();
      queue_.push_back(task);
      metrics_.queued = static_cast<int64_t>(queue_.size());
    }
  }
  for (const std::shared_ptr<Task>& t : gone) end_cancelled(*t);
  if (!refused.empty()) throw BadRequest(503, "", refused, "server_error");
  cv_.notify_all();
}

std::vector<std::shared_ptr<Task>> Engine::take_cancelled_queued() {
  std::vector<std::shared_ptr<Task>> gone;
  for (auto it = queue_.begin(); it != queue_.end();) {
    if ((*it)->cancelled) {
      gone.push_back(std::move(*it));
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  metrics_.requests_cancelled += static_cast<int64_t>(gone.size());
  metrics_.queued = static_cast<int64_t>(queue_.size());
  return gone;
}

void Engine::notify() { cv_.notify_all(); }

EngineMetrics Engine::metrics() const {
  std::lock_guard<std::mutex> lk(mu_);
  return metrics_;
}

std::vector<SlotView> Engine::slot_views() const {
  std::lock_guard<std::mutex> lk(mu_);
  return slot_views_;
}

SlotView Engine::slot_view(int seq, const Task& task, bool processing) const {
  SlotView v;
  v.id = seq;
  v.is_processing = processing;
  v.id_task = task.id;
  v.n_prompt_tokens = static_cast<int64_t>(task.prompt.size());
  v.n_prompt_tokens_cache = gen_.seq_stats(seq).reused_tokens;
  v.n_decoded = task.result.completion_tokens;  // written by the engine thread only until done
  v.n_remain = processing ? std::max<int64_t>(0, task.n_predict - v.n_decoded) : 0;
  return v;
}

// Caller holds mu_. A free slot keeps showing its last request, as llama-server's does.
void Engine::publish_slots() {
  for (size_t q = 0; q < slots_.size(); ++q) {
    if (slots_[q].task) slot_views_[q] = slot_view(static_cast<int>(q), *slots_[q].task, true);
  }
}

// As llama-server: the free slot whose history covers the largest share of the prompt, if that
// share beats --slot-prompt-similarity; otherwise the least recently used free slot, so that a
// few common tokens (a chat template's opening) do not evict a cache another prompt will want.
int Engine::pick_slot(const std::vector<int32_t>& prompt) const {
  int best = -1, lru = -1;
  double best_share = 0;
  for (int q = 0; q < params_.n_slots; ++q) {
    const Slot& s = slots_[static_cast<size_t>(q)];
    if (s.task) continue;
    if (lru < 0 || s.last_used < slots_[static_cast<size_t>(lru)].last_used) lru = q;
    // What the slot holds: its last prompt and what was generated after it.
    const std::vector<int32_t>& out = gen_.output(q);
    size_t common = 0;
    while (common < prompt.size()) {
      const size_t i = common;
      const int32_t held = i < s.prompt.size() ? s.prompt[i]
                           : i - s.prompt.size() < out.size() ? out[i - s.prompt.size()]
                                                              : -1;
      if (held != prompt[i]) break;
      ++common;
    }
    const double share = prompt.empty() ? 0.0 : static_cast<double>(common) / static_cast<double>(prompt.size());
    if (share > best_share && share > params_.slot_prompt_similarity) {
      best = q;
      best_share = share;
    }
  }
  return best >= 0 ? best : lru;
}

// The host-memory prompt cache around slot q about to take `prompt`: what q holds is kept in the
// cache unless the prompt continues all of it, and an entry that serves a longer prefix of the
// prompt than q's own memory is copied into q.
void Engine::swap_with_cache(int q, const std::vector<int32_t>& prompt) {
  // What q's memory holds: a prefix of its last prompt and reply.
  const std::vector<int32_t>& history = gen_.history(q);
  const auto n_held = std::min<size_t>(history.size(), static_cast<size_t>(target_.seq_pos_max(q) + 1));
  const std::span<const int32_t> held(history.data(), n_held);
  const int32_t n_fresh = gen_.has_drafters() ? 2 : 1;  // as Generator::start keeps
  const int32_t limit = std::max<int32_t>(0, static_cast<int32_t>(prompt.size()) - n_fresh);
  const size_t n = std::min(held.size(), prompt.size());
  const auto common = static_cast<int32_t>(std::mismatch(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(n),
                                                         prompt.begin()).first - held.begin());
  const PromptCache::Hit hit = cache_->find(prompt, limit);
  // As for slots, a few common tokens (a chat template's opening) are not worth a copy of a
  // long entry: it must serve more than --slot-prompt-similarity of the prompt.
  const bool load = hit.entry != nullptr && hit.keep > std::min(common, limit) &&
                    static_cast<double>(hit.keep) > params_.slot_prompt_similarity * static_cast<double>(prompt.size());
  const bool keep_held = static_cast<int32_t>(held.size()) > common;
  if (!load && !keep_held) return;
  std::vector<int32_t> held_tokens(held.begin(), held.end());
  SeqState saved;
  if (keep_held) saved = target_.save_seq(q);
  if (load) {
    try {
      target_.load_seq(q, hit.entry->state);
      gen_.adopt(q, hit.entry->tokens);
      slots_[static_cast<size_t>(q)].prompt = hit.entry->tokens;
      std::lock_guard<std::mutex> mk(mu_);
      ++metrics_.cache_loads;
    } catch (const std::exception& e) {
      log_warn("prompt cache: a cached prompt of ", hit.entry->tokens.size(), " tokens was not restored: ", e.what());
    }
  }
  // A memory that does not hold exactly its tokens (cannot happen between requests) is not kept.
  if (keep_held && saved.n_pos == static_cast<int32_t>(held_tokens.size())) {
    cache_->put(std::move(held_tokens), std::move(saved));
    std::lock_guard<std::mutex> mk(mu_);
    ++metrics_.cache_saves;
  }
  std::lock_guard<std::mutex> mk(mu_);
  metrics_.cache_bytes = cache_->bytes();
  metrics_.cache_entries = static_cast<int64_t>(cache_->size());
}

void Engine::admit(std::deque<std::shared_ptr<Task>>& incoming) {
  while (!incoming.empty()) {
    std::shared_ptr<Task> task = incoming.front();
    incoming.pop_front();
    if (task->cancelled) {
      end_cancelled(*task);
      std::lock_guard<std::mutex> mk(mu_);
      ++metrics_.requests_cancelled;
      continue;
    }
    const int q = pick_slot(task->prompt);
    Slot& s = slots_[static_cast<size_t>(q)];
    const CompletionRequest& r = task->request;
    SeqOptions o;
    o.sampling = r.sampling;
    o.seed = r.seed ? *r.seed : std::random_device{}() ^ (tick_ << 32);
    o.draft = r.draft;
    o.n_max = r.spec_n_max;
    o.n_min = r.spec_n_min;
    o.p_min = r.spec_p_min;
    o.n_logprobs = r.n_logprobs;
    o.reuse_prefix = true;
    o.grammar = r.grammar;
    // Built on the first constrained request of each kind; a plain grammar never sees CONTROL tokens.
    if (o.grammar) o.token_vocab = vocabs_.get(task->grammar_control_tokens);
    if (cache_) swap_with_cache(q, task->prompt);
    s.task = task;
    s.decoder = std::make_unique<StreamDecoder>(tokenizer_);
    s.decoder->show_control_tokens(task->shown_control_tokens);
    s.stop = StopMatcher(task->stop);
    s.script_done = false;
    s.t_start = now_s();
    s.first_seen = false;
    s.last_used = ++tick_;
    {
      std::lock_guard<std::mutex> lk(task->mu);
      task->result.queued_s = s.t_start - task->t_submit;
    }
    try {
      gen_.start(q, task->prompt, task->n_predict, o);
    } catch (const std::exception& e) {
      s.prompt.clear();
      finish(q, "error", e.what());
      continue;
    }
    s.prompt = task->prompt;
    std::lock_guard<std::mutex> mk(mu_);
    ++metrics_.busy_slots;
  }
}

void Engine::on_tokens(int seq, std::span<const int32_t> tokens) {
  Slot& s = slots_[static_cast<size_t>(seq)];
  Task& t = *s.task;
  if (!s.first_seen) {
    s.first_seen = true;
    s.t_first = now_s();
  }
  const std::span<const TokenLogprobs> lps = gen_.last_logprobs(seq);
  std::string text, piece;
  std::vector<LogprobEntry> entries;
  const std::vector<int32_t>& script = params_.scripted_reply;
  for (size_t i = 0; i < tokens.size() && !s.stop.stopped() && !s.script_done; ++i) {
    piece.clear();
    const auto n_out = static_cast<size_t>(t.result.completion_tokens);
    s.decoder->push(script.empty() ? tokens[i] : script[n_out], piece);
    s.script_done = !script.empty() && n_out + 1 == script.size();
    text += s.stop.push(piece);
    ++t.result.completion_tokens;  // only the engine thread writes result before done
    if (i < lps.size()) {
      LogprobEntry e;
      e.token = {tokenizer_.token_piece(lps[i].token, false), lps[i].logprob};
      for (const auto& [id, lp] : lps[i].top) e.top.push_back({tokenizer_.token_piece(id, false), lp});
      entries.push_back(std::move(e));
    }
  }
  if (s.stop.stopped() || s.script_done) gen_.cancel(seq);
  if (text.empty() && entries.empty()) return;
  std::lock_guard<std::mutex> lk(t.mu);
  t.text += text;
  for (LogprobEntry& e : entries) t.logprobs.push_back(std::move(e));
  t.cv.notify_all();
}

void Engine::finish(int seq, const std::string& reason, const std::string& error) {
  Slot& s = slots_[static_cast<size_t>(seq)];
  std::shared_ptr<Task> task = std::move(s.task);
  s.task.reset();
  std::string tail;
  if (s.decoder && !s.stop.stopped()) {
    tail = s.stop.push(s.decoder->flush());
    tail += s.stop.flush();
  }
  const double t_end = now_s();
  const SeqStats& st = gen_.seq_stats(seq);
  {
    // Counted before the client can see the end of its reply, so /metrics never lags it.
    std::lock_guard<std::mutex> mk(mu_);
    if (reason == "error") {
      ++metrics_.requests_failed;
    } else if (reason == "cancelled") {
      ++metrics_.requests_cancelled;
    } else {
      ++metrics_.requests_done;
    }
    metrics_.prompt_tokens += static_cast<int64_t>(task->prompt.size());
    metrics_.reused_tokens += st.reused_tokens;
    metrics_.generated_tokens += task->result.completion_tokens;
    if (metrics_.busy_slots > 0 && reason != "error") --metrics_.busy_slots;
    slot_views_[static_cast<size_t>(seq)] = slot_view(seq, *task, /*processing=*/false);
  }
  std::lock_guard<std::mutex> lk(task->mu);
  task->text += tail;
  TaskResult& r = task->result;
  r.finish_reason = reason;
  r.error = error;
  r.prompt_tokens = static_cast<int64_t>(task->prompt.size());
  r.reused_tokens = st.reused_tokens;
  r.drafted = st.drafted;
  r.accepted = st.accepted;
  r.verify_steps = st.steps;
  const double t_first = s.first_seen ? s.t_first : t_end;
  r.prompt_s = t_first - s.t_start;
  r.generation_s = t_end - t_first;
  task->done = true;
  task->cv.notify_all();
}

void Engine::publish_metrics(double busy_dt) {
  std::lock_guard<std::mutex> lk(mu_);
  metrics_.busy_seconds += busy_dt;
  metrics_.generation = gen_.stats();
  metrics_.queued = static_cast<int64_t>(queue_.size());
  publish_slots();
}

void Engine::loop() {
  for (;;) {
    std::deque<std::shared_ptr<Task>> incoming;
    std::vector<std::shared_ptr<Task>> gone;
    int n_busy = 0;
    for (const Slot& s : slots_) n_busy += s.task != nullptr;
    {
      std::unique_lock<std::mutex> lk(mu_);
      if (n_busy == 0) cv_.wait(lk, [this] { return stop_ || !queue_.empty(); });
      if (stop_) break;
      // Queued requests whose client left end now, not when a slot comes free for them.
      gone = take_cancelled_queued();
      // Take as many queued requests as there are free slots; the rest wait their turn.
      while (!queue_.empty() && static_cast<int>(incoming.size()) < params_.n_slots - n_busy) {
        incoming.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      metrics_.queued = static_cast<int64_t>(queue_.size());
    }
    for (const std::shared_ptr<Task>& t : gone) end_cancelled(*t);
    // A request whose client left (or that hit a stop string) frees its slot before the step.
    for (int q = 0; q < params_.n_slots; ++q) {
      Slot& s = slots_[static_cast<size_t>(q)];
      if (s.task && s.task->cancelled) {
        gen_.cancel(q);
        finish(q, "cancelled");
      }
    }
    admit(incoming);
    n_busy = 0;
    for (const Slot& s : slots_) n_busy += s.task != nullptr;
    if (n_busy == 0) {
      publish_metrics(0);
      continue;
    }
    const double t0 = now_s();
    try {
      gen_.step();
    } catch (const std::exception& e) {
      // Should not happen (requests are validated and sized to the context); if it does, the
      // requests of this step fail and the server goes on.
      log_warn("engine step failed: ", e.what());
      for (int q = 0; q < params_.n_slots; ++q) {
        if (!slots_[static_cast<size_t>(q)].task) continue;
        gen_.cancel(q);
        finish(q, "error", e.what());
        std::lock_guard<std::mutex> mk(mu_);
        if (metrics_.busy_slots > 0) --metrics_.busy_slots;
      }
    }
    for (int q = 0; q < params_.n_slots; ++q) {
      Slot& s = slots_[static_cast<size_t>(q)];
      if (!s.task || gen_.active(q)) continue;
      const std::vector<int32_t>& out = gen_.output(q);
      const bool eog = !params_.ignore_eos && !out.empty() && tokenizer_.is_eog(out.back());
      // A grammar that allows nothing more ends the sequence short of its length, as a stop.
      const bool grammar_done = s.task->request.grammar && static_cast<int>(out.size()) < s.task->n_predict;
      finish(q, s.stop.stopped() || s.script_done || eog || grammar_done ? "stop" : "length");
    }
    publish_metrics(now_s() - t0);
  }
  // Shutting down: whatever is running or waiting ends as cancelled.
  for (int q = 0; q < params_.n_slots; ++q) {
    if (slots_[static_cast<size_t>(q)].task) finish(q, "cancelled");
  }
  std::lock_guard<std::mutex> lk(mu_);
  for (const std::shared_ptr<Task>& t : queue_) end_cancelled(*t);
  queue_.clear();
}

}  // namespace fulgur::server
