#include "server/tool_choice_grammar.h"

#include "core/error.h"
#include "grammar/gbnf_parser.h"

namespace fulgur::server {

std::shared_ptr<const Grammar> tool_choice_grammar(CallsGbnf calls_gbnf, const ToolSettings& tools) {
  if (!tools.any() || !calls_gbnf) return nullptr;
  if (tools.choice != ToolChoice::kRequired && tools.choice != ToolChoice::kFunction) return nullptr;
  std::vector<nlohmann::ordered_json> functions;
  for (const nlohmann::ordered_json& tool : tools.tools) {
    const nlohmann::ordered_json& fn = tool.at("function");
    if (tools.choice == ToolChoice::kFunction && fn.at("name").get<std::string>() != tools.function) continue;
    functions.push_back(fn);
  }
  FULGUR_CHECK(!functions.empty(), "tool_choice names '", tools.function, "', which is not among the tools");
  const bool parallel = tools.parallel && tools.choice == ToolChoice::kRequired;
  return std::make_shared<Grammar>(parse_gbnf(calls_gbnf(functions, parallel), "tool-calls"));
}

}  // namespace fulgur::server
