// Continuous batching (DESIGN §2, server/): one engine thread owns the target, its drafters and
// one Generator, and runs the speculative loop over every active request. Requests are queued
// (bounded: past the bound, submit() refuses with 503), each takes a free slot (a generator
// sequence) at the next step, its prompt prefilled in chunks under a per-step token budget so
// that running streams keep streaming; each has its own sampler, seed, drafting settings and
// statistics. A cancelled request (its client went away, or a stop string appeared) is stopped
// and its slot freed at the next step.
//
// Prompt cache: a slot keeps what its last request left in the KV cache; a new request goes to
// the free slot whose history covers the largest share of its prompt (above
// slot_prompt_similarity; else the least recently used slot), and reuses those cells
// (Generator's SeqOptions::reuse_prefix). Beside the slots, a host-memory prompt cache
// (server/prompt_cache.h, llama-server's --cache-ram) keeps the memory of slots handed to other
// prompts, so that a later request sharing a longer prefix with one of those than with any slot
// gets it back by a copy instead of a prefill.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/prompt_cache.h"
#include "server/stop_strings.h"
#include "server/task.h"
#include "server/token_vocabs.h"
#include "speculative/generator.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

namespace fulgur::server {

struct EngineParams {
  int n_slots = 4;              // concurrent requests (generator sequences), <= kMaxSequences
  int max_queue = 64;           // requests waiting for a slot; more get 503
  int64_t prefill_budget = 256; // prompt tokens prefilled per step, over all slots
  // A free slot is chosen for its cache when its history covers more than this share of the
  // prompt (llama-server's --slot-prompt-similarity); else the least recently used one.
  double slot_prompt_similarity = 0.1;
  // The host-memory prompt cache's budget in bytes (llama-server's --cache-ram, in MiB there);
  // 0: no cache. Off with drafters that read the target's features (Generator::can_adopt).
  int64_t cache_ram_bytes = int64_t{8192} << 20;
  bool ignore_eos = false;
  // Testing only (serve --scripted-reply): when not empty, every reply is these tokens, one for
  // each token the model generates (the model still runs; its choices are replaced), and ends
  // with finish_reason "stop" after the last. It lets client tests see a given reply, such as a
  // tool call, from a random-weight model. Log-probabilities stay the model's.
  std::vector<int32_t> scripted_reply;
};

// Counters for /metrics (a consistent copy).
struct EngineMetrics {
  int64_t requests_done = 0, requests_cancelled = 0, requests_failed = 0, requests_rejected = 0;
  int64_t prompt_tokens = 0, reused_tokens = 0, generated_tokens = 0;
  int64_t queued = 0, busy_slots = 0, n_slots = 0;
  // The host-memory prompt cache: its size now, the slots' memories kept in it and those
  // copied back to a slot instead of a prefill.
  int64_t cache_bytes = 0, cache_entries = 0, cache_saves = 0, cache_loads = 0;
  double busy_seconds = 0;  // time with at least one slot busy
  GenerationStats generation;
};

// One slot as GET /slots shows it (llama-server's fields), as of the engine's last step.
struct SlotView {
  int id = 0;
  bool is_processing = false;
  int64_t id_task = -1;            // the request it runs or ran last; -1: none yet
  int64_t n_prompt_tokens = 0;     // that request's prompt
  int64_t n_prompt_tokens_cache = 0;  // of which reused from the slot's cache
  int64_t n_decoded = 0;           // tokens generated so far
  int64_t n_remain = 0;            // tokens it may still generate
};

class Engine {
 public:
  // target, tokenizer and drafters must outlive the engine. Starts the engine thread.
  Engine(Context& target, const Tokenizer& tokenizer, GeneratorParams params,
         std::vector<Drafter*> drafters, EngineParams engine_params);
  ~Engine();  // stops the thread; unfinished tasks end as cancelled
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Tokens of context one request may use (prompt + generated): the context split evenly.
  int64_t n_ctx_slot() const { return n_ctx_slot_; }

  // Queues a task (prompt, n_predict, stop and request filled in). Throws BadRequest 503 when
  // the queue is full.
  void submit(const std::shared_ptr<Task>& task);
  // Wakes the engine so that it notices a cancelled task at once.
  void notify();

  EngineMetrics metrics() const;
  std::vector<SlotView> slot_views() const;
  int n_slots() const { return params_.n_slots; }
  bool drafting() const { return gen_.has_drafters(); }

 private:
  struct Slot {
    std::shared_ptr<Task> task;            // null: free
    std::vector<int32_t> prompt;           // the last request's prompt (for the prefix choice)
    uint64_t last_used = 0;
    std::unique_ptr<StreamDecoder> decoder;
    StopMatcher stop;
    bool script_done = false;              // EngineParams::scripted_reply fully sent
    double t_start = 0, t_first = 0;
    bool first_seen = false;
  };

  void loop();
  void admit(std::deque<std::shared_ptr<Task>>& incoming);
  // Caller holds mu_: takes the queued tasks whose client is gone out of the queue, counted as
  // cancelled; the caller ends them (done, "cancelled") once it has let go of mu_.
  std::vector<std::shared_ptr<Task>> take_cancelled_queued();
  int pick_slot(const std::vector<int32_t>& prompt) const;
  void swap_with_cache(int seq, const std::vector<int32_t>& prompt);
  void on_tokens(int seq, std::span<const int32_t> tokens);
  void finish(int seq, const std::string& reason, const std::string& error = "");
  void publish_metrics(double busy_dt);
  SlotView slot_view(int seq, const Task& task, bool processing) const;
  void publish_slots();  // slot_views_ from slots_ (engine thread)

  Context& target_;
  const Tokenizer& tokenizer_;
  EngineParams params_;
  Generator gen_;
  TokenVocabs vocabs_;  // the grammars' token bytes, by the CONTROL tokens they may emit
  int64_t n_ctx_slot_;
  std::vector<Slot> slots_;  // [n_slots]; only the engine thread touches them
  std::unique_ptr<PromptCache> cache_;  // null: no host-memory prompt cache
  uint64_t tick_ = 0;

  mutable std::mutex mu_;  // guards queue_, stop_, metrics_, slot_views_
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Task>> queue_;
  bool stop_ = false;
  EngineMetrics metrics_;
  std::vector<SlotView> slot_views_;
  std::thread thread_;
};

}  // namespace fulgur::server
