// Jinja's runtime operations, filters, tests, methods of str/dict and global functions, with
// Python's semantics where a chat template can observe them. Errors throw fulgur::Error with
// the Python/Jinja-style message; the interpreter prefixes the template position.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/value.h"

namespace fulgur::chat {

// ---- ops.cpp ----
[[noreturn]] void undefined_error(const Value& undefined);
Value binary_op(std::string_view op, const Value& a, const Value& b);  // + - * / // % **
Value negate(const Value& v);
bool compare_op(std::string_view op, const Value& a, const Value& b);  // == != < <= > >=
bool contains(const Value& container, const Value& item);              // item in container
Value get_attr(const Value& obj, const std::string& name);             // obj.name
Value get_item(const Value& obj, const Value& key);                    // obj[key]
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
std::vector<Value> iterate(const Value& v);  // what `for x in v` walks
int64_t length_of(const Value& v);           // len(v); undefined is 0

// ---- filters.cpp ----
Value apply_filter(const std::string& name, const Value& input, CallArgs& args);
bool apply_test(const std::string& name, const Value& input, CallArgs& args);

// ---- methods.cpp ----
// A callable bound to `self` for str/dict methods (s.startswith, d.items, ...), or Undefined.
Value bound_method(const Value& self, const std::string& name);
// range, namespace, dict, raise_exception, strftime_now.
std::vector<std::pair<std::string, Value>> global_functions();

// Binds a call's arguments to parameter names the way Python does for simple signatures.
class ArgBinder {
 public:
  ArgBinder(const CallArgs& args, std::string_view fn,
            std::initializer_list<std::string_view> names, bool allow_extra_positional = false);
  // The i-th parameter, or Undefined when not passed.
  const Value& operator[](size_t i) const { return bound_[i]; }
  bool has(size_t i) const { return !bound_[i].is_undefined(); }
  // Positional arguments beyond the named parameters (only with allow_extra_positional).
  const std::vector<Value>& extra() const { return extra_; }
  // Helpers that validate types with a message naming the function and parameter.
  int64_t get_int(size_t i, int64_t fallback) const;
  bool get_bool(size_t i, bool fallback) const;
  std::string get_string(size_t i, const std::string& fallback) const;

 private:
  std::string fn_;
  std::vector<std::string_view> names_;
  std::vector<Value> bound_;
  std::vector<Value> extra_;
};

}  // namespace fulgur::chat
