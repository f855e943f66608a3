// JSON schema -> grammar: the grammar accepts documents valid against the schema and rejects
// invalid ones; schemas it cannot honour are errors naming the keyword and place.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"

namespace fulgur {
namespace {

using nlohmann::json;

bool accepts(const std::shared_ptr<const Grammar>& g, const std::string& doc) {
  GrammarMatcher m(g);
  return m.accept_bytes(doc) && m.complete();
}

std::shared_ptr<const Grammar> schema_grammar(const char* schema) {
  return std::make_shared<Grammar>(json_schema_grammar(nlohmann::ordered_json::parse(schema)));
}

TEST(JsonSchema, ObjectWithRequiredAndOptionalProperties) {
  const auto g = schema_grammar(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string"},
      "age": {"type": "integer"},
      "score": {"type": "number"},
      "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
      "ok": {"type": "boolean"},
      "none": {"type": "null"}
    },
    "required": ["name", "age"],
    "additionalProperties": false})");
  for (const char* valid : {
           R"({"name": "Ann", "age": 31})",
           R"({"name":"A\"b\\c\u00e9","age":-7,"score":1.5e-3})",
           R"({ "name": "x", "age": 0, "tags": ["a", "b"], "ok": true, "none": null })",
           "{\n  \"name\": \"x\",\n  \"age\": 12,\n  \"ok\": false\n}",
       }) {
    EXPECT_TRUE(accepts(g, valid)) << valid;
    EXPECT_NO_THROW(json::parse(valid));
  }
  for (const char* invalid : {
           R"({"name": "Ann"})",                          // age missing
           R"({"age": 3, "name": "x"})",                  // required keys come in order
           R"({"name": "x", "age": 1.5})",                // not an integer
           R"({"name": "x", "age": 01})",                 // leading zero
           R"({"name": "x", "age": 1, "extra": 1})",      // no other keys
           R"({"name": "x", "age": 1, "tags": ["a", "b", "c"]})",  // maxItems
           R"({"name": x, "age": 1})",
           R"({"name": "a
b", "age": 1})",                                           // raw control character
           R"({"name": "x", "age": 1,})",
       }) {
    EXPECT_FALSE(accepts(g, invalid)) << invalid;
  }
}

TEST(JsonSchema, EnumConstAnyOfAndLengths) {
  const auto g = schema_grammar(R"({
    "type": "object",
    "properties": {
      "color": {"enum": ["red", "green", 3, null]},
      "kind": {"const": "fixed"},
      "id": {"anyOf": [{"type": "integer"}, {"type": "string", "minLength": 2, "maxLength": 3}]},
      "maybe": {"type": ["boolean", "null"]}
    },
    "required": ["color", "kind", "id", "maybe"]})");
  EXPECT_TRUE(accepts(g, R"({"color": "red", "kind": "fixed", "id": 5, "maybe": null})"));
  EXPECT_TRUE(accepts(g, R"({"color": 3, "kind": "fixed", "id": "abc", "maybe": true})"));
  EXPECT_TRUE(accepts(g, R"({"color": null, "kind": "fixed", "id": "ab", "maybe": false})"));
  EXPECT_FALSE(accepts(g, R"({"color": "blue", "kind": "fixed", "id": 5, "maybe": null})"));
  EXPECT_FALSE(accepts(g, R"({"color": "red", "kind": "other", "id": 5, "maybe": null})"));
  EXPECT_FALSE(accepts(g, R"({"color": "red", "kind": "fixed", "id": "a", "maybe": null})"));
  EXPECT_FALSE(accepts(g, R"({"color": "red", "kind": "fixed", "id": "abcd", "maybe": null})"));
  EXPECT_FALSE(accepts(g, R"({"color": "red", "kind": "fixed", "id": 5, "maybe": 1})"));
}

TEST(JsonSchema, OnlyOptionalPropertiesAndMinItems) {
  const auto g = schema_grammar(R"({"type": "object", "properties": {
      "a": {"type": "integer"}, "b": {"type": "array", "items": {"type": "integer"}, "minItems": 2}}})");
  EXPECT_TRUE(accepts(g, "{}"));
  EXPECT_TRUE(accepts(g, R"({"a": 1})"));
  EXPECT_TRUE(accepts(g, R"({"b": [1, 2, 3]})"));
  EXPECT_TRUE(accepts(g, R"({"a": 1, "b": [1, 2]})"));
  EXPECT_FALSE(accepts(g, R"({"b": [1]})"));
  EXPECT_FALSE(accepts(g, R"({, "b": [1, 2]})"));
  EXPECT_FALSE(accepts(g, R"({"b": [1, 2], "a": 1})"));
}

TEST(JsonSchema, RefsToDefsAndDefinitionsAndRecursion) {
  const auto g = schema_grammar(R"({
    "$defs": {"node": {"type": "object", "properties": {
        "v": {"type": "integer"},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v", "kids"]}},
    "definitions": {"pt": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}},
    "type": "object",
    "properties": {"tree": {"$ref": "#/$defs/node"}, "at": {"$ref": "#/definitions/pt"}},
    "required": ["tree", "at"]})");
  EXPECT_TRUE(accepts(g, R"({"tree": {"v": 1, "kids": [{"v": 2, "kids": []}]}, "at": [1, 2.5]})"));
  EXPECT_FALSE(accepts(g, R"({"tree": {"v": 1, "kids": [{"v": 2}]}, "at": [1, 2]})"));
  EXPECT_FALSE(accepts(g, R"({"tree": {"v": 1, "kids": []}, "at": [1]})"));
}

TEST(JsonSchema, JsonObjectModeAcceptsAnyObjectOnly) {
  const auto g = std::make_shared<Grammar>(parse_gbnf(json_object_gbnf()));
  EXPECT_TRUE(accepts(g, R"({"a": [1, {"b": null}], "c": "d"})"));
  EXPECT_TRUE(accepts(g, "{}"));
  EXPECT_FALSE(accepts(g, "[1]"));
  EXPECT_FALSE(accepts(g, R"("text")"));
}

std::string schema_error(const char* schema) {
  try {
    json_schema_to_gbnf(nlohmann::ordered_json::parse(schema));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(JsonSchema, UnsupportedSchemasAreClearErrors) {
  EXPECT_NE(schema_error(R"({"type": "object", "properties": {"s": {"type": "string", "pattern": "^a+$"}}})")
                .find("at /properties/s: keyword 'pattern' is not supported"),
            std::string::npos)
      << schema_error(R"({"type": "object", "properties": {"s": {"type": "string", "pattern": "^a+$"}}})");
  EXPECT_NE(schema_error(R"({"type": "integer", "minimum": 3})").find("'minimum' is not supported"), std::string::npos);
  EXPECT_NE(schema_error(R"({"type": "strin"})").find("unknown type 'strin'"), std::string::npos);
  EXPECT_NE(schema_error(R"({"$ref": "#/$defs/missing"})").find("cannot resolve '#/$defs/missing'"),
            std::string::npos);
  EXPECT_NE(schema_error(R"({"type": "object", "properties": {"a": {}}, "required": ["b"]})")
                .find("names \"b\", which is not in properties"),
            std::string::npos);
  EXPECT_NE(schema_error(R"({"type": "array", "minItems": 3, "maxItems": 1})").find("maxItems 1 < minItems 3"),
            std::string::npos);
  EXPECT_NE(schema_error("false").find("allows nothing"), std::string::npos);
}

}  // namespace
}  // namespace fulgur
