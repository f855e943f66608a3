#include "jinja/value.h"

#include <algorithm>
#include <cmath>

#include "jinja/text.h"
#include "core/error.h"

namespace fulgur::chat {

const Value* DictData::find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void DictData::set(std::string key, Value v) {
  for (auto& [k, old] : items) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(v));
}

Value Value::list(std::vector<Value> items, bool tuple) {
  Value v(Kind::kList);
  v.list_ = std::make_shared<ListData>();
  v.list_->items = std::move(items);
  v.list_->tuple = tuple;
  return v;
}

Value Value::dict(std::vector<std::pair<std::string, Value>> items) {
  Value v(Kind::kDict);
  v.dict_ = std::make_shared<DictData>();
  for (auto& [k, x] : items) v.dict_->set(std::move(k), std::move(x));
  return v;
}

Value Value::namespace_object() {
  Value v = dict();
  v.dict_->is_namespace = true;
  return v;
}

Value Value::function(std::string name, NativeFn fn) {
  Value v(Kind::kCallable);
  v.fn_ = std::make_shared<Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

namespace {

template <class Json>
Value convert_json(const Json& j) {
  switch (j.type()) {
    case nlohmann::detail::value_t::null:
      return Value::none();
    case nlohmann::detail::value_t::boolean:
      return Value(j.template get<bool>());
    case nlohmann::detail::value_t::number_integer:
      return Value(j.template get<int64_t>());
    case nlohmann::detail::value_t::number_unsigned: {
      const auto u = j.template get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<int64_t>(u));
      return Value(static_cast<double>(u));
    }
    case nlohmann::detail::value_t::number_float:
      return Value(j.template get<double>());
    case nlohmann::detail::value_t::string:
      return Value(j.template get<std::string>());
    case nlohmann::detail::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(convert_json(e));
      return Value::list(std::move(items));
    }
    case nlohmann::detail::value_t::object: {
      std::vector<std::pair<std::string, Value>> items;
      items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it)
        items.emplace_back(it.key(), convert_json(it.value()));
      return Value::dict(std::move(items));
    }
    default:
      fail("chat template context: unsupported JSON value type '", j.type_name(), "'");
  }
}

}  // namespace

Value Value::from_json(const nlohmann::json& j) {
  return convert_json(j);
}
Value Value::from_json(const nlohmann::ordered_json& j) {
  return convert_json(j);
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
    case Kind::kInt:
      return int_ != 0;
    case Kind::kFloat:
      return float_ != 0.0;
    case Kind::kString:
      return !str_.empty();
    case Kind::kList:
      return !list_->items.empty();
    case Kind::kDict:
      return dict_->is_namespace || !dict_->items.empty();
    case Kind::kCallable:
      return true;
  }
  return false;
}

std::string Value::to_string() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "";
    case Kind::kString:
      return str_;
    default:
      return repr();
  }
}

std::string Value::repr() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return int_ ? "True" : "False";
    case Kind::kInt:
      return std::to_string(int_);
    case Kind::kFloat:
      return py_float_repr(float_);
    case Kind::kString:
      return py_repr_string(str_);
    case Kind::kList: {
      const auto& xs = list_->items;
      std::string out = list_->tuple ? "(" : "[";
      for (size_t i = 0; i < xs.size(); ++i) {
        if (i) out += ", ";
        out += xs[i].repr();
      }
      if (list_->tuple && xs.size() == 1) out += ",";
      return out + (list_->tuple ? ")" : "]");
    }
    case Kind::kDict: {
      std::string out = dict_->is_namespace ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& [k, v] : dict_->items) {
        if (!first) out += ", ";
        first = false;
        out += py_repr_string(k) + ": " + v.repr();
      }
      return out + (dict_->is_namespace ? "}>" : "}");
    }
    case Kind::kCallable:
      return "<function " + fn_->name + ">";
  }
  return "";
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return list_->tuple ? "tuple" : "list";
    case Kind::kDict:
      return dict_->is_namespace ? "Namespace" : "dict";
    case Kind::kCallable:
      return "function";
  }
  return "?";
}

bool values_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_number() == b.as_number();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.str() == b.str();
    case Value::Kind::kList: {
      const auto& x = a.items();
      const auto& y = b.items();
      if (x.size() != y.size() || a.is_tuple() != b.is_tuple()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!values_equal(x[i], y[i])) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      if (a.is_namespace() || b.is_namespace()) return &a.dict_data() == &b.dict_data();
      const auto& x = a.dict_data();
      const auto& y = b.dict_data();
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* other = y.find(k);
        if (!other || !values_equal(v, *other)) return false;
      }
      return true;
    }
    case Value::Kind::kCallable:
      return &a.callable() == &b.callable();
    default:
      return false;
  }
}

namespace {

void dump_json(std::string& out, const Value& v, const JsonDumpOptions& opt, int depth) {
  FULGUR_CHECK(depth < 512, "tojson: value nested deeper than 512 levels");
  const std::string& item_sep = opt.item_separator.empty()
                                    ? (opt.indent >= 0 ? std::string(",") : std::string(", "))
                                    : opt.item_separator;
  const std::string& key_sep = opt.key_separator.empty() ? std::string(": ") : opt.key_separator;
  auto newline = [&](int level) {
    if (opt.indent < 0) return;
    out.push_back('\n');
    out.append(static_cast<size_t>(opt.indent) * level, ' ');
  };
  switch (v.kind()) {
    case Value::Kind::kNone:
      out += "null";
      return;
    case Value::Kind::kBool:
      out += v.as_bool() ? "true" : "false";
      return;
    case Value::Kind::kInt:
      out += std::to_string(v.as_int());
      return;
    case Value::Kind::kFloat: {
      const double d = v.as_number();
      if (std::isnan(d))
        out += "NaN";
      else if (std::isinf(d))
        out += d < 0 ? "-Infinity" : "Infinity";
      else
        out += py_float_repr(d);
      return;
    }
    case Value::Kind::kString:
      json_append_string(out, v.str(), opt.ensure_ascii);
      return;
    case Value::Kind::kList: {
      const auto& xs = v.items();
      if (xs.empty()) {
        out += "[]";
        return;
      }
      out.push_back('[');
      for (size_t i = 0; i < xs.size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        dump_json(out, xs[i], opt, depth + 1);
      }
      newline(depth);
      out.push_back(']');
      return;
    }
    case Value::Kind::kDict: {
      FULGUR_CHECK(!v.is_namespace(), "Object of type Namespace is not JSON serializable");
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& e : v.dict_data().items) entries.push_back(&e);
      if (opt.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(),
                         [](auto* a, auto* b) { return a->first < b->first; });
      }
      if (entries.empty()) {
        out += "{}";
        return;
      }
      out.push_back('{');
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        json_append_string(out, entries[i]->first, opt.ensure_ascii);
        out += key_sep;
        dump_json(out, entries[i]->second, opt, depth + 1);
      }
      newline(depth);
      out.push_back('}');
      return;
    }
    default:
      fail("Object of type ", v.type_name(), " is not JSON serializable");
  }
}

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& opt) {
  std::string out;
  dump_json(out, v, opt, 0);
  return out;
}

}  // namespace fulgur::chat
