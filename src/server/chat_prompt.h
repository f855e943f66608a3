// A chat request as its model's chat template sees it: the context Hugging Face's
// apply_chat_template builds (messages with their tool calls and tool results, `tools`,
// add_generation_prompt), rendered to the prompt text; and the tool-call format the reply will
// be read in. Shared by the server and the request fuzzer.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "jinja/chat_template.h"
#include "server/request.h"
#include "server/tool_call_formats.h"

namespace fulgur::server {

// Whether a template can describe tools to the model at all: one that never reads the `tools`
// variable would drop them without a word.
bool template_takes_tools(std::string_view template_source);

// The template context of a chat request. Messages are written as OpenAI sends them, with two
// adjustments templates need (llama.cpp makes the same): a message's content is always a
// string ("" for an assistant message that only calls tools; templates test it with `in` and
// string methods), and a call's `arguments` JSON text is given as the object it encodes
// (templates iterate it with `|items` or write it with `tojson`; text that is not a JSON object
// is passed as the string). `tools` is the request's tools, or null (HF passes None) when it
// has none.
nlohmann::ordered_json chat_template_context(const CompletionRequest& r);

// The prompt text; BadRequest (400) when the template refuses the messages, or when the
// request offers tools (tool_choice other than "none") to a template without tool support.
std::string render_chat_prompt(const ChatTemplate& tmpl, const CompletionRequest& r);

// The format the reply is read in: null when the request does not ask for calls (no tools, or
// tool_choice "none": then the reply is plain content, as llama-server does); BadRequest (400)
// when it does but the template's format is not one this server reads.
const ToolCallFormat* reply_tool_call_format(const ChatTemplate& tmpl, const CompletionRequest& r);

}  // namespace fulgur::server
