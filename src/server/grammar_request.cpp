#include "server/grammar_request.h"

#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "server/json_fields.h"

namespace fulgur::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// Compiles, turning the compiler's error into a 400 for `param`.
template <class Compile>
std::shared_ptr<const Grammar> compile(const std::string& param, Compile&& c) {
  try {
    return std::make_shared<Grammar>(c());
  } catch (const BadRequest&) {
    throw;
  } catch (const Error& e) {
    bad(param, cat("'", param, "': ", e.what()));
  }
}

// The schema at a path of the body, read again with its keys in the order written.
ordered_json ordered_at(std::string_view text, std::initializer_list<const char*> path) {
  ordered_json node = ordered_json::parse(text);
  for (const char* key : path) node = ordered_json(node.at(key));
  return node;
}

std::shared_ptr<const Grammar> schema_grammar(std::string_view text, std::initializer_list<const char*> path,
                                              const std::string& param, const json& schema) {
  if (!schema.is_object() && !schema.is_boolean()) {
    bad(param, cat("'", param, "' must be a JSON schema (an object), got ", schema.type_name()));
  }
  return compile(param, [&] { return json_schema_grammar(ordered_at(text, path)); });
}

}  // namespace

std::shared_ptr<const Grammar> parse_grammar_fields(const json& body, std::string_view text) {
  std::shared_ptr<const Grammar> out;
  const char* given = nullptr;
  const auto one = [&](const char* name) {
    if (given) bad(name, cat("'", name, "' cannot be given beside '", given, "': give one constraint"));
    given = name;
  };
  if (const json* g = field(body, "grammar")) {
    one("grammar");
    const std::string gbnf = get_string(*g, "grammar");
    out = compile("grammar", [&] { return parse_gbnf(gbnf); });
  }
  if (const json* s = field(body, "json_schema")) {
    one("json_schema");
    out = schema_grammar(text, {"json_schema"}, "json_schema", *s);
  }
  if (const json* rf = field(body, "response_format")) {
    if (!rf->is_object()) bad("response_format", cat("'response_format' must be an object, got ", rf->type_name()));
    const json* type = field(*rf, "type");
    if (!type) bad("response_format.type", "'response_format.type' is missing");
    const std::string t = get_string(*type, "response_format.type");
    if (t == "text") return out;
    if (t == "json_object") {
      one("response_format");
      if (const json* s = field(*rf, "schema")) {  // llama-server's form
        out = schema_grammar(text, {"response_format", "schema"}, "response_format.schema", *s);
      } else {
        out = compile("response_format", [] { return parse_gbnf(json_object_gbnf()); });
      }
    } else if (t == "json_schema") {
      one("response_format");
      const json* js = field(*rf, "json_schema");
      if (!js || !js->is_object()) {
        bad("response_format.json_schema", "'response_format.json_schema' must be an object with a 'schema'");
      }
      const json* s = field(*js, "schema");
      if (!s) bad("response_format.json_schema.schema", "'response_format.json_schema.schema' is missing");
      out = schema_grammar(text, {"response_format", "json_schema", "schema"}, "response_format.json_schema.schema", *s);
    } else {
      bad("response_format.type", cat("'response_format.type' is \"", t,
                                      "\", expected \"text\", \"json_object\" or \"json_schema\""));
    }
  }
  return out;
}

}  // namespace fulgur::server
