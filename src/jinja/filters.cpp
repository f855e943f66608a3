#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "jinja/builtins.h"
#include "jinja/text.h"
#include "core/ascii.h"
#include "core/error.h"

namespace fulgur::chat {
namespace {

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

// Dotted attribute path lookup used by map/selectattr/sort/join(attribute=...).
Value attribute_path(const Value& v, const std::string& path) {
  Value cur = v;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(),
                                                      [](char c) { return c >= '0' && c <= '9'; });
    cur = numeric ? get_item(cur, Value(static_cast<int64_t>(std::atoll(part.c_str()))))
                  : get_item(cur, Value(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

// Sort/unique key: strings fold to lower case unless case_sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  return (!case_sensitive && v.is_string()) ? Value(ascii_lower(v.str())) : v;
}

Value to_int(const Value& v, const Value& fallback, int base) {
  if (v.is_number())
    return v.is_float() ? Value(static_cast<int64_t>(std::trunc(v.as_number())))
                        : Value(v.as_int());
  if (v.is_string()) {
    std::string s = py_strip(v.str(), std::nullopt, true, true);
    s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
    if (!s.empty()) {
      errno = 0;
      char* end = nullptr;
      const long long i = std::strtoll(s.c_str(), &end, base);
      if (errno == 0 && *end == '\0') return Value(static_cast<int64_t>(i));
      // jinja2 falls back to int(float(s))
      const double d = std::strtod(s.c_str(), &end);
      if (*end == '\0' && std::isfinite(d)) return Value(static_cast<int64_t>(std::trunc(d)));
    }
  }
  return fallback;
}

Value to_float(const Value& v, const Value& fallback) {
  if (v.is_number()) return Value(v.as_number());
  if (v.is_string()) {
    const std::string s = py_strip(v.str(), std::nullopt, true, true);
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && *end == '\0') return Value(d);
  }
  return fallback;
}

std::string indent_text(const std::string& s, const std::string& pad, bool first, bool blank) {
  // jinja2 appends "\n" then uses splitlines(); lines are joined back with "\n".
  std::vector<std::string> lines = py_split(s + "\n", std::string("\n"), -1, false);
  lines.pop_back();
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      out += "\n";
      if (blank || !lines[i].empty()) out += pad;
    }
    out += lines[i];
  }
  return first ? pad + out : out;
}

