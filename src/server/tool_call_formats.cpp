#include "server/tool_call_formats.h"

#include <algorithm>

#include "core/error.h"
#include "grammar/json_schema.h"
#include "server/gemma4_call_grammar.h"

namespace fulgur::server {
namespace {

using nlohmann::ordered_json;

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

std::string_view trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::optional<ordered_json> parse_json(std::string_view text) {
  ordered_json j = ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

std::string compact(const ordered_json& j) { return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace); }

// {"name": "f", "arguments": {...}}: the JSON call object of the qwen3-json and nemotron-h
// formats. Arguments given as JSON text are taken when that text is an object; absent ones are
// {} (a function without parameters).
std::optional<ToolCall> json_call(const ordered_json& c) {
  if (!c.is_object()) return std::nullopt;
  const auto name = c.find("name");
  if (name == c.end() || !name->is_string() || !valid_function_name(name->get<std::string>())) return std::nullopt;
  ToolCall call;
  call.name = name->get<std::string>();
  const auto args = c.find("arguments");
  if (args == c.end() || args->is_null()) {
    call.arguments = "{}";
  } else if (args->is_object()) {
    call.arguments = compact(*args);
  } else if (args->is_string()) {
    const std::optional<ordered_json> inner = parse_json(args->get<std::string>());
    if (!inner || !inner->is_object()) return std::nullopt;
    call.arguments = compact(*inner);
  } else {
    return std::nullopt;
  }
  return call;
}

std::optional<std::vector<ToolCall>> read_json_object(std::string_view block, const ordered_json&) {
  const std::optional<ordered_json> j = parse_json(trim(block));
  if (!j) return std::nullopt;
  std::optional<ToolCall> call = json_call(*j);
  if (!call) return std::nullopt;
  return std::vector<ToolCall>{std::move(*call)};
}

std::optional<std::vector<ToolCall>> read_json_array(std::string_view block, const ordered_json&) {
  const std::optional<ordered_json> j = parse_json(trim(block));
  if (!j || !j->is_array() || j->empty()) return std::nullopt;
  std::vector<ToolCall> calls;
  for (const ordered_json& c : *j) {
    std::optional<ToolCall> call = json_call(c);
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
  }
  return calls;
}

// The JSON-schema type the request declares for a function's parameter ("" when it does not).
std::string declared_type(const ordered_json& tools, const std::string& fn, const std::string& param) {
  for (const ordered_json& t : tools) {
    const ordered_json& f = t["function"];
    if (f["name"] != fn) continue;
    const auto params = f.find("parameters");
    if (params == f.end() || !params->is_object()) return "";
    const auto props = params->find("properties");
    if (props == params->end() || !props->is_object()) return "";
    const auto p = props->find(param);
    if (p == props->end() || !p->is_object()) return "";
    const auto type = p->find("type");
    return type != p->end() && type->is_string() ? type->get<std::string>() : "";
  }
  return "";
}

void skip_newlines(std::string_view s, size_t& at) {
  while (at < s.size() && (s[at] == '\n' || s[at] == '\r' || s[at] == ' ')) ++at;
}

// <function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...</function>. The templates write a
// string value as it is and anything else as JSON, so a value is JSON when the schema does not
// say "string" and it parses as JSON, and text otherwise.
std::optional<std::vector<ToolCall>> read_xml_function(std::string_view block, const ordered_json& tools) {
  const std::string_view b = trim(block);
  constexpr std::string_view kOpen = "<function=", kClose = "</function>";
  if (!b.starts_with(kOpen) || !b.ends_with(kClose)) return std::nullopt;
  const size_t name_end = b.find('>');
  if (name_end + 1 + kClose.size() > b.size()) return std::nullopt;  // the '>' of the close tag
  ToolCall call;
  call.name = std::string(b.substr(kOpen.size(), name_end - kOpen.size()));
  if (!valid_function_name(call.name)) return std::nullopt;
  const std::string_view body = b.substr(name_end + 1, b.size() - name_end - 1 - kClose.size());
  ordered_json args = ordered_json::object();
  size_t at = 0;
  skip_newlines(body, at);
  while (at < body.size()) {
    constexpr std::string_view kParam = "<parameter=";
    if (body.compare(at, kParam.size(), kParam) != 0) return std::nullopt;
    const size_t key_end = body.find('>', at);
    if (key_end == std::string_view::npos) return std::nullopt;
    const std::string key(body.substr(at + kParam.size(), key_end - at - kParam.size()));
    if (key.empty() || args.contains(key)) return std::nullopt;
    const size_t value_end = body.find("</parameter>", key_end);
    if (value_end == std::string_view::npos) return std::nullopt;
    std::string_view value = body.substr(key_end + 1, value_end - key_end - 1);
    // The template writes exactly one newline on each side of the value.
    if (value.starts_with('\n')) value.remove_prefix(1);
    if (value.ends_with('\n')) value.remove_suffix(1);
    const std::optional<ordered_json> parsed =
        declared_type(tools, call.name, key) == "string" ? std::nullopt : parse_json(value);
    args[key] = parsed ? *parsed : ordered_json(std::string(value));
    at = value_end + std::string_view("</parameter>").size();
    skip_newlines(body, at);
  }
  call.arguments = compact(args);
  return std::vector<ToolCall>{std::move(call)};
}

// Gemma 4 writes a call as `call:NAME{key:VALUE,...}` with its own value syntax: strings
// between <|"|> quotes (taken as written, no escapes), bare keys, and JSON's numbers, true,
// false and null, nested in {...} and [...]. Read into JSON; nullopt on anything else.
class Gemma4Values {
 public:
  explicit Gemma4Values(std::string_view s) : s_(s) {}

