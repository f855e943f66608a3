#include "server/gemma4_call_grammar.h"

#include <algorithm>
#include <set>
#include <string_view>

#include "core/ascii.h"
#include "core/error.h"
#include "grammar/json_schema.h"
#include "server/tool_call_formats.h"

namespace fulgur::server {
namespace {

using nlohmann::ordered_json;

constexpr std::string_view kQuote = "<|\"|>";

// The rules every Gemma 4 call grammar shares: any value, and the JSON scalars (number,
// integer, boolean, null) from the JSON grammar's shared rules, which Gemma writes alike.
std::string shared_rules() {
  return "g4-value ::= g4-string | g4-dict | g4-list | number | boolean | null\n"
         "g4-string ::= \"<|\\\"|>\" g4-text \"<|\\\"|>\"\n"
         "g4-key ::= [a-zA-Z0-9_]+\n"
         "g4-dict ::= \"{\" ( g4-key \":\" g4-value ( \",\" g4-key \":\" g4-value )* )? \"}\"\n"
         "g4-list ::= \"[\" ( g4-value ( \",\" g4-value )* )? \"]\"\n" +
         tagless_text_gbnf("g4-text") + json_schemas_to_gbnf({});
}

// Object keys in the template's order: Jinja's dictsort compares them case-insensitively.
std::vector<std::string> sorted_keys(const ordered_json& object) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : object.items()) keys.push_back(k);
  std::stable_sort(keys.begin(), keys.end(), [](const std::string& a, const std::string& b) {
    return ascii_lower(a) < ascii_lower(b);  // the lowering dictsort itself uses
  });
  return keys;
}

// A key as the template writes it: bare (the reader takes a bare key up to ':' or '}').
std::string key_text(const std::string& key) {
  FULGUR_CHECK(!key.empty() && key.find_first_of(":}{,<>|\" \t\r\n") == std::string::npos,
               "gemma4 call grammar: the key '", key, "' cannot be written bare");
  return key;
}

// A value in Gemma's syntax, as format_argument writes it (for enum and const).
std::string gemma4_text(const ordered_json& v) {
  if (v.is_string()) return cat(kQuote, v.get<std::string>(), kQuote);
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + gemma4_text(v[i]);
    return out + "]";
  }
  if (v.is_object()) {
    std::string out = "{";
    for (const std::string& k : sorted_keys(v)) out += (out.size() > 1 ? "," : "") + key_text(k) + ":" + gemma4_text(v[k]);
    return out + "}";
  }
  return v.dump();  // numbers, true, false, null
}

// One function's arguments schema as GBNF; fails (fulgur::Error) on what it cannot express.
class ArgumentsGrammar {
 public:
  explicit ArgumentsGrammar(std::string prefix) : prefix_(std::move(prefix)) {}

  // The arguments object.
  std::string arguments(const ordered_json& schema) {
    if (!schema.is_object() || schema.value("type", ordered_json("object")) != "object") {
      fail("gemma4 call grammar: the parameters are not an object schema");
    }
    return object(schema);
  }
  const std::string& rules() const { return rules_; }

 private:
  std::string rule(const std::string& body) {
    const std::string name = cat(prefix_, "-", n_rules_++);
    rules_ += name + " ::= " + body + "\n";
    return name;
  }

  std::string value(const ordered_json& s) {
    if (s.is_boolean() && s.get<bool>()) return "g4-value";
    if (!s.is_object()) fail("gemma4 call grammar: a schema that is not an object");
    static const std::set<std::string> kKnown = {"type", "properties", "required", "items", "minItems", "maxItems",
                                                 "enum", "const", "anyOf", "oneOf", "additionalProperties",
                                                 "title", "description", "default", "examples", "$schema", "strict"};
    for (const auto& [key, v] : s.items()) {
      if (!kKnown.count(key)) fail("gemma4 call grammar: keyword '", key, "' is not supported");
    }
    if (s.contains("const")) return gbnf_literal(gemma4_text(s["const"]));
    if (s.contains("enum")) return alternatives(s["enum"], [](const ordered_json& v) { return gbnf_literal(gemma4_text(v)); });
    for (const char* key : {"anyOf", "oneOf"}) {
      if (s.contains(key)) return alternatives(s[key], [this](const ordered_json& alt) { return value(alt); });
    }
    if (!s.contains("type")) {
      if (s.contains("properties") || s.contains("additionalProperties")) return object(s);
      if (s.contains("items")) return list(s);
      return "g4-value";
    }
    const ordered_json& type = s["type"];
    if (type.is_array()) return alternatives(type, [&](const ordered_json& t) { return typed(s, t); });
    return typed(s, type);
  }

