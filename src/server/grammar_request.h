// A request's output constraint, in the names clients send:
//   OpenAI      "response_format": {"type": "json_object"}
//               "response_format": {"type": "json_schema", "json_schema": {"schema": {...}, "strict": true}}
//   llama-server "grammar": "<GBNF>", "json_schema": {...},
//               "response_format": {"type": "json_object", "schema": {...}}
// compiled to a Grammar (grammar/). A grammar or schema that cannot be compiled is a
// BadRequest (400) naming the field and the problem.
#pragma once

#include <memory>
#include <string_view>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"

namespace fulgur::server {

// nullptr when the request asks for no constraint ("response_format": {"type": "text"} or
// nothing). `text` is the raw body: schemas are read from it again in key order, since the
// order of a schema's properties is the order the keys are written in.
std::shared_ptr<const Grammar> parse_grammar_fields(const nlohmann::json& body, std::string_view text);

}  // namespace fulgur::server
