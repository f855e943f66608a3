// How each chat-template family writes a tool call in the model's reply, one table entry per
// family: the text that opens a call block, the text that closes it, how to recognise the
// family from the template's source, and how to read the calls out of one block. A new family
// (gpt-oss harmony's `to=functions.NAME` channel) is one more
// entry in kToolCallFormats (tool_call_formats.cpp) and its block reader.
//
// Facts from the published templates (and llama.cpp's common/chat.cpp, which detects the same):
//   qwen3-json   Qwen3, Qwen2.5 (Hermes style): <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>
//   qwen3-xml    Qwen3.5, Qwen3-Coder, Nemotron 3 Nano: <tool_call>\n<function=NAME>\n
//                <parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call>
//   nemotron-h   Nemotron-H / Nemotron Nano 2: <TOOLCALL>[{"name": ..., "arguments": {...}}, ...]</TOOLCALL>
//   gemma4       Gemma 4: <|tool_call>call:NAME{key:<|"|>text<|"|>,n:1,list:[true,null],obj:{k:2}}<tool_call|>
//                (keys bare, strings between <|"|> quotes with no escapes, several blocks in a row;
//                the template writes the keys sorted by name, case-insensitively, as Jinja's dictsort)
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/tool_request.h"

namespace fulgur::server {

// For tool_choice required / a named function: a GBNF grammar whose rule `tool-calls` is a
// reply that is only calls (one, or one or more when `parallel`) of these functions (the
// request's `function` objects), each with arguments their `parameters` allow (any, where the
// schema uses keywords the grammar cannot express).
using CallsGbnf = std::string (*)(const std::vector<nlohmann::ordered_json>& functions, bool parallel);

struct ToolCallFormat {
  std::string_view family;
  std::string_view open, close;
  // A tag inside a block besides open and close (Gemma 4's string quote), "" if none. Where a
  // vocabulary has the tags as CONTROL tokens, the reply shows them so they can be read.
  std::string_view inner_tag;
  // Whether a chat template (its source text) writes calls in this format.
  bool (*recognizes)(std::string_view template_source);
  // The calls in the text between `open` and `close` (ids left empty, arguments as compact JSON
  // text); nullopt when the block is malformed. `tools` is the request's tools array: a format
  // whose values are untyped text reads their types from the parameters' schema.
  std::optional<std::vector<ToolCall>> (*read_block)(std::string_view block, const nlohmann::ordered_json& tools);
  // The grammar of a reply of calls only (CallsGbnf); null where the choice is not enforced.
  CallsGbnf calls_gbnf;
};

// Every known format, in the order they are tried on a template (the most specific first).
std::span<const ToolCallFormat> tool_call_formats();

// The format a chat template writes calls in; null when none is known.
const ToolCallFormat* tool_call_format_for(std::string_view template_source);

// What the call grammars share:
// a function's `parameters` if the JSON-schema grammar can express them, else any object;
nlohmann::ordered_json arguments_schema(const nlohmann::ordered_json& function);
// GBNF rules defining rule `name` (and helpers named after it): any text without "<|" or "|>"
// in it, so that it cannot spell (nor end inside) a tag of the formats that delimit free text
// with "<|...|>"-style tags (Gemma 4's string quote and call tags).
std::string tagless_text_gbnf(const std::string& name);

}  // namespace fulgur::server
