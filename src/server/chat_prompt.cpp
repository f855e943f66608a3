#include "server/chat_prompt.h"

namespace fulgur::server {
namespace {

using nlohmann::ordered_json;

ordered_json call_arguments(const std::string& text) {
  ordered_json args = ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  return !args.is_discarded() && args.is_object() ? args : ordered_json(text);
}

ordered_json message_json(const ChatMessage& m) {
  ordered_json j = {{"role", m.role}, {"content", m.content}};
  if (!m.tool_calls.empty()) {
    ordered_json calls = ordered_json::array();
    for (const ToolCall& c : m.tool_calls) {
      calls.push_back({{"id", c.id},
                       {"type", "function"},
                       {"function", {{"name", c.name}, {"arguments", call_arguments(c.arguments)}}}});
    }
    j["tool_calls"] = std::move(calls);
  }
  if (m.role == "tool") {
    j["tool_call_id"] = m.tool_call_id;
    if (!m.name.empty()) j["name"] = m.name;
  }
  return j;
}

std::string known_formats() {
  std::string out;
  for (const ToolCallFormat& f : tool_call_formats()) out += cat(out.empty() ? "" : ", ", f.family, " (", f.open, ")");
  return out;
}

}  // namespace

bool template_takes_tools(std::string_view template_source) {
  return template_source.find("tools") != std::string_view::npos;
}

ordered_json chat_template_context(const CompletionRequest& r) {
  ordered_json ctx;
  ctx["messages"] = ordered_json::array();
  for (const ChatMessage& m : r.messages) ctx["messages"].push_back(message_json(m));
  ctx["tools"] = r.tools.any() ? r.tools.tools : ordered_json(nullptr);
  ctx["add_generation_prompt"] = true;
  return ctx;
}

std::string render_chat_prompt(const ChatTemplate& tmpl, const CompletionRequest& r) {
  if (r.tools.parse_calls() && !template_takes_tools(tmpl.source())) {
    throw BadRequest(400, "tools",
                     "the model's chat template has no tool support (it never reads 'tools'), so it cannot offer "
                     "them to the model; send the request without 'tools', or serve with --chat-template-file "
                     "naming a template that supports tools");
  }
  try {
    return tmpl.render_ordered(chat_template_context(r));
  } catch (const Error& e) {
    throw BadRequest(400, "messages", cat("the chat template refused the messages: ", e.what()));
  }
}

const ToolCallFormat* reply_tool_call_format(const ChatTemplate& tmpl, const CompletionRequest& r) {
  if (!r.tools.parse_calls()) return nullptr;
  const ToolCallFormat* f = tool_call_format_for(tmpl.source());
  if (!f) {
    throw BadRequest(400, "tools",
                     cat("the model's chat template takes tools, but it writes tool calls in a format this server "
                         "does not read yet (it reads: ", known_formats(), ")"));
  }
  return f;
}

}  // namespace fulgur::server
