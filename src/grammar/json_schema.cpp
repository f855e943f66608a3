#include "grammar/json_schema.h"

#include <cctype>
#include <map>
#include <set>
#include <vector>

#include "core/error.h"
#include "grammar/gbnf_parser.h"

namespace fulgur {
namespace {

using json = nlohmann::ordered_json;

// The rules every JSON grammar shares.
constexpr const char* kPrimitives = R"(ws ::= | " " | "\n" [ \t]{0,20}
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( string ws ":" ws value ( ws "," ws string ws ":" ws value )* ws )? "}"
array ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
number ::= integer ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?
integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
boolean ::= "true" | "false"
null ::= "null"
)";

// Keywords that only describe; they constrain nothing.
const std::set<std::string> kAnnotations = {
    "$schema", "$id", "$comment", "title", "description", "default", "examples", "deprecated",
    "readOnly", "writeOnly", "strict", "$defs", "definitions", "name"};

// One schema's rule `name` and the $ref rules it needs (named after it, so that the rules of
// several schemas can share a grammar).
class Converter {
 public:
  Converter(const json& root, std::string name) : root_(root), name_(std::move(name)) {}

  std::string convert() {
    std::string out = name_ + " ::= " + visit(root_, "") + "\n";
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out;
  }

 private:
  template <class... Args>
  [[noreturn]] void error(const std::string& path, Args&&... args) const {
    fail("json schema: at ", path.empty() ? "the top" : path, ": ", std::forward<Args>(args)...);
  }