  std::optional<ordered_json> dict() {
    if (!eat("{")) return std::nullopt;
    ordered_json out = ordered_json::object();
    space();
    if (eat("}")) return out;
    for (;;) {
      std::optional<std::string> key = this->key();
      if (!key || out.contains(*key) || !eat(":")) return std::nullopt;
      space();
      std::optional<ordered_json> v = value();
      if (!v) return std::nullopt;
      out[*key] = std::move(*v);
      space();
      if (eat("}")) return out;
      if (!eat(",")) return std::nullopt;
      space();
    }
  }
  bool at_end() const { return at_ == s_.size(); }

 private:
  static constexpr std::string_view kQuote = "<|\"|>";

  bool eat(std::string_view lit) {
    if (s_.substr(at_).starts_with(lit)) {
      at_ += lit.size();
      return true;
    }
    return false;
  }
  void space() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\n' || s_[at_] == '\t' || s_[at_] == '\r')) ++at_;
  }
  std::optional<std::string> string() {
    if (!eat(kQuote)) return std::nullopt;
    const size_t end = s_.find(kQuote, at_);
    if (end == std::string_view::npos) return std::nullopt;
    std::string text(s_.substr(at_, end - at_));
    at_ = end + kQuote.size();
    return text;
  }
  // A key as the template writes argument keys (bare, up to ':'), or quoted.
  std::optional<std::string> key() {
    if (s_.substr(at_).starts_with(kQuote)) return string();
    const size_t end = s_.find_first_of(":}", at_);
    if (end == std::string_view::npos || end == at_) return std::nullopt;
    std::string k(trim(s_.substr(at_, end - at_)));
    at_ = end;
    if (k.empty()) return std::nullopt;
    return k;
  }
  std::optional<ordered_json> array() {
    if (!eat("[")) return std::nullopt;
    ordered_json out = ordered_json::array();
    space();
    if (eat("]")) return out;
    for (;;) {
      std::optional<ordered_json> v = value();
      if (!v) return std::nullopt;
      out.push_back(std::move(*v));
      space();
      if (eat("]")) return out;
      if (!eat(",")) return std::nullopt;
      space();
    }
  }
  // true, false, null or a JSON number: the longest run of the characters they use.
  std::optional<ordered_json> scalar() {
    size_t end = at_;
    while (end < s_.size() && std::string_view("+-.0123456789eEtrufalsn").find(s_[end]) != std::string_view::npos) ++end;
    std::optional<ordered_json> v = parse_json(s_.substr(at_, end - at_));
    if (!v || !(v->is_number() || v->is_boolean() || v->is_null())) return std::nullopt;
    at_ = end;
    return v;
  }
  std::optional<ordered_json> value() {
    if (at_ >= s_.size()) return std::nullopt;
    if (s_.substr(at_).starts_with(kQuote)) {
      std::optional<std::string> text = string();
      if (!text) return std::nullopt;
      return ordered_json(std::move(*text));
    }
    if (s_[at_] == '{') return dict();
    if (s_[at_] == '[') return array();
    return scalar();
  }