// select/reject/selectattr/rejectattr share this: keep items whose test result == keep.
Value filter_items(const Value& input, CallArgs& args, bool keep, bool by_attribute,
                   const std::string& fname) {
  size_t next = 0;
  std::string attr;
  if (by_attribute) {
    FULGUR_CHECK(!args.args.empty() && args.args[0].is_string(), fname,
                 "(): expected an attribute name");
    attr = args.args[0].str();
    next = 1;
  }
  std::string test;
  CallArgs test_args;
  if (next < args.args.size()) {
    FULGUR_CHECK(args.args[next].is_string(), fname, "(): expected a test name");
    test = args.args[next].str();
    test_args.args.assign(args.args.begin() + static_cast<std::ptrdiff_t>(next) + 1,
                          args.args.end());
    test_args.kwargs = args.kwargs;
  }
  std::vector<Value> out;
  for (const Value& item : iterate(input)) {
    const Value subject = by_attribute ? attribute_path(item, attr) : item;
    CallArgs call = test_args;
    const bool result = test.empty() ? subject.truthy() : apply_test(test, subject, call);
    if (result == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

}  // namespace

Value apply_filter(const std::string& name, const Value& input, CallArgs& args) {
  if (name == "safe" || name == "string" || name == "e" || name == "escape" ||
      name == "forceescape") {
    ArgBinder b(args, name, {});
    if (name == "safe") return input;
    if (name == "string") return Value(input.to_string());
    return Value(html_escape(input.to_string()));
  }
  if (name == "trim") {
    ArgBinder b(args, name, {"chars"});
    std::optional<std::string> chars;
    if (b.has(0) && !b[0].is_none()) chars = b.get_string(0, "");
    return Value(py_strip(input.to_string(), chars, true, true));
  }
  if (name == "length" || name == "count") {
    ArgBinder b(args, name, {});
    return Value(length_of(input));
  }
  if (name == "tojson") {
    ArgBinder b(args, name, {"ensure_ascii", "indent", "separators", "sort_keys"});
    JsonDumpOptions opt;
    opt.ensure_ascii = b.get_bool(0, false);
    if (b.has(1) && !b[1].is_none()) {
      opt.indent = b[1].is_string() ? static_cast<int>(b[1].str().size())
                                    : static_cast<int>(b.get_int(1, 0));
      FULGUR_CHECK(opt.indent >= 0 && opt.indent <= 64, "tojson(): indent must be in [0, 64]");
    }
    if (b.has(2) && !b[2].is_none()) {
      FULGUR_CHECK(b[2].is_list() && b[2].items().size() == 2 && b[2].items()[0].is_string() &&
                       b[2].items()[1].is_string(),
                   "tojson(): separators must be a pair of strings");
      opt.item_separator = b[2].items()[0].str();
      opt.key_separator = b[2].items()[1].str();
      FULGUR_CHECK(!opt.item_separator.empty() && !opt.key_separator.empty(),
                   "tojson(): empty separators are not supported");
    }
    opt.sort_keys = b.get_bool(3, false);
    if (input.is_undefined()) fail("Object of type Undefined is not JSON serializable");
    return Value(json_dumps(input, opt));
  }
  if (name == "upper" || name == "lower" || name == "capitalize" || name == "title") {
    ArgBinder b(args, name, {});
    const std::string s = input.to_string();
    if (name == "upper") return Value(ascii_upper(s));
    if (name == "lower") return Value(ascii_lower(s));
    if (name == "capitalize") return Value(py_capitalize(s));
    return Value(py_title(s));
  }
  if (name == "join") {
    ArgBinder b(args, name, {"d", "attribute"});
    const std::string sep = b.get_string(0, "");
    std::string out;
    bool first = true;
    for (const Value& item : iterate(input)) {
      if (!first) out += sep;
      first = false;
      out += (b.has(1) ? attribute_path(item, b.get_string(1, "")) : item).to_string();
    }
    return Value(std::move(out));
  }
  if (name == "default" || name == "d") {
    ArgBinder b(args, name, {"default_value", "boolean"});
    const bool use_default = b.get_bool(1, false) ? !input.truthy() : input.is_undefined();
    if (!use_default) return input;
    return b.has(0) ? b[0] : Value("");
  }
  if (name == "first" || name == "last") {
    ArgBinder b(args, name, {});
    std::vector<Value> xs = iterate(input);
    if (xs.empty()) return Value::undefined(cat("No ", name, " item, sequence was empty."));
    return name == "first" ? xs.front() : xs.back();
  }
  if (name == "items") {
    ArgBinder b(args, name, {});
    if (input.is_undefined()) return Value::list({});
    FULGUR_CHECK(input.is_dict() && !input.is_namespace(),
                 "Can only get item pairs from a mapping.");
    std::vector<Value> out;
    for (const auto& [k, v] : input.dict_data().items)
      out.push_back(Value::list({Value(k), v}, true));
    return Value::list(std::move(out));
  }
  if (name == "list") {
    ArgBinder b(args, name, {});
    return Value::list(iterate(input));
  }
  if (name == "replace") {
    ArgBinder b(args, name, {"old", "new", "count"});
    FULGUR_CHECK(b.has(0) && b.has(1), "replace(): expected old and new strings");
    return Value(py_replace(input.to_string(), b[0].to_string(), b[1].to_string(),
                            b.has(2) && !b[2].is_none() ? b.get_int(2, -1) : -1));
  }
  if (name == "int") {
    ArgBinder b(args, name, {"default", "base"});
    return to_int(input, b.has(0) ? b[0] : Value(int64_t{0}), static_cast<int>(b.get_int(1, 10)));
  }
  if (name == "float") {
    ArgBinder b(args, name, {"default"});
    return to_float(input, b.has(0) ? b[0] : Value(0.0));
  }
  if (name == "abs") {
    ArgBinder b(args, name, {});
    if (input.is_float()) return Value(std::fabs(input.as_number()));
    FULGUR_CHECK(input.is_number(), "bad operand type for abs(): '", input.type_name(), "'");
    return Value(input.as_int() < 0 ? -input.as_int() : input.as_int());
  }
  if (name == "round") {
    ArgBinder b(args, name, {"precision", "method"});
    FULGUR_CHECK(input.is_number(), "round(): expected a number, got ", input.type_name());
    const int64_t precision = b.get_int(0, 0);
    const std::string method = b.get_string(1, "common");
    const double scale = std::pow(10.0, static_cast<double>(precision));
    const double x = input.as_number() * scale;
    double r;
    if (method == "common")
      r = std::nearbyint(x);  // Python's round(): ties to even
    else if (method == "ceil")
      r = std::ceil(x);
    else if (method == "floor")
      r = std::floor(x);
    else
      fail("round(): method must be 'common', 'ceil' or 'floor'");
    return Value(r / scale);
  }
  if (name == "reverse") {
    ArgBinder b(args, name, {});
    if (input.is_string()) {
      std::u32string u = utf8_decode(input.str());
      std::reverse(u.begin(), u.end());
      return Value(utf8_encode(u));
    }
    std::vector<Value> xs = iterate(input);
    std::reverse(xs.begin(), xs.end());
    return Value::list(std::move(xs));
  }
  if (name == "sort" || name == "unique") {
    const bool sort = name == "sort";
    ArgBinder b(
        args, name,
        sort ? std::initializer_list<std::string_view>{"reverse", "case_sensitive", "attribute"}
             : std::initializer_list<std::string_view>{"case_sensitive", "attribute"});
    const bool reverse = sort && b.get_bool(0, false);
    const bool case_sensitive = b.get_bool(sort ? 1 : 0, false);
    const size_t attr_i = sort ? 2 : 1;
    const std::string attr = b.get_string(attr_i, "");
    std::vector<Value> xs = iterate(input);
    auto key = [&](const Value& v) {
      return sort_key(attr.empty() ? v : attribute_path(v, attr), case_sensitive);
    };
    if (sort) {
      std::stable_sort(xs.begin(), xs.end(), [&](const Value& x, const Value& y) {
        return reverse ? compare_op("<", key(y), key(x)) : compare_op("<", key(x), key(y));
      });
      return Value::list(std::move(xs));
    }
    std::vector<Value> out, seen;
    for (const Value& x : xs) {
      const Value k = key(x);
      if (std::none_of(seen.begin(), seen.end(),
                       [&](const Value& s) { return values_equal(s, k); })) {
        seen.push_back(k);
        out.push_back(x);
      }
    }
    return Value::list(std::move(out));
  }
  if (name == "dictsort") {
    ArgBinder b(args, name, {"case_sensitive", "by", "reverse"});
    FULGUR_CHECK(input.is_dict() && !input.is_namespace(), "dictsort(): expected a mapping");
    const bool case_sensitive = b.get_bool(0, false);
    const bool by_value = b.get_string(1, "key") == "value";
    const bool reverse = b.get_bool(2, false);
    std::vector<Value> xs;
    for (const auto& [k, v] : input.dict_data().items)
      xs.push_back(Value::list({Value(k), v}, true));
    std::stable_sort(xs.begin(), xs.end(), [&](const Value& x, const Value& y) {
      const Value kx = sort_key(x.items()[by_value ? 1 : 0], case_sensitive);
      const Value ky = sort_key(y.items()[by_value ? 1 : 0], case_sensitive);
      return reverse ? compare_op("<", ky, kx) : compare_op("<", kx, ky);
    });
    return Value::list(std::move(xs));
  }
  if (name == "map") {
    std::vector<Value> out;
    const Value* attr = nullptr;
    const Value* dflt = nullptr;
    for (const auto& [k, v] : args.kwargs) {
      if (k == "attribute")
        attr = &v;
      else if (k == "default")
        dflt = &v;
    }
    if (attr) {
      for (const Value& item : iterate(input)) {
        Value v = attribute_path(item, attr->to_string());
        out.push_back(v.is_undefined() && dflt ? *dflt : v);
      }
      return Value::list(std::move(out));
    }
    FULGUR_CHECK(!args.args.empty() && args.args[0].is_string(),
                 "map(): expected a filter name or attribute=");
    const std::string filter = args.args[0].str();
    for (const Value& item : iterate(input)) {
      CallArgs call;
      call.args.assign(args.args.begin() + 1, args.args.end());
      call.kwargs = args.kwargs;
      out.push_back(apply_filter(filter, item, call));
    }
    return Value::list(std::move(out));
  }
  if (name == "select") return filter_items(input, args, true, false, name);
  if (name == "reject") return filter_items(input, args, false, false, name);
  if (name == "selectattr") return filter_items(input, args, true, true, name);
  if (name == "rejectattr") return filter_items(input, args, false, true, name);
  if (name == "attr") {
    ArgBinder b(args, name, {"name"});  // attribute only, never an item (unlike `.`)
    if (input.is_undefined()) undefined_error(input);
    Value method = bound_method(input, b.get_string(0, ""));
    return method.is_undefined()
               ? Value::undefined(cat("'", input.type_name(), " object' has no attribute '",
                                      b.get_string(0, ""), "'"))
               : method;
  }
  if (name == "indent") {
    ArgBinder b(args, name, {"width", "first", "blank"});
    const std::string pad =
        b.has(0) && b[0].is_string()
            ? b[0].str()
            : std::string(static_cast<size_t>(std::clamp<int64_t>(b.get_int(0, 4), 0, 256)), ' ');
    return Value(indent_text(input.to_string(), pad, b.get_bool(1, false), b.get_bool(2, false)));
  }
  if (name == "sum") {
    ArgBinder b(args, name, {"attribute", "start"});
    Value total = b.has(1) ? b[1] : Value(int64_t{0});
    for (const Value& item : iterate(input))
      total = binary_op("+", total, b.has(0) ? attribute_path(item, b.get_string(0, "")) : item);
    return total;
  }
  if (name == "min" || name == "max") {
    ArgBinder b(args, name, {"case_sensitive", "attribute"});
    const std::vector<Value> xs = iterate(input);
    if (xs.empty()) return Value::undefined(cat("No aggregated item, sequence was empty."));
    const bool cs = b.get_bool(0, false);
    const std::string attr = b.get_string(1, "");
    auto key = [&](const Value& v) {
      return sort_key(attr.empty() ? v : attribute_path(v, attr), cs);
    };
    const Value* best = &xs[0];
    for (const Value& x : xs) {
      if (compare_op(name == "min" ? "<" : ">", key(x), key(*best))) best = &x;
    }
    return *best;
  }
  if (name == "wordcount") {
    ArgBinder b(args, name, {});
    return Value(static_cast<int64_t>(py_split(input.to_string(), std::nullopt, -1, false).size()));
  }
  fail("no filter named '", name, "'");
}

bool apply_test(const std::string& name, const Value& v, CallArgs& args) {
  ArgBinder b(args, name, {"other"});
  using K = Value::Kind;
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict() && !v.is_namespace();
  if (name == "iterable")
    return v.is_undefined() || v.is_string() || v.is_list() || (v.is_dict() && !v.is_namespace());
  if (name == "sequence")
    return v.is_undefined() || v.is_string() || v.is_list() || (v.is_dict() && !v.is_namespace());
  if (name == "callable") return v.is_callable();
  if (name == "odd" || name == "even") {
    if (v.is_undefined()) undefined_error(v);
    FULGUR_CHECK(v.is_number() && !v.is_float(), "test '", name, "' needs an integer, got ",
                 v.type_name());
    return (v.as_int() % 2 != 0) == (name == "odd");
  }
  if (name == "divisibleby") {
    FULGUR_CHECK(b.has(0) && b[0].is_number() && v.is_number(), "divisibleby needs numbers");
    FULGUR_CHECK(b[0].as_number() != 0, "integer division or modulo by zero");
    return binary_op("%", v, b[0]).as_number() == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") return compare_op("==", v, b[0]);
  if (name == "ne" || name == "!=") return compare_op("!=", v, b[0]);
  if (name == "lt" || name == "lessthan" || name == "<") return compare_op("<", v, b[0]);
  if (name == "le" || name == "<=") return compare_op("<=", v, b[0]);
  if (name == "gt" || name == "greaterthan" || name == ">") return compare_op(">", v, b[0]);
  if (name == "ge" || name == ">=") return compare_op(">=", v, b[0]);
  if (name == "in") return contains(b[0], v);
  if (name == "sameas") {
    const Value& o = b[0];
    if (v.kind() != o.kind()) return false;
    switch (v.kind()) {
      case K::kNone:
      case K::kUndefined:
        return true;
      case K::kList:
        return &v.items() == &o.items();
      case K::kDict:
        return &v.dict_data() == &o.dict_data();
      case K::kCallable:
        return &v.callable() == &o.callable();
      default:
        return values_equal(v, o);
    }
  }
  if (name == "lower" || name == "upper") {  // str(v).islower() / isupper(): needs a cased letter
    const std::string s = v.to_string();
    const bool cased = ascii_lower(s) != ascii_upper(s);
    return cased && (name == "lower" ? ascii_lower(s) == s : ascii_upper(s) == s);
  }
  if (name == "escaped") return false;
  fail("no test named '", name, "'");
}

}  // namespace fulgur::chat
