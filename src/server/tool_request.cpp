#include "server/tool_request.h"

#include <set>

#include "server/json_fields.h"

namespace fulgur::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// A function name must be safe to write into any template's markup (`<function=NAME>`) and to
// find again in the reply, which OpenAI's own rule already guarantees.
std::string checked_name(const ordered_json& v, const std::string& param) {
  const std::string name = get_string(v, param);
  if (!valid_function_name(name)) {
    bad(param, cat("'", param, "' is \"", name, "\"; a function name is 1-64 characters of a-z, A-Z, 0-9, _ and -"));
  }
  return name;
}

void check_tool(const ordered_json& t, const std::string& p, std::set<std::string>& names) {
  if (!t.is_object()) bad(p, cat("'", p, "' must be an object, got ", t.type_name()));
  const ordered_json* type = field(t, "type");
  if (!type || !type->is_string() || type->get<std::string>() != "function") {
    bad(p + ".type", cat("'", p, ".type' must be \"function\" (the only kind of tool this server offers)"));
  }
  const ordered_json* fn = field(t, "function");
  if (!fn) bad(p + ".function", cat("'", p, ".function' is missing"));
  if (!fn->is_object()) bad(p + ".function", cat("'", p, ".function' must be an object, got ", fn->type_name()));
  const std::string fp = p + ".function";
  const ordered_json* name = field(*fn, "name");
  if (!name) bad(fp + ".name", cat("'", fp, ".name' is missing"));
  if (!names.insert(checked_name(*name, fp + ".name")).second) {
    bad(fp + ".name", cat("'", fp, ".name': two tools are named \"", name->get<std::string>(), "\""));
  }
  if (const ordered_json* d = field(*fn, "description")) get_string(*d, fp + ".description");
  if (const ordered_json* s = field(*fn, "parameters"); s && !s->is_object()) {
    bad(fp + ".parameters", cat("'", fp, ".parameters' must be a JSON schema object, got ", s->type_name()));
  }
  get_bool(*fn, "strict", fp + ".strict");
}

ordered_json read_tools(std::string_view raw_body) {
  // The body has parsed once already, so this cannot fail.
  const ordered_json body = ordered_json::parse(raw_body);
  const ordered_json* tools = field(body, "tools");
  if (!tools) return ordered_json::array();
  if (!tools->is_array()) bad("tools", cat("'tools' must be an array of tools, got ", tools->type_name()));
  if (tools->size() > kMaxTools) bad("tools", cat("'tools' has ", tools->size(), " tools, at most ", kMaxTools));
  std::set<std::string> names;
  for (size_t i = 0; i < tools->size(); ++i) check_tool((*tools)[i], cat("tools[", i, "]"), names);
  return *tools;
}

bool has_function(const ordered_json& tools, const std::string& name) {
  for (const ordered_json& t : tools) {
    if (t["function"]["name"] == name) return true;
  }
  return false;
}

void read_tool_choice(const json& body, ToolSettings& s) {
  const json* c = field(body, "tool_choice");
  if (!c) return;
  if (c->is_string()) {
    const std::string v = c->get<std::string>();
    if (v == "auto") {
      s.choice = ToolChoice::kAuto;
    } else if (v == "none") {
      s.choice = ToolChoice::kNone;
    } else if (v == "required") {
      s.choice = ToolChoice::kRequired;
    } else {
      bad("tool_choice", cat("'tool_choice' is \"", v, "\"; expected \"auto\", \"none\", \"required\" or "
                             "{\"type\": \"function\", \"function\": {\"name\": ...}}"));
    }
  } else if (c->is_object()) {
    const json* type = field(*c, "type");
    if (!type || !type->is_string() || type->get<std::string>() != "function") {
      bad("tool_choice.type", "'tool_choice.type' must be \"function\"");
    }
    const json* fn = field(*c, "function");
    if (!fn || !fn->is_object()) bad("tool_choice.function", "'tool_choice.function' must be an object {\"name\": ...}");
    const json* name = field(*fn, "name");
    if (!name) bad("tool_choice.function.name", "'tool_choice.function.name' is missing");
    s.function = get_string(*name, "tool_choice.function.name");
    s.choice = ToolChoice::kFunction;
  } else {
    bad("tool_choice", cat("'tool_choice' must be a string or an object, got ", c->type_name()));
  }
  if ((s.choice == ToolChoice::kRequired || s.choice == ToolChoice::kFunction) && !s.any()) {
    bad("tool_choice", "'tool_choice' asks for a tool call but 'tools' is empty or missing");
  }
  if (s.choice == ToolChoice::kFunction && !has_function(s.tools, s.function)) {
    bad("tool_choice.function.name",
        cat("'tool_choice.function.name' is \"", s.function, "\", which is not one of the request's tools"));
  }
}

}  // namespace

bool valid_function_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

ToolSettings parse_tool_settings(const json& body, std::string_view raw_body) {
  // The deprecated single-function API would otherwise be ignored without a word.
  if (field(body, "functions")) bad("functions", "'functions' (deprecated by OpenAI) is not supported; use 'tools'");
  if (field(body, "function_call")) bad("function_call", "'function_call' (deprecated by OpenAI) is not supported; use 'tool_choice'");
  ToolSettings s;
  if (field(body, "tools")) s.tools = read_tools(raw_body);
  read_tool_choice(body, s);
  s.parallel = get_bool(body, "parallel_tool_calls", "parallel_tool_calls").value_or(true);
  return s;
}

std::vector<ToolCall> parse_message_tool_calls(const json& calls, const std::string& param) {
  if (!calls.is_array()) bad(param, cat("'", param, "' must be an array, got ", calls.type_name()));
  std::vector<ToolCall> out;
  for (size_t i = 0; i < calls.size(); ++i) {
    const json& c = calls[i];
    const std::string p = cat(param, "[", i, "]");
    if (!c.is_object()) bad(p, cat("'", p, "' must be an object, got ", c.type_name()));
    const json* type = field(c, "type");
    if (type && (!type->is_string() || type->get<std::string>() != "function")) {
      bad(p + ".type", cat("'", p, ".type' must be \"function\""));
    }
    ToolCall call;
    if (const json* id = field(c, "id")) call.id = get_string(*id, p + ".id");
    const json* fn = field(c, "function");
    if (!fn) bad(p + ".function", cat("'", p, ".function' is missing"));
    if (!fn->is_object()) bad(p + ".function", cat("'", p, ".function' must be an object, got ", fn->type_name()));
    const json* name = field(*fn, "name");
    if (!name) bad(p + ".function.name", cat("'", p, ".function.name' is missing"));
    call.name = checked_name(ordered_json(*name), p + ".function.name");
    // OpenAI sends the arguments as JSON text; an object (some clients send one) is taken too.
    if (const json* a = field(*fn, "arguments")) {
      if (a->is_object()) {
        call.arguments = a->dump();
      } else {
        call.arguments = get_string(*a, p + ".function.arguments");
      }
    }
    out.push_back(std::move(call));
  }
  return out;
}

}  // namespace fulgur::server
