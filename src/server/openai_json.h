// The OpenAI response shapes (chat.completion, chat.completion.chunk, text_completion) built
// from a task's text, log-probabilities and result, with llama-server's `timings` beside
// `usage` (the chat page reads tokens/s and accepted drafts from it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/request.h"
#include "server/task.h"

namespace fulgur::server {

// What every response of one request shares.
struct ResponseHead {
  std::string id;       // chatcmpl-N / cmpl-N
  int64_t created = 0;  // unix seconds
  std::string model;
  Endpoint endpoint = Endpoint::kChat;
  int n_logprobs = -1;
};

nlohmann::json usage_json(const TaskResult& r);
nlohmann::json timings_json(const TaskResult& r);

// The whole reply (stream: false). With tool calls the message carries them, its content is
// null when there is none besides them, and finish_reason is "tool_calls". A chat reply with
// reasoning (harmony's analysis channel) carries it as the message's reasoning_content.
nlohmann::json final_response(const ResponseHead& h, const std::string& text,
                              const std::vector<LogprobEntry>& logprobs, const TaskResult& r,
                              const std::vector<ToolCall>& calls = {}, const std::string& reasoning = "");

// One streamed chunk: `text` (and its log-probabilities) as the delta; `first` adds the
// assistant role (chat); finish_reason null unless `result` is given, which also adds timings
// (`made_tool_calls`: the reply's finish_reason is "tool_calls"); `reasoning`, when not empty,
// is the delta's reasoning_content (chat).
nlohmann::json stream_chunk(const ResponseHead& h, const std::string& text,
                            const std::vector<LogprobEntry>& logprobs, bool first,
                            const TaskResult* result, bool made_tool_calls = false,
                            const std::string& reasoning = "");

// The streamed deltas of one completed call, as OpenAI streams them: its index, id, type and
// name with empty arguments, then the arguments (a client joins the pieces by index).
std::vector<nlohmann::json> tool_call_chunks(const ResponseHead& h, const ToolCall& call, size_t index);
// The usage chunk of stream_options.include_usage: no choices, only usage.
nlohmann::json usage_chunk(const ResponseHead& h, const TaskResult& r);

// finish_reason as OpenAI names it (a cancelled request that still answers reads "stop"); a
// reply that ended by itself after making tool calls reads "tool_calls" (one cut at max_tokens
// stays "length").
std::string openai_finish_reason(const std::string& reason, bool made_tool_calls = false);

}  // namespace fulgur::server
