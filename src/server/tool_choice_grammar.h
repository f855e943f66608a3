// tool_choice "required" or a named function, enforced: the reply is constrained to be calls
// only, in the template's format, each call's name one of the allowed tools and its arguments
// valid for that tool's `parameters` schema. Like any grammar (grammar/), it constrains the
// target's distribution and the drafts alike, so speculation stays lossless.
//
// A format whose tags are CONTROL tokens in the model's vocabulary (some Gemma 4 GGUFs' call
// tags) is enforced too: the request names those tokens (Task::grammar_control_tokens) and its
// grammar is matched against a vocabulary in which exactly they carry their text
// (server/token_vocabs.h).
#pragma once

#include <memory>

#include "grammar/grammar.h"
#include "server/tool_call_formats.h"
#include "server/tool_request.h"

namespace fulgur::server {

// Null when the choice asks for nothing (auto, none) or `calls_gbnf` is null (a format with no
// grammar for its calls). A tool whose parameters use schema keywords the grammar cannot
// express gets any JSON object as its arguments. Throws fulgur::Error when a named function is
// not among the tools (which the request parser refuses before).
std::shared_ptr<const Grammar> tool_choice_grammar(CallsGbnf calls_gbnf, const ToolSettings& tools);
inline std::shared_ptr<const Grammar> tool_choice_grammar(const ToolCallFormat& format, const ToolSettings& tools) {
  return tool_choice_grammar(format.calls_gbnf, tools);
}

}  // namespace fulgur::server