  std::string_view s_;
  size_t at_ = 0;
};

std::optional<std::vector<ToolCall>> read_gemma4_call(std::string_view block, const ordered_json&) {
  constexpr std::string_view kCall = "call:";
  const std::string_view b = trim(block);
  if (!b.starts_with(kCall)) return std::nullopt;
  const size_t brace = b.find('{');
  if (brace == std::string_view::npos) return std::nullopt;
  ToolCall call;
  call.name = std::string(b.substr(kCall.size(), brace - kCall.size()));
  if (!valid_function_name(call.name)) return std::nullopt;
  Gemma4Values values(b.substr(brace));
  std::optional<ordered_json> args = values.dict();
  if (!args || !values.at_end()) return std::nullopt;
  call.arguments = compact(*args);
  return std::vector<ToolCall>{std::move(call)};
}

bool writes_gemma4_call(std::string_view src) { return contains(src, "<|tool_call>call:"); }
bool writes_xml_function(std::string_view src) {
  return contains(src, "<tool_call>") && contains(src, "<function=") && contains(src, "<parameter=");
}
bool writes_json_in_tool_call(std::string_view src) { return contains(src, "<tool_call>"); }
bool writes_toolcall_array(std::string_view src) { return contains(src, "<TOOLCALL>"); }

// tool_choice grammars (ToolCallFormat::calls_gbnf).

// The JSON formats: rule `call` is any allowed {"name": NAME, "arguments": ARGS}, keys in that
// order as the templates write them.
std::string json_call_rule(const std::vector<ordered_json>& functions) {
  ordered_json calls = ordered_json::array();
  for (const ordered_json& fn : functions) {
    ordered_json props = ordered_json::object();
    props["name"] = {{"const", fn.at("name")}};
    props["arguments"] = arguments_schema(fn);
    calls.push_back({{"type", "object"}, {"properties", props}, {"required", {"name", "arguments"}}});
  }
  return json_schemas_to_gbnf({{"call", calls.size() == 1 ? calls[0] : ordered_json{{"anyOf", calls}}}});
}

std::string qwen3_json_calls(const std::vector<ordered_json>& functions, bool parallel) {
  return json_call_rule(functions) + cat("tool-calls ::= \"<tool_call>\\n\" call \"\\n</tool_call>\"",
                                         parallel ? " ( \"\\n<tool_call>\\n\" call \"\\n</tool_call>\" )*" : "", "\n");
}

std::string nemotron_calls(const std::vector<ordered_json>& functions, bool parallel) {
  return json_call_rule(functions) +
         cat("tool-calls ::= \"<TOOLCALL>[\" call ", parallel ? "( \", \" call )* " : "", "\"]</TOOLCALL>\"\n");
}

// An enum or const of strings only, as the alternatives the templates write (strings raw, not
// as JSON); nullopt for any other schema.
std::optional<std::string> raw_string_choices(const ordered_json& schema) {
  if (!schema.is_object()) return std::nullopt;
  ordered_json values = schema.contains("const") ? ordered_json::array({schema["const"]}) : schema.value("enum", ordered_json());
  if (!values.is_array() || values.empty()) return std::nullopt;
  std::string out = "(";
  for (const ordered_json& v : values) {
    if (!v.is_string()) return std::nullopt;
    out += (out.size() > 1 ? " | " : " ") + gbnf_literal(v.get<std::string>());
  }
  return out + " )";
}

// qwen3-xml: each call `<tool_call>\n<function=NAME>\n` then its parameters, required ones in
// the schema's order then optional ones, each `<parameter=KEY>\nVALUE\n</parameter>\n`, then
// `</function>\n</tool_call>`. A string value is text without "</" (the reader ends it at
// "</parameter>"), an enum of strings one of them; any other value is JSON its schema allows
// (the templates write strings raw and everything else as JSON).
std::string xml_calls(const std::vector<ordered_json>& functions, bool parallel) {
  std::vector<std::pair<std::string, ordered_json>> json_values;
  std::string rules, alternatives;
  for (size_t f = 0; f < functions.size(); ++f) {
    const ordered_json& fn = functions[f];
    const ordered_json args = arguments_schema(fn);
    const auto props = args.find("properties");
    std::string params;
    if (props == args.end() || !props->is_object() || props->empty()) {
      // No declared parameters: any, in any order (an object schema without properties).
      params = "xml-any-param*";
    } else {
      std::vector<std::string> required, optional;
      const auto req = args.find("required");
      for (const auto& [key, schema] : props->items()) {
        const bool is_required = req != args.end() && std::find(req->begin(), req->end(), key) != req->end();
        const std::string value = cat("v-", f, "-", required.size() + optional.size());
        if (const std::optional<std::string> words = raw_string_choices(schema)) {
          rules += value + " ::= " + *words + "\n";
        } else if (schema.is_object() && schema.value("type", ordered_json()) == "string") {
          rules += value + " ::= xml-text\n";
        } else {
          json_values.emplace_back(value, schema);
        }
        const std::string param = cat("\"<parameter=\" ", gbnf_literal(key), " \">\\n\" ", value, " \"\\n</parameter>\\n\"");
        (is_required ? required : optional).push_back(param);
      }
      for (const std::string& p : required) params += p + " ";
      for (const std::string& p : optional) params += "( " + p + " )? ";
    }
    const std::string call = cat("call-", f);
    rules += cat(call, " ::= \"<tool_call>\\n<function=\" ", gbnf_literal(fn.at("name").get<std::string>()),
                 " \">\\n\" ", params, "\"</function>\\n</tool_call>\"\n");
    alternatives += (f ? " | " : "") + call;
  }
  rules += "call ::= " + alternatives + "\n";
  rules += "xml-text ::= ( [^<] | \"<\" [^/] )*\n";
  rules += "xml-any-param ::= \"<parameter=\" [a-zA-Z0-9_.-]+ \">\\n\" xml-text \"\\n</parameter>\\n\"\n";
  rules += cat("tool-calls ::= call", parallel ? " ( \"\\n\" call )*" : "", "\n");
  return json_schemas_to_gbnf(json_values) + rules;
}

constexpr ToolCallFormat kToolCallFormats[] = {
    {"gemma4", "<|tool_call>", "<tool_call|>", "<|\"|>", writes_gemma4_call, read_gemma4_call, gemma4_calls_gbnf},
    {"qwen3-xml", "<tool_call>", "</tool_call>", "", writes_xml_function, read_xml_function, xml_calls},
    {"nemotron-h", "<TOOLCALL>", "</TOOLCALL>", "", writes_toolcall_array, read_json_array, nemotron_calls},
    {"qwen3-json", "<tool_call>", "</tool_call>", "", writes_json_in_tool_call, read_json_object, qwen3_json_calls},
};

}  // namespace

