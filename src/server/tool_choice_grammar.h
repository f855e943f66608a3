// tool_choice "required" or a named function, enforced: the reply is constrained to be calls
// only, in the template's format, each call's name one of the allowed tools and its arguments
// valid for that tool's `parameters` schema. Like any grammar (grammar/), it constrains the
// target's distribution and the drafts alike, so speculation stays lossless.
#pragma once

#include <memory>

#include "grammar/grammar.h"
#include "server/tool_call_formats.h"
#include "server/tool_request.h"

namespace fulgur::server {

// Null when the choice asks for nothing (auto, none) or the format has no grammar for its calls
// (gemma4: its call tags are CONTROL tokens, which grammars never allow, so the choice is read
// but not enforced). A tool whose parameters use
// schema keywords the grammar cannot express gets any JSON object as its arguments.
std::shared_ptr<const Grammar> tool_choice_grammar(const ToolCallFormat& format, const ToolSettings& tools);

}  // namespace fulgur::server