  template <class Fn>
  static std::string alternatives(const ordered_json& list, Fn&& each) {
    if (!list.is_array() || list.empty()) fail("gemma4 call grammar: an empty list of alternatives");
    std::string out = "(";
    for (size_t i = 0; i < list.size(); ++i) out += (i ? " | " : " ") + each(list[i]);
    return out + " )";
  }

  std::string typed(const ordered_json& s, const ordered_json& type) {
    const std::string t = type.is_string() ? type.get<std::string>() : "";
    if (t == "object") return object(s);
    if (t == "array") return list(s);
    if (t == "string") return "g4-string";
    if (t == "number" || t == "integer" || t == "boolean" || t == "null") return t;
    fail("gemma4 call grammar: type ", type.dump(), " is not supported");
  }

  std::string list(const ordered_json& s) {
    const std::string item = s.contains("items") ? value(s["items"]) : "g4-value";
    const auto count = [&](const char* key, int64_t fallback) {
      const ordered_json v = s.value(key, ordered_json(fallback));
      if (!v.is_number_integer() || v.get<int64_t>() < -1 || v.get<int64_t>() > 10000) fail("gemma4 call grammar: bad ", key);
      return v.get<int64_t>();
    };
    const int64_t min = count("minItems", 0), max = count("maxItems", -1);
    if (max >= 0 && max < min) fail("gemma4 call grammar: maxItems < minItems");
    return "( \"[\" " + gbnf_repeat(item, "\",\"", min, max) + " \"]\" )";
  }

  std::string object(const ordered_json& s) {
    const ordered_json props = s.value("properties", ordered_json::object());
    if (!props.is_object()) fail("gemma4 call grammar: properties is not an object");
    if (props.empty()) {
      const ordered_json extra = s.value("additionalProperties", ordered_json(true));
      if (extra.is_boolean()) return extra.get<bool>() ? "g4-dict" : "\"{}\"";
      return "( \"{\" " + gbnf_repeat("g4-key \":\" " + value(extra), "\",\"", 0, -1) + " \"}\" )";
    }
    std::set<std::string> required;
    for (const ordered_json& r : s.value("required", ordered_json::array())) {
      if (!r.is_string() || !props.contains(r.get<std::string>())) fail("gemma4 call grammar: required names ", r.dump());
      required.insert(r.get<std::string>());
    }
    // Keys in the template's order, any optional one left out: rule `first` of key i is the rest
    // of the object from key i when nothing was written yet, `rest` when something was (so
    // each key present but the first is preceded by a comma). Built from the last key back.
    const std::vector<std::string> keys = sorted_keys(props);
    std::string first, rest;  // of key i + 1; "" past the last key
    for (size_t i = keys.size(); i-- > 0;) {
      const std::string member = gbnf_literal(key_text(keys[i]) + ":") + " " + value(props[keys[i]]);
      const std::string then = rest.empty() ? "" : " " + rest;
      const bool req = required.count(keys[i]) > 0;
      const std::string new_rest = rule(req ? "\",\" " + member + then : "( \",\" " + member + " )?" + then);
      const std::string new_first =
          req ? rule(member + then) : rule("( " + member + then + (first.empty() ? " )?" : " | " + first + " )"));
      rest = new_rest;
      first = new_first;
    }
    return "( \"{\" " + first + " \"}\" )";
  }

  std::string prefix_;
  std::string rules_;
  int n_rules_ = 0;
};

}  // namespace

std::string gemma4_calls_gbnf(const std::vector<ordered_json>& functions, bool parallel) {
  std::string rules, alternatives;
  for (size_t f = 0; f < functions.size(); ++f) {
    const ordered_json& fn = functions[f];
    std::string args = "g4-dict";
    const auto params = fn.find("parameters");
    if (params != fn.end()) {
      ArgumentsGrammar g(cat("g4-args-", f));
      try {
        args = g.arguments(*params);
        rules += g.rules();
      } catch (const Error&) {
        args = "g4-dict";  // a schema Gemma's syntax cannot be held to here: any arguments
      }
    }
    const std::string call = cat("g4-call-", f);
    rules += cat(call, " ::= \"<|tool_call>call:\" ", gbnf_literal(fn.at("name").get<std::string>()), " ", args,
                 " \"<tool_call|>\"\n");
    alternatives += (f ? " | " : "") + call;
  }
  rules += "g4-call ::= " + alternatives + "\n";
  rules += cat("tool-calls ::= g4-call", parallel ? "+" : "", "\n");
  return rules + shared_rules();
}

}  // namespace fulgur::server