ordered_json arguments_schema(const ordered_json& function) {
  static const ordered_json kAnyObject = {{"type", "object"}};
  const auto it = function.find("parameters");
  if (it == function.end()) return kAnyObject;
  try {
    (void)json_schema_to_gbnf(*it);
    return *it;
  } catch (const Error&) {
    return kAnyObject;
  }
}

std::string tagless_text_gbnf(const std::string& name) {
  // Three states, by the character just read: '<' (no '|' may follow), '|' (no '>' may
  // follow), anything else. Right-recursive, so the matcher runs it in constant stack depth.
  const std::string other = name + "-o", lt = name + "-lt", bar = name + "-bar";
  return cat(name, " ::= ", other, "\n",
             other, " ::= ( [^<|] ", other, " | \"<\" ", lt, " | \"|\" ", bar, " )?\n",
             lt, " ::= ( [^<|] ", other, " | \"<\" ", lt, " )?\n",
             bar, " ::= ( [^<|>] ", other, " | \"<\" ", lt, " | \"|\" ", bar, " )?\n");
}

std::span<const ToolCallFormat> tool_call_formats() { return kToolCallFormats; }

const ToolCallFormat* tool_call_format_for(std::string_view template_source) {
  for (const ToolCallFormat& f : kToolCallFormats) {
    if (f.recognizes(template_source)) return &f;
  }
  return nullptr;
}

}  // namespace fulgur::server
