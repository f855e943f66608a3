#include "server/tool_choice_grammar.h"

#include "core/error.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"

namespace fulgur::server {
namespace {

using nlohmann::ordered_json;

const ordered_json kAnyObject = {{"type", "object"}};

// {"name": NAME, "arguments": ARGS} with the keys in that order, as the templates write them.
ordered_json call_schema(const std::string& name, const ordered_json& parameters) {
  ordered_json props = ordered_json::object();
  props["name"] = {{"const", name}};
  props["arguments"] = parameters;
  return {{"type", "object"}, {"properties", props}, {"required", {"name", "arguments"}}};
}

// The tool's parameters if the grammar can express them, else any object.
ordered_json arguments_schema(const ordered_json& function) {
  const auto it = function.find("parameters");
  if (it == function.end()) return kAnyObject;
  try {
    (void)json_schema_to_gbnf(*it);
    return *it;
  } catch (const Error&) {
    return kAnyObject;
  }
}

}  // namespace

std::shared_ptr<const Grammar> tool_choice_grammar(const ToolCallFormat& format, const ToolSettings& tools) {
  if (!tools.any() || !format.calls_gbnf) return nullptr;
  if (tools.choice != ToolChoice::kRequired && tools.choice != ToolChoice::kFunction) return nullptr;
  ordered_json calls = ordered_json::array();
  for (const ordered_json& tool : tools.tools) {
    const ordered_json& fn = tool.at("function");
    const std::string name = fn.at("name").get<std::string>();
    if (tools.choice == ToolChoice::kFunction && name != tools.function) continue;
    calls.push_back(call_schema(name, arguments_schema(fn)));
  }
  FULGUR_CHECK(!calls.empty(), "tool_choice names '", tools.function, "', which is not among the tools");
  const ordered_json schema = calls.size() == 1 ? calls[0] : ordered_json{{"anyOf", calls}};
  const bool parallel = tools.parallel && tools.choice == ToolChoice::kRequired;
  return std::make_shared<Grammar>(parse_gbnf(json_schema_to_gbnf(schema) + format.calls_gbnf(parallel), "tool-calls"));
}

}  // namespace fulgur::server
