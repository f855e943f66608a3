// The values a chat template computes with: Python's None, bool, int, float, str, list/tuple,
// dict, callables, plus Jinja's Undefined. Lists and dicts are shared, immutable after
// construction (HF renders in an immutable sandbox); only namespace() objects are mutated, and
// they must be shared by reference, which is why containers live behind shared_ptr.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace fulgur::chat {

class Value;

// Arguments of a call: positional first, then keyword arguments in source order.
struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
};

using NativeFn = std::function<Value(CallArgs&)>;

struct Callable {
  std::string name;  // for messages and repr
  NativeFn fn;
};

struct ListData {
  std::vector<Value> items;
  bool tuple = false;  // renders as (a, b) instead of [a, b]
};

// Insertion-ordered string-keyed map (JSON objects and Python dicts keep insertion order, and
// json.dumps without sort_keys writes that order).
struct DictData {
  std::vector<std::pair<std::string, Value>> items;
  bool is_namespace = false;
  const Value* find(std::string_view key) const;
  void set(std::string key, Value v);
};

class Value {
 public:
  enum class Kind : uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kCallable
  };

  Value() = default;  // Undefined with no hint
  static Value undefined(std::string hint) {
    Value v;
    v.str_ = std::move(hint);
    return v;
  }
  static Value none() { return Value(Kind::kNone); }
  Value(bool b) : kind_(Kind::kBool), int_(b) {}
  Value(int64_t i) : kind_(Kind::kInt), int_(i) {}
  Value(int i) : kind_(Kind::kInt), int_(i) {}
  Value(double d) : kind_(Kind::kFloat), float_(d) {}
  Value(std::string s) : kind_(Kind::kString), str_(std::move(s)) {}
  Value(const char* s) : kind_(Kind::kString), str_(s) {}
  static Value list(std::vector<Value> items, bool tuple = false);
  static Value dict(std::vector<std::pair<std::string, Value>> items = {});
  static Value namespace_object();
  static Value function(std::string name, NativeFn fn);

  static Value from_json(const nlohmann::json& j);
  static Value from_json(const nlohmann::ordered_json& j);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const {
    return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool;
  }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const { return kind_ == Kind::kDict && dict_->is_namespace; }
  bool is_callable() const { return kind_ == Kind::kCallable; }

  bool as_bool() const { return int_ != 0; }
  int64_t as_int() const { return int_; }  // also valid for kBool
  double as_number() const { return kind_ == Kind::kFloat ? float_ : static_cast<double>(int_); }
  const std::string& str() const { return str_; }  // string value, or an Undefined's hint
  const std::vector<Value>& items() const { return list_->items; }
  bool is_tuple() const { return list_->tuple; }
  const DictData& dict_data() const { return *dict_; }
  DictData& mutable_dict() const { return *dict_; }  // namespaces only
  const Callable& callable() const { return *fn_; }

  bool truthy() const;
  // str(x) as Jinja renders it: Undefined -> "", None -> "None", lists in Python repr.
  std::string to_string() const;
  // repr(x) as Python prints it inside containers.
  std::string repr() const;
  // Python type name for messages ("str", "dict", ...).
  std::string type_name() const;

 private:
  explicit Value(Kind k) : kind_(k) {}

  Kind kind_ = Kind::kUndefined;
  int64_t int_ = 0;
  double float_ = 0.0;
  std::string str_;
  std::shared_ptr<ListData> list_;
  std::shared_ptr<DictData> dict_;
  std::shared_ptr<Callable> fn_;
};

// Python ==, with 1 == 1.0 == True and element-wise containers.
bool values_equal(const Value& a, const Value& b);

// Options of HF's tojson (json.dumps with ensure_ascii=False by default).
struct JsonDumpOptions {
  int indent = -1;  // < 0: single line with ", " and ": " separators
  bool ensure_ascii = false;
  bool sort_keys = false;
  std::string item_separator;  // empty: json.dumps' default for the indent mode
  std::string key_separator;
};
std::string json_dumps(const Value& v, const JsonDumpOptions& opt);

}  // namespace fulgur::chat
