// The tool (function-calling) side of a chat request, OpenAI's shapes: `tools` (functions with a
// name, a description and a JSON-schema `parameters`), `tool_choice`, `parallel_tool_calls`,
// and the `tool_calls` an assistant message carries back in a later turn. Validated here; what
// is wrong is a BadRequest (400) naming the field.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace fulgur::server {

// One function call, as OpenAI writes it in a message (and as a reply's parser produces it).
struct ToolCall {
  std::string id;         // call_... (a reply's); a request's may be any string
  std::string name;
  std::string arguments;  // JSON text: OpenAI sends and expects a string, not an object
};

enum class ToolChoice {
  kAuto,      // the model decides
  kNone,      // no calls: the reply is not parsed for them (the template still sees the tools)
  kRequired,  // at least one call: enforced by a grammar where the format allows (tool_choice_grammar.h)
  kFunction,  // this one function: enforced as kRequired is
};

struct ToolSettings {
  // The request's `tools` as sent, key order kept (HF renders them with tojson in that order);
  // empty when there are none.
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  ToolChoice choice = ToolChoice::kAuto;
  std::string function;   // kFunction: its name (one of the tools)
  bool parallel = true;   // false: the reply's first call only

  bool any() const { return !tools.empty(); }
  // Whether the reply is parsed for calls.
  bool parse_calls() const { return any() && choice != ToolChoice::kNone; }
};

// OpenAI's limits: at most 128 tools; a function name is 1-64 of [A-Za-z0-9_-].
constexpr size_t kMaxTools = 128;
bool valid_function_name(std::string_view name);

// Reads tools, tool_choice and parallel_tool_calls from the parsed body; `raw_body` is parsed
// again, key order kept, for the tools themselves.
ToolSettings parse_tool_settings(const nlohmann::json& body, std::string_view raw_body);

// An assistant message's `tool_calls` (param: "messages[i].tool_calls").
std::vector<ToolCall> parse_message_tool_calls(const nlohmann::json& calls, const std::string& param);

}  // namespace fulgur::server
