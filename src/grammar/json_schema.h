// JSON schema -> GBNF, for the subset that structured-output clients send (OpenAI's strict
// mode, pydantic, zod):
//
//   type           object, array, string, number, integer, boolean, null, or a list of them
//   object         properties + required: keys in the order required-then-optional, each in
//                  the schema's order, no other keys (strict mode, as additionalProperties:
//                  false); with no properties, additionalProperties: SCHEMA gives a map, and
//                  otherwise any object
//   array          items, minItems, maxItems
//   string         minLength, maxLength
//   enum, const    any JSON values, written as JSON writes them
//   anyOf, oneOf   alternatives (oneOf is not checked for exclusivity); allOf of one schema
//   $ref           "#", "#/$defs/NAME", "#/definitions/NAME" (recursion allowed)
//
// Annotations (title, description, default, examples, ...) are ignored. Anything that would
// constrain the output in a way the grammar does not (pattern, format, minimum, ...) is an
// error naming the keyword and where it is, never silently dropped. Whitespace between tokens
// is bounded (a space, or a newline and up to 20 spaces / tabs), numbers have at most 16 digits
// before and after the point, so a model cannot run on forever inside them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"

namespace fulgur {

// Throws fulgur::Error ("json schema: at /properties/x: ...").
std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema);
// The same for several schemas in one grammar: rule NAME for each (NAME, schema), the shared
// JSON rules (value, object, string, number, integer, boolean, null, ws) once. The names must
// be distinct GBNF rule names that none of those shared ones is.
std::string json_schemas_to_gbnf(const std::vector<std::pair<std::string, nlohmann::ordered_json>>& rules);
Grammar json_schema_grammar(const nlohmann::ordered_json& schema);

// Any JSON object (OpenAI's response_format {"type": "json_object"}).
std::string json_object_gbnf();

// s as a GBNF string literal, quotes included.
std::string gbnf_literal(const std::string& s);

// A GBNF expression: `unit` repeated min..max times (max < 0: unbounded) with `sep` between.
std::string gbnf_repeat(const std::string& unit, const std::string& sep, int64_t min, int64_t max);

}  // namespace fulgur
