// Gemma 4's tool calls as a grammar, for tool_choice required / a named function: the reply is
// calls only, each `<|tool_call>call:NAME{ARGS}<tool_call|>` (several in a row when parallel),
// ARGS in Gemma 4's own value syntax as its chat template writes arguments (format_argument):
// keys bare and sorted by name as Jinja's dictsort sorts them, strings between <|"|> quotes
// with no escapes, JSON's numbers, true, false and null, nested {...} and [...], no spaces.
//
// What the parameters' schema can say here: type (one or a list), properties with required
// (an absent optional key is left out), items with minItems / maxItems, enum and const (of any
// values, written in Gemma's syntax), anyOf / oneOf, and additionalProperties beside no
// properties (a map). A function whose schema says anything else ($ref, a string's length or
// pattern, ...) gets any arguments object. A string value cannot hold "<|" or "|>": the reader
// would take them for a tag (each of Gemma's tags starts with "<|" or ends with "|>").
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fulgur::server {

// ToolCallFormat::calls_gbnf for the gemma4 format.
std::string gemma4_calls_gbnf(const std::vector<nlohmann::ordered_json>& functions, bool parallel);

}  // namespace fulgur::server