  // A GBNF expression matching the JSON values the schema allows.
  std::string visit(const json& s, const std::string& path) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) error(path, "the schema `false` allows nothing");
      return "value";
    }
    if (!s.is_object()) error(path, "a schema must be an object or a boolean, not ", s.dump());
    for (const auto& [key, v] : s.items()) {
      if (kAnnotations.count(key) || kHandled.count(key)) continue;
      error(path, "keyword '", key, "' is not supported (supported: type, properties, required, "
                  "additionalProperties, items, minItems, maxItems, minLength, maxLength, enum, "
                  "const, anyOf, oneOf, allOf of one schema, $ref)");
    }
    if (s.contains("$ref")) return ref(s["$ref"], path + "/$ref");
    if (s.contains("const")) return gbnf_literal(s["const"].dump());
    if (s.contains("enum")) {
      const json& e = s["enum"];
      if (!e.is_array() || e.empty()) error(path + "/enum", "must be a non-empty array");
      std::string out = "(";
      for (size_t i = 0; i < e.size(); ++i) out += (i ? " | " : " ") + gbnf_literal(e[i].dump());
      return out + " )";
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      const json& alts = s[key];
      if (!alts.is_array() || alts.empty()) error(path + "/" + key, "must be a non-empty array");
      std::string out = "(";
      for (size_t i = 0; i < alts.size(); ++i) {
        out += (i ? " | " : " ") + visit(alts[i], path + "/" + key + "/" + std::to_string(i));
      }
      return out + " )";
    }
    if (s.contains("allOf")) {
      const json& all = s["allOf"];
      if (!all.is_array() || all.size() != 1) {
        error(path + "/allOf", "only an allOf of exactly one schema is supported");
      }
      return visit(all[0], path + "/allOf/0");
    }
    if (!s.contains("type")) {
      // Untyped: the keywords say which type is meant (pydantic leaves type out beside them).
      if (s.contains("properties") || s.contains("additionalProperties")) return object(s, path);
      if (s.contains("items")) return array(s, path);
      return "value";
    }
    const json& type = s["type"];
    if (type.is_array()) {
      if (type.empty()) error(path + "/type", "an empty list of types allows nothing");
      std::string out = "(";
      for (size_t i = 0; i < type.size(); ++i) out += (i ? " | " : " ") + typed(s, type[i], path);
      return out + " )";
    }
    return typed(s, type, path);
  }

  std::string typed(const json& s, const json& type, const std::string& path) {
    if (!type.is_string()) error(path + "/type", "must be a string or a list of strings");
    const std::string t = type.get<std::string>();
    if (t == "object") return object(s, path);
    if (t == "array") return array(s, path);
    if (t == "string") return string(s, path);
    if (t == "number") return "number";
    if (t == "integer") return "integer";
    if (t == "boolean") return "boolean";
    if (t == "null") return "null";
    error(path + "/type", "unknown type '", t, "'");
  }

  static int64_t count(const json& s, const char* key, const std::string& path, int64_t fallback) {
    if (!s.contains(key)) return fallback;
    const json& v = s[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 10000) {
      fail("json schema: at ", path.empty() ? "the top" : path, ": '", key,
           "' must be an integer in [0, 10000]");
    }
    return v.get<int64_t>();
  }

  std::string string(const json& s, const std::string& path) {
    const int64_t min = count(s, "minLength", path, 0);
    const int64_t max = count(s, "maxLength", path, -1);
    if (max >= 0 && max < min) error(path, "maxLength ", max, " < minLength ", min);
    if (min == 0 && max < 0) return "string";
    const std::string rep = max < 0 ? "{" + std::to_string(min) + ",}"
                                     : "{" + std::to_string(min) + "," + std::to_string(max) + "}";
    return "( \"\\\"\" char" + rep + " \"\\\"\" )";
  }

  std::string array(const json& s, const std::string& path) {
    const std::string item = s.contains("items") ? visit(s["items"], path + "/items") : "value";
    const int64_t min = count(s, "minItems", path, 0);
    const int64_t max = count(s, "maxItems", path, -1);
    if (max >= 0 && max < min) error(path, "maxItems ", max, " < minItems ", min);
    const std::string items = gbnf_repeat(item, "ws \",\" ws", min, max);
    return "( \"[\" ws " + (items.empty() ? "" : items + " ws ") + "\"]\" )";
  }

  std::string object(const json& s, const std::string& path) {
    const json* props = s.contains("properties") ? &s["properties"] : nullptr;
    if (props != nullptr && !props->is_object()) error(path + "/properties", "must be an object");
    const bool has_props = props != nullptr && !props->empty();
    if (!has_props) {
      if (s.contains("required") && !s["required"].empty()) {
        error(path + "/required", "names properties the schema does not define");
      }
      const json* extra = s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr;
      if (extra == nullptr || extra->is_boolean() || extra->empty()) {
        if (extra != nullptr && extra->is_boolean() && !extra->get<bool>()) return "( \"{\" ws \"}\" )";
        return "object";
      }
      const std::string member = "string ws \":\" ws " + visit(*extra, path + "/additionalProperties");
      return "( \"{\" ws " + gbnf_repeat(member, "ws \",\" ws", 0, -1) + " ws \"}\" )";
    }
    std::set<std::string> required;
    if (s.contains("required")) {
      const json& r = s["required"];
      if (!r.is_array()) error(path + "/required", "must be an array of property names");
      for (const json& name : r) {
        if (!name.is_string() || !props->contains(name.get<std::string>())) {
          error(path + "/required", "names ", name.dump(), ", which is not in properties");
        }
        required.insert(name.get<std::string>());
      }
    }
    std::vector<std::string> req, opt;  // "key" ws ":" ws VALUE, in the schema's order
    for (const auto& [key, sub] : props->items()) {
      const std::string member = gbnf_literal(json(key).dump()) + " ws \":\" ws " +
                                 visit(sub, path + "/properties/" + key);
      (required.count(key) ? req : opt).push_back(member);
    }
    const std::string sep = "ws \",\" ws ";
    std::string body;
    if (!req.empty()) {
      for (size_t i = 0; i < req.size(); ++i) body += (i ? sep : "") + req[i] + " ";
      for (const std::string& o : opt) body += "( " + sep + o + " )? ";
    } else {
      // No required key: the first key present is any optional one, the later ones follow.
      body = "(";
      for (size_t i = 0; i < opt.size(); ++i) {
        body += (i ? " | " : " ") + opt[i];
        for (size_t j = i + 1; j < opt.size(); ++j) body += " ( " + sep + opt[j] + " )?";
      }
      body += " )? ";
    }
    return "( \"{\" ws " + body + "ws \"}\" )";
  }

  std::string ref(const json& r, const std::string& path) {
    if (!r.is_string()) error(path, "must be a string");
    const std::string target = r.get<std::string>();
    const auto known = ref_rules_.find(target);
    if (known != ref_rules_.end()) return known->second;
    const json* node = nullptr;
    std::string name;
    if (target == "#") {
      node = &root_;
      name = name_ + "-ref-root";
    }
    for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
      const std::string p = prefix;
      if (target.rfind(p, 0) != 0) continue;
      const std::string def = target.substr(p.size());
      const std::string section = p.substr(2, p.size() - 3);
      if (root_.contains(section) && root_[section].is_object() && root_[section].contains(def)) {
        node = &root_[section][def];
      }
      name = name_ + "-ref-";
      for (char c : def) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
    }
    if (node == nullptr) {
      error(path, "cannot resolve '", target, "' (only \"#\", \"#/$defs/NAME\" and "
                  "\"#/definitions/NAME\" inside this schema are supported)");
    }
    while (rules_.count(name)) name += "-";
    ref_rules_[target] = name;
    rules_[name] = "";  // reserved before visiting: the definition may refer to itself
    rules_[name] = visit(*node, target.substr(1));
    return name;
  }

  inline static const std::set<std::string> kHandled = {
      "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems",
      "minLength", "maxLength", "enum", "const", "anyOf", "oneOf", "allOf", "$ref"};

  const json& root_;
  std::string name_;
  std::map<std::string, std::string> rules_;      // $ref rules: name -> body
  std::map<std::string, std::string> ref_rules_;  // $ref target -> rule name
};

}  // namespace

std::string gbnf_repeat(const std::string& unit, const std::string& sep, int64_t min, int64_t max) {
  if (max == 0) return "";
  const std::string more = "( " + sep + " " + unit + " )";
  std::string tail;
  const int64_t lo = std::max<int64_t>(min - 1, 0);
  if (max < 0) {
    tail = lo == 0 ? more + "*" : more + "{" + std::to_string(lo) + ",}";
  } else if (max - 1 > 0) {
    tail = more + "{" + std::to_string(lo) + "," + std::to_string(max - 1) + "}";
  }
  const std::string body = unit + (tail.empty() ? "" : " " + tail);
  return min == 0 ? "( " + body + " )?" : body;
}

std::string gbnf_literal(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string json_schemas_to_gbnf(const std::vector<std::pair<std::string, nlohmann::ordered_json>>& rules) {
  std::string out;
  for (const auto& [name, schema] : rules) out += Converter(schema, name).convert();
  return out + kPrimitives;
}

std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema) { return json_schemas_to_gbnf({{"root", schema}}); }

Grammar json_schema_grammar(const nlohmann::ordered_json& schema) {
  return parse_gbnf(json_schema_to_gbnf(schema));
}

std::string json_object_gbnf() { return std::string("root ::= object\n") + kPrimitives; }

}  // namespace fulgur
