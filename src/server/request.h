// The requests of the OpenAI-compatible endpoints (POST /v1/chat/completions, /v1/completions,
// /tokenize, /detokenize), parsed and validated from their JSON bodies before anything reaches
// the engine. Everything a client can send wrong is a BadRequest naming the field (`param`, as
// OpenAI's error objects do) and what was expected; the server answers it with a 4xx JSON error
// and goes on. No model is needed here (the fuzzer runs this alone): the limits a request is
// checked against come in RequestLimits.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "grammar/grammar.h"
#include "sampling/params.h"
#include "server/tool_request.h"

namespace fulgur::server {

// A request the server refuses: HTTP status, the field at fault ("" = the body as a whole) and
// OpenAI's error type.
class BadRequest : public Error {
 public:
  BadRequest(int status, std::string param, const std::string& message,
             std::string type = "invalid_request_error")
      : Error(message), status_(status), param_(std::move(param)), type_(std::move(type)) {}
  int status() const { return status_; }
  const std::string& param() const { return param_; }
  const std::string& type() const { return type_; }

 private:
  int status_;
  std::string param_, type_;
};

// OpenAI's error body: {"error": {"message", "type", "param", "code"}}.
nlohmann::json error_body(const std::string& message, const std::string& type,
                          const std::string& param, const std::string& code = "");

struct RequestLimits {
  int64_t n_vocab = 0;    // token ids must be below this
  int64_t n_ctx_slot = 0; // a request's prompt + generated tokens fit in this
  SamplerParams sampling; // a request's settings where it is silent (serve's --temp, ...)
};

struct ChatMessage {
  std::string role;     // system | user | assistant | tool ("developer" is read as system)
  std::string content;  // text parts concatenated
  std::vector<ToolCall> tool_calls;  // assistant: the calls it made
  std::string tool_call_id;          // tool: the call this message answers
  std::string name;                  // tool: the function's name, when the client gives it
};

enum class Endpoint { kChat, kCompletion };

struct CompletionRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;
  std::vector<ChatMessage> messages;  // chat
  ToolSettings tools;                 // chat: tools, tool_choice, parallel_tool_calls
  std::string prompt;                 // completion, text prompt
  std::vector<int32_t> prompt_ids;    // completion, token-id prompt (then prompt is empty)
  bool stream = false;
  bool include_usage = false;         // stream_options.include_usage
  std::optional<int64_t> max_tokens;  // max_completion_tokens, else max_tokens
  SamplerParams sampling;             // RequestLimits::sampling where the request is silent
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  int n_logprobs = -1;                // -1: no logprobs; else the top alternatives per token
  bool echo = false;                  // completions: the reply's text starts with the prompt's
  // Drafting, llama-server's names: "speculative": {"n_max", "n_min", "p_min"}, or
  // "speculative": false to decode this request plainly.
  bool draft = true;
  int spec_n_max = 0;                 // 0: the server's own
  std::optional<int> spec_n_min;
  std::optional<float> spec_p_min;
  // Constrained output (server/grammar_request.h): response_format, grammar or json_schema.
  std::shared_ptr<const Grammar> grammar;
};

// Parses and validates a completion body; throws BadRequest.
CompletionRequest parse_completion_request(std::string_view body, Endpoint endpoint,
                                           const RequestLimits& limits);

struct TokenizeRequest {
  std::string content;
  bool add_special = false;
  bool parse_special = true;
  bool with_pieces = false;
};
TokenizeRequest parse_tokenize_request(std::string_view body);

// POST /detokenize: {"tokens": [ids]}.
std::vector<int32_t> parse_detokenize_request(std::string_view body, const RequestLimits& limits);

// The body as a JSON object, or BadRequest naming what is wrong with it.
nlohmann::json parse_body(std::string_view body);

}  // namespace fulgur::server
