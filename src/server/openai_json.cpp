#include "server/openai_json.h"

namespace fulgur::server {
namespace {

using nlohmann::json;

// The bytes of a token's text as integers (OpenAI's `bytes`: tokens need not be valid UTF-8).
json bytes_json(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

// Token text in JSON must be valid UTF-8; a byte-level piece that splits a character is shown
// with U+FFFD in place of the partial bytes (its exact bytes are in `bytes`).
std::string printable(const std::string& s) {
  return json::parse(json(s).dump(-1, ' ', false, json::error_handler_t::replace)).get<std::string>();
}

json chat_logprobs(const std::vector<LogprobEntry>& entries) {
  json content = json::array();
  for (const LogprobEntry& e : entries) {
    json top = json::array();
    for (const TokenProb& t : e.top) {
      top.push_back({{"token", printable(t.text)}, {"logprob", t.logprob}, {"bytes", bytes_json(t.text)}});
    }
    content.push_back({{"token", printable(e.token.text)}, {"logprob", e.token.logprob},
                       {"bytes", bytes_json(e.token.text)}, {"top_logprobs", top}});
  }
  return {{"content", content}};
}

// Legacy completions: parallel arrays, top_logprobs as {token: logprob} objects.
json completion_logprobs(const std::vector<LogprobEntry>& entries, size_t offset0) {
  json tokens = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  size_t offset = offset0;
  for (const LogprobEntry& e : entries) {
    tokens.push_back(printable(e.token.text));
    lps.push_back(e.token.logprob);
    json top = json::object();
    for (const TokenProb& t : e.top) top[printable(t.text)] = t.logprob;
    tops.push_back(top);
    offsets.push_back(offset);
    offset += e.token.text.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

json logprobs_json(const ResponseHead& h, const std::vector<LogprobEntry>& entries) {
  if (h.n_logprobs < 0) return nullptr;
  return h.endpoint == Endpoint::kChat ? chat_logprobs(entries) : completion_logprobs(entries, 0);
}

json head_json(const ResponseHead& h, const char* object) {
  return {{"id", h.id}, {"object", object}, {"created", h.created}, {"model", h.model},
          {"system_fingerprint", "fulgur"}};
}

}  // namespace

std::string openai_finish_reason(const std::string& reason, bool made_tool_calls) {
  if (reason == "length") return "length";
  return made_tool_calls ? "tool_calls" : "stop";
}

json usage_json(const TaskResult& r) {
  return {{"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", r.completion_tokens},
          {"total_tokens", r.prompt_tokens + r.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", r.reused_tokens}}}};
}

json timings_json(const TaskResult& r) {
  const int64_t prompt_n = r.prompt_tokens - r.reused_tokens;
  return {{"prompt_n", prompt_n},
          {"cache_n", r.reused_tokens},
          {"prompt_ms", r.prompt_s * 1e3},
          {"prompt_per_second", r.prompt_s > 0 ? static_cast<double>(prompt_n) / r.prompt_s : 0.0},
          {"predicted_n", r.completion_tokens},
          {"predicted_ms", r.generation_s * 1e3},
          // The first token comes with the prompt; the rate counts the ones after it.
          {"predicted_per_second",
           r.generation_s > 0 ? static_cast<double>(std::max<int64_t>(r.completion_tokens - 1, 0)) / r.generation_s : 0.0},
          {"queued_ms", r.queued_s * 1e3},
          {"draft_n", r.drafted},
          {"draft_n_accepted", r.accepted},
          {"verify_steps", r.verify_steps}};
}

json final_response(const ResponseHead& h, const std::string& text, const std::vector<LogprobEntry>& logprobs,
                    const TaskResult& r, const std::vector<ToolCall>& calls, const std::string& reasoning) {
  json choice = {{"index", 0}, {"logprobs", logprobs_json(h, logprobs)},
                 {"finish_reason", openai_finish_reason(r.finish_reason, !calls.empty())}};
  json out;
  if (h.endpoint == Endpoint::kChat) {
    out = head_json(h, "chat.completion");
    choice["message"] = {{"role", "assistant"}, {"content", text.empty() && !calls.empty() ? json(nullptr) : json(text)}};
    if (!reasoning.empty()) choice["message"]["reasoning_content"] = reasoning;
    if (!calls.empty()) {
      json tc = json::array();
      for (const ToolCall& c : calls) {
        tc.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
      }
      choice["message"]["tool_calls"] = std::move(tc);
    }
  } else {
    out = head_json(h, "text_completion");
    choice["text"] = text;
  }
  out["choices"] = json::array({choice});
  out["usage"] = usage_json(r);
  out["timings"] = timings_json(r);
  return out;
}

json stream_chunk(const ResponseHead& h, const std::string& text, const std::vector<LogprobEntry>& logprobs,
                  bool first, const TaskResult* result, bool made_tool_calls, const std::string& reasoning) {
  json choice = {{"index", 0}, {"logprobs", logprobs.empty() ? json(nullptr) : logprobs_json(h, logprobs)}};
  choice["finish_reason"] = result ? json(openai_finish_reason(result->finish_reason, made_tool_calls)) : json(nullptr);
  json out;
  if (h.endpoint == Endpoint::kChat) {
    out = head_json(h, "chat.completion.chunk");
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || (first && !result)) delta["content"] = text;
    if (!reasoning.empty()) delta["reasoning_content"] = reasoning;
    choice["delta"] = delta;
  } else {
    out = head_json(h, "text_completion");
    choice["text"] = text;
  }
  out["choices"] = json::array({choice});
  if (result) out["timings"] = timings_json(*result);
  return out;
}

std::vector<json> tool_call_chunks(const ResponseHead& h, const ToolCall& call, size_t index) {
  const auto chunk = [&](json tool_call) {
    json out = head_json(h, "chat.completion.chunk");
    out["choices"] = json::array({{{"index", 0},
                                   {"delta", {{"tool_calls", json::array({std::move(tool_call)})}}},
                                   {"logprobs", nullptr},
                                   {"finish_reason", nullptr}}});
    return out;
  };
  return {chunk({{"index", index}, {"id", call.id}, {"type", "function"},
                 {"function", {{"name", call.name}, {"arguments", ""}}}}),
          chunk({{"index", index}, {"function", {{"arguments", call.arguments}}}})};
}

json usage_chunk(const ResponseHead& h, const TaskResult& r) {
  json out = head_json(h, h.endpoint == Endpoint::kChat ? "chat.completion.chunk" : "text_completion");
  out["choices"] = json::array();
  out["usage"] = usage_json(r);
  return out;
}

}  // namespace fulgur::server
