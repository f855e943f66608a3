// One request's life between an HTTP handler thread and the engine thread: the engine appends
// the text (and log-probabilities) it generates and finally marks the task done; the handler
// waits for that, sends it on, and flags a cancel when its client is gone. Everything shared is
// under the task's own mutex, so a slow client never blocks the engine.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "server/request.h"

namespace fulgur::server {

// One generated token's log-probability with its text, and the top alternatives.
struct TokenProb {
  std::string text;
  float logprob = 0.0f;
};
struct LogprobEntry {
  TokenProb token;
  std::vector<TokenProb> top;
};

// What a finished request reports (usage, llama-server-style timings, drafting).
struct TaskResult {
  std::string finish_reason;  // stop | length | cancelled | error
  std::string error;          // when finish_reason == error
  int64_t prompt_tokens = 0, reused_tokens = 0, completion_tokens = 0;
  int64_t drafted = 0, accepted = 0, verify_steps = 0;
  double queued_s = 0, prompt_s = 0, generation_s = 0;  // wait; start -> first token; the rest
};

struct Task {
  // What the engine is asked to do.
  int64_t id = 0;             // the server's request number (GET /slots' id_task)
  std::vector<int32_t> prompt;
  int n_predict = 0;
  std::vector<std::string> stop;
  CompletionRequest request;  // sampling, drafting, logprobs settings
  std::vector<int32_t> shown_control_tokens;  // rendered in the text (a tool-call format's tags)
  // CONTROL tokens the request's grammar may emit (a tool_choice grammar's tags; server/token_vocabs.h).
  std::vector<int32_t> grammar_control_tokens;
  double t_submit = 0;        // seconds, steady clock

  // Set by the handler, read by the engine before each step.
  std::atomic<bool> cancelled{false};

  // Shared state (mu).
  std::mutex mu;
  std::condition_variable cv;
  std::string text;                  // generated text not yet taken by the handler
  std::vector<LogprobEntry> logprobs;  // their log-probabilities (when asked)
  bool done = false;
  TaskResult result;

  // Waits until there is text or the task is done, at most `timeout`; moves the new text and
  // log-probabilities out. Returns whether the task is done (then `result` is final).
  bool wait_and_take(std::chrono::milliseconds timeout, std::string& out_text,
                     std::vector<LogprobEntry>& out_logprobs) {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait_for(lk, timeout, [this] { return done || !text.empty() || !logprobs.empty(); });
    out_text += text;
    text.clear();
    for (LogprobEntry& e : logprobs) out_logprobs.push_back(std::move(e));
    logprobs.clear();
    return done;
  }
};

}  // namespace fulgur::server
