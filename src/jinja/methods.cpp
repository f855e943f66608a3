#include <ctime>

#include "jinja/builtins.h"
#include "jinja/text.h"
#include "core/ascii.h"
#include "core/error.h"

namespace fulgur::chat {

ArgBinder::ArgBinder(const CallArgs& args, std::string_view fn,
                     std::initializer_list<std::string_view> names, bool allow_extra_positional)
    : fn_(fn), names_(names), bound_(names.size()) {
  for (size_t i = 0; i < args.args.size(); ++i) {
    if (i < names_.size()) {
      bound_[i] = args.args[i];
    } else if (allow_extra_positional) {
      extra_.push_back(args.args[i]);
    } else {
      fail(fn, "() takes at most ", names_.size(), " argument(s) (", args.args.size(), " given)");
    }
  }
  for (const auto& [key, value] : args.kwargs) {
    size_t i = 0;
    while (i < names_.size() && names_[i] != key) ++i;
    if (i == names_.size()) fail(fn, "() got an unexpected keyword argument '", key, "'");
    bound_[i] = value;
  }
}

int64_t ArgBinder::get_int(size_t i, int64_t fallback) const {
  if (!has(i) || bound_[i].is_none()) return fallback;
  FULGUR_CHECK(bound_[i].is_number() && !bound_[i].is_float(), fn_, "(): argument '", names_[i],
               "' must be an integer, got ", bound_[i].type_name());
  return bound_[i].as_int();
}

bool ArgBinder::get_bool(size_t i, bool fallback) const {
  if (!has(i)) return fallback;
  return bound_[i].truthy();
}

std::string ArgBinder::get_string(size_t i, const std::string& fallback) const {
  if (!has(i) || bound_[i].is_none()) return fallback;
  FULGUR_CHECK(bound_[i].is_string(), fn_, "(): argument '", names_[i], "' must be a string, got ",
               bound_[i].type_name());
  return bound_[i].str();
}

namespace {

std::optional<std::string> optional_string(const ArgBinder& b, size_t i) {
  if (!b.has(i) || b[i].is_none()) return std::nullopt;
  return b.get_string(i, "");
}

// str.startswith/endswith accept a string or a tuple of strings.
bool affix_matches(const std::string& s, const Value& affix, bool prefix) {
  auto one = [&](const Value& a) {
    FULGUR_CHECK(a.is_string(), prefix ? "startswith" : "endswith",
                 "() argument must be str or a tuple of str, not ", a.type_name());
    const std::string& x = a.str();
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0
                  : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (affix.is_list()) {
    for (const Value& a : affix.items()) {
      if (one(a)) return true;
    }
    return false;
  }
  return one(affix);
}

template <class Pred>
bool all_chars(const std::string& s, Pred pred) {
  if (s.empty()) return false;
  for (char32_t c : utf8_decode(s)) {
    if (!pred(c)) return false;
  }
  return true;
}

bool is_alpha(char32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_digit(char32_t c) {
  return c >= '0' && c <= '9';
}

Value string_method(const std::string& s, const std::string& name, CallArgs& args) {
  if (name == "startswith" || name == "endswith") {
    ArgBinder b(args, name, {"affix"});
    FULGUR_CHECK(b.has(0), name, "() takes at least 1 argument");
    return Value(affix_matches(s, b[0], name == "startswith"));
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    ArgBinder b(args, name, {"chars"});
    return Value(py_strip(s, optional_string(b, 0), name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    ArgBinder b(args, name, {"sep", "maxsplit"});
    std::vector<Value> out;
    for (auto& part : py_split(s, optional_string(b, 0), b.get_int(1, -1), name == "rsplit"))
      out.emplace_back(std::move(part));
    return Value::list(std::move(out));
  }
  if (name == "splitlines") {
    ArgBinder b(args, name, {"keepends"});
    std::vector<Value> out;
    std::vector<std::string> parts = py_split(s, std::string("\n"), -1, false);
    if (!parts.empty() && parts.back().empty()) parts.pop_back();
    for (auto& part : parts) out.emplace_back(std::move(part));
    return Value::list(std::move(out));
  }
  if (name == "upper") return Value(ascii_upper(s));
  if (name == "lower") return Value(ascii_lower(s));
  if (name == "title") return Value(py_title(s));
  if (name == "capitalize") return Value(py_capitalize(s));
  if (name == "replace") {
    ArgBinder b(args, name, {"old", "new", "count"});
    return Value(py_replace(s, b.get_string(0, ""), b.get_string(1, ""), b.get_int(2, -1)));
  }
  if (name == "find" || name == "rfind" || name == "count" || name == "index" || name == "rindex") {
    ArgBinder b(args, name, {"sub"});
    const std::string sub = b.get_string(0, "");
    if (name == "count") {
      if (sub.empty()) return Value(static_cast<int64_t>(utf8_length(s) + 1));
      int64_t n = 0;
      for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
      return Value(n);
    }
    const size_t at = (name == "find" || name == "index") ? s.find(sub) : s.rfind(sub);
    if (at == std::string::npos) {
      FULGUR_CHECK(name != "index" && name != "rindex", "substring not found");
      return Value(int64_t{-1});
    }
    return Value(static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, at))));
  }
  if (name == "join") {
    ArgBinder b(args, name, {"iterable"});
    std::string out;
    bool first = true;
    for (const Value& item : iterate(b[0])) {
      FULGUR_CHECK(item.is_string(), "join(): expected str items, got ", item.type_name());
      if (!first) out += s;
      first = false;
      out += item.str();
    }
    return Value(std::move(out));
  }
  ArgBinder b(args, name, {});
  if (name == "isdigit") return Value(all_chars(s, is_digit));
  if (name == "isalpha") return Value(all_chars(s, is_alpha));
  if (name == "isalnum")
    return Value(all_chars(s, [](char32_t c) { return is_alpha(c) || is_digit(c); }));
  if (name == "isspace") return Value(all_chars(s, py_isspace));
  if (name == "islower") return Value(ascii_lower(s) == s && ascii_upper(s) != s);
  if (name == "isupper") return Value(ascii_upper(s) == s && ascii_lower(s) != s);
  fail("'str' object has no attribute '", name, "'");
}

Value dict_method(const Value& d, const std::string& name, CallArgs& args) {
  if (name == "get") {
    ArgBinder b(args, name, {"key", "default"});
    if (b[0].is_string()) {
      if (const Value* v = d.dict_data().find(b[0].str())) return *v;
    }
    return b.has(1) ? b[1] : Value::none();
  }
  ArgBinder b(args, name, {});
  std::vector<Value> out;
  for (const auto& [k, v] : d.dict_data().items) {
    if (name == "items")
      out.push_back(Value::list({Value(k), v}, true));
    else if (name == "keys")
      out.emplace_back(k);
    else
      out.push_back(v);
  }
  return Value::list(std::move(out));
}

bool is_string_method(const std::string& n) {
  static const char* const kNames[] = {
      "startswith", "endswith", "strip",   "lstrip", "rstrip",     "split",   "rsplit",
      "splitlines", "upper",    "lower",   "title",  "capitalize", "replace", "find",
      "rfind",      "count",    "index",   "rindex", "join",       "isdigit", "isalpha",
      "isalnum",    "isspace",  "islower", "isupper"};
  for (const char* k : kNames) {
    if (n == k) return true;
  }
  return false;
}

}  // namespace

Value bound_method(const Value& self, const std::string& name) {
  if (self.is_string() && is_string_method(name)) {
    return Value::function("str." + name, [self, name](CallArgs& args) {
      return string_method(self.str(), name, args);
    });
  }
  if (self.is_dict() && !self.is_namespace() &&
      (name == "get" || name == "items" || name == "keys" || name == "values")) {
    return Value::function("dict." + name,
                           [self, name](CallArgs& args) { return dict_method(self, name, args); });
  }
  return Value();
}

std::vector<std::pair<std::string, Value>> global_functions() {
  std::vector<std::pair<std::string, Value>> g;
  g.emplace_back(
      "range", Value::function("range", [](CallArgs& args) {
        ArgBinder b(args, "range", {"a", "b", "step"});
        FULGUR_CHECK(b.has(0), "range expected at least 1 argument");
        int64_t start = 0, stop = b.get_int(0, 0);
        if (b.has(1)) {
          start = stop;
          stop = b.get_int(1, 0);
        }
        const int64_t step = b.get_int(2, 1);
        FULGUR_CHECK(step != 0, "range() arg 3 must not be zero");
        // jinja2's sandbox caps range() at 100000 items (MAX_RANGE).
        const int64_t count = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                                       : (start > stop ? (start - stop - step - 1) / -step : 0);
        FULGUR_CHECK(count <= 100000,
                     "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
        std::vector<Value> out;
        out.reserve(static_cast<size_t>(count));
        for (int64_t i = 0; i < count; ++i) out.emplace_back(start + i * step);
        return Value::list(std::move(out));
      }));
  g.emplace_back("namespace", Value::function("namespace", [](CallArgs& args) {
                   Value ns = Value::namespace_object();
                   for (const Value& a : args.args) {
                     FULGUR_CHECK(a.is_dict() && !a.is_namespace(),
                                  "namespace() positional argument must be a mapping");
                     for (const auto& [k, v] : a.dict_data().items) ns.mutable_dict().set(k, v);
                   }
                   for (const auto& [k, v] : args.kwargs) ns.mutable_dict().set(k, v);
                   return ns;
                 }));
  g.emplace_back("dict", Value::function("dict", [](CallArgs& args) {
                   std::vector<std::pair<std::string, Value>> items;
                   for (const Value& a : args.args) {
                     FULGUR_CHECK(a.is_dict() && !a.is_namespace(),
                                  "dict() positional argument must be a mapping");
                     items.insert(items.end(), a.dict_data().items.begin(),
                                  a.dict_data().items.end());
                   }
                   items.insert(items.end(), args.kwargs.begin(), args.kwargs.end());
                   return Value::dict(std::move(items));
                 }));
  g.emplace_back("raise_exception", Value::function("raise_exception", [](CallArgs& args) -> Value {
                   ArgBinder b(args, "raise_exception", {"message"});
                   fail(b[0].to_string());
                 }));
  g.emplace_back("strftime_now", Value::function("strftime_now", [](CallArgs& args) {
                   ArgBinder b(args, "strftime_now", {"format"});
                   const std::string fmt = b.get_string(0, "");
                   const std::time_t now = std::time(nullptr);
                   std::tm tm{};
                   localtime_r(&now, &tm);
                   char buf[512];
                   const size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
                   return Value(std::string(buf, n));
                 }));
  return g;
}

}  // namespace fulgur::chat
