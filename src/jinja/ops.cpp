#include <cmath>

#include "jinja/builtins.h"
#include "jinja/text.h"
#include "core/error.h"

namespace fulgur::chat {
namespace {

// Caps that keep a hostile template from exhausting memory ('x' * 10**12).
constexpr int64_t kMaxRepeatBytes = int64_t{256} << 20;

bool is_ascii(const std::string& s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

std::string type_object(const Value& v) {
  return v.is_none() ? "None" : v.type_name() + " object";
}

[[noreturn]] void unsupported(std::string_view op, const Value& a, const Value& b) {
  fail("unsupported operand type(s) for ", op, ": '", a.type_name(), "' and '", b.type_name(), "'");
}

Value repeat(const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    FULGUR_CHECK(static_cast<int64_t>(seq.str().size()) * n <= kMaxRepeatBytes,
                 "string repetition result too large");
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += seq.str();
    return Value(std::move(out));
  }
  FULGUR_CHECK(static_cast<int64_t>(seq.items().size()) * n <= kMaxRepeatBytes / 64,
               "list repetition result too large");
  std::vector<Value> out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
  return Value::list(std::move(out), seq.is_tuple());
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

void undefined_error(const Value& undefined) {
  fail(undefined.str().empty() ? std::string("undefined value") : undefined.str());
}

Value binary_op(std::string_view op, const Value& a, const Value& b) {
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  const bool nums = a.is_number() && b.is_number();
  const bool ints = nums && !a.is_float() && !b.is_float();
  if (op == "+") {
    if (ints) {
      int64_t r;
      FULGUR_CHECK(!__builtin_add_overflow(a.as_int(), b.as_int(), &r), "integer overflow in '+'");
      return Value(r);
    }
    if (nums) return Value(a.as_number() + b.as_number());
    if (a.is_string() && b.is_string()) return Value(a.str() + b.str());
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      std::vector<Value> out = a.items();
      out.insert(out.end(), b.items().begin(), b.items().end());
      return Value::list(std::move(out), a.is_tuple());
    }
    if (a.is_string()) fail("can only concatenate str (not \"", b.type_name(), "\") to str");
    unsupported(op, a, b);
  }
  if (op == "-") {
    if (ints) {
      int64_t r;
      FULGUR_CHECK(!__builtin_sub_overflow(a.as_int(), b.as_int(), &r), "integer overflow in '-'");
      return Value(r);
    }
    if (nums) return Value(a.as_number() - b.as_number());
    unsupported(op, a, b);
  }
  if (op == "*") {
    if (ints) {
      int64_t r;
      FULGUR_CHECK(!__builtin_mul_overflow(a.as_int(), b.as_int(), &r), "integer overflow in '*'");
      return Value(r);
    }
    if (nums) return Value(a.as_number() * b.as_number());
    if ((a.is_string() || a.is_list()) && b.is_number() && !b.is_float())
      return repeat(a, b.as_int());
    if ((b.is_string() || b.is_list()) && a.is_number() && !a.is_float())
      return repeat(b, a.as_int());
    unsupported(op, a, b);
  }
  if (op == "/") {
    if (!nums) unsupported(op, a, b);
    FULGUR_CHECK(b.as_number() != 0.0, "division by zero");
    return Value(a.as_number() / b.as_number());
  }
  if (op == "//") {
    if (!nums) unsupported(op, a, b);
    FULGUR_CHECK(b.as_number() != 0.0, "integer division or modulo by zero");
    if (ints) return Value(floor_div(a.as_int(), b.as_int()));
    return Value(std::floor(a.as_number() / b.as_number()));
  }
  if (op == "%") {
    if (a.is_string()) fail("printf-style string formatting ('%') is not supported");
    if (!nums) unsupported(op, a, b);
    FULGUR_CHECK(b.as_number() != 0.0, "integer division or modulo by zero");
    if (ints) {
      const int64_t r = a.as_int() % b.as_int();
      return Value((r != 0 && ((r < 0) != (b.as_int() < 0))) ? r + b.as_int() : r);
    }
    double r = std::fmod(a.as_number(), b.as_number());
    if (r != 0.0 && ((r < 0) != (b.as_number() < 0))) r += b.as_number();
    return Value(r);
  }
  if (op == "**") {
    if (!nums) unsupported(op, a, b);
    if (ints && b.as_int() >= 0) {  // exponentiation by squaring with overflow checks
      int64_t result = 1, base = a.as_int(), e = b.as_int();
      while (e > 0) {
        if ((e & 1) && __builtin_mul_overflow(result, base, &result))
          fail("integer overflow in '**'");
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(base, base, &base)) fail("integer overflow in '**'");
      }
      return Value(result);
    }
    return Value(std::pow(a.as_number(), b.as_number()));
  }
  fail("unknown operator '", op, "'");
}

Value negate(const Value& v) {
  if (v.is_undefined()) undefined_error(v);
  if (v.is_float()) return Value(-v.as_number());
  if (v.is_number()) return Value(-v.as_int());
  fail("bad operand type for unary -: '", v.type_name(), "'");
}

namespace {

// Python's ordering: -1, 0, 1; throws for unorderable types.
int order(const Value& a, const Value& b, std::string_view op) {
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  if (a.is_number() && b.is_number()) {
    if (!a.is_float() && !b.is_float())
      return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
    const double x = a.as_number(), y = b.as_number();
    return x < y   ? -1
           : x > y ? 1
                   : 0;  // NaN compares as equal here; all its comparisons are false below
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.str().compare(b.str());  // UTF-8 byte order == code point order
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list()) {
    const auto& x = a.items();
    const auto& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!values_equal(x[i], y[i])) return order(x[i], y[i], op);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  fail("'", op, "' not supported between instances of '", a.type_name(), "' and '", b.type_name(),
       "'");
}

}  // namespace

bool compare_op(std::string_view op, const Value& a, const Value& b) {
  if (op == "==") return values_equal(a, b);
  if (op == "!=") return !values_equal(a, b);
  if ((a.is_float() && std::isnan(a.as_number())) || (b.is_float() && std::isnan(b.as_number()))) {
    order(a, b, op);  // still type-checks
    return false;
  }
  const int c = order(a, b, op);
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  if (op == ">=") return c >= 0;
  fail("unknown comparison '", op, "'");
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined:
      return false;  // Undefined iterates as empty
    case Value::Kind::kString:
      if (!item.is_string())
        fail("'in <string>' requires string as left operand, not ", item.type_name());
      return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& x : container.items()) {
        if (values_equal(x, item)) return true;
      }
      return false;
    case Value::Kind::kDict:
      FULGUR_CHECK(!container.is_namespace(), "argument of type 'Namespace' is not iterable");
      return item.is_string() && container.dict_data().find(item.str()) != nullptr;
    default:
      fail("argument of type '", container.type_name(), "' is not iterable");
  }
}

Value get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) undefined_error(obj);
  if (obj.is_dict()) {
    if (!obj.is_namespace()) {
      Value method = bound_method(obj, name);  // Python getattr finds dict methods first
      if (!method.is_undefined()) return method;
    }
    if (const Value* v = obj.dict_data().find(name)) return *v;
  } else {
    Value method = bound_method(obj, name);
    if (!method.is_undefined()) return method;
  }
  return Value::undefined(cat("'", type_object(obj), "' has no attribute '", name, "'"));
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) undefined_error(obj);
  if (obj.is_dict() && key.is_string()) {
    if (const Value* v = obj.dict_data().find(key.str())) return *v;
  } else if ((obj.is_list() || obj.is_string()) && key.is_number() && !key.is_float()) {
    int64_t i = key.as_int();
    if (obj.is_list()) {
      const int64_t n = static_cast<int64_t>(obj.items().size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return obj.items()[i];
    } else if (is_ascii(obj.str())) {
      const int64_t n = static_cast<int64_t>(obj.str().size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return Value(obj.str().substr(i, 1));
    } else {
      const std::u32string u = utf8_decode(obj.str());
      const int64_t n = static_cast<int64_t>(u.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return Value(utf8_encode(std::u32string_view(u).substr(i, 1)));
    }
    return Value::undefined(cat(type_object(obj), " has no element ", key.as_int()));
  }
  if (key.is_string()) {  // jinja2 falls back to getattr for string keys
    if (!obj.is_dict() || !obj.is_namespace()) {
      Value method = bound_method(obj, key.str());
      if (!method.is_undefined()) return method;
    }
    return Value::undefined(cat("'", type_object(obj), "' has no attribute '", key.str(), "'"));
  }
  return Value::undefined(cat(type_object(obj), " has no element ", key.repr()));
}

Value slice(const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v) {
  if (obj.is_undefined()) undefined_error(obj);
  auto index_of = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (!v.is_number() || v.is_float())
      fail("slice ", what, " must be an integer or None, got ", v.type_name());
    return v.as_int();
  };
  const auto start_o = index_of(start_v, "start");
  const auto stop_o = index_of(stop_v, "stop");
  const int64_t step = index_of(step_v, "step").value_or(1);
  FULGUR_CHECK(step != 0, "slice step cannot be zero");
  std::u32string u;
  int64_t len = 0;
  if (obj.is_list()) {
    len = static_cast<int64_t>(obj.items().size());
  } else if (obj.is_string()) {
    u = utf8_decode(obj.str());
    len = static_cast<int64_t>(u.size());
  } else {
    fail("'", obj.type_name(), "' object is not subscriptable");
  }
  // CPython's PySlice_AdjustIndices.
  const int64_t lower = step < 0 ? -1 : 0;
  const int64_t upper = step < 0 ? len - 1 : len;
  auto adjust = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    int64_t x = *v;
    if (x < 0) {
      x += len;
      if (x < lower) x = lower;
    } else if (x > upper) {
      x = upper;
    }
    return x;
  };
  const int64_t start = adjust(start_o, step < 0 ? upper : lower);
  const int64_t stop = adjust(stop_o, step < 0 ? lower : upper);
  if (obj.is_list()) {
    std::vector<Value> out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
      out.push_back(obj.items()[i]);
    return Value::list(std::move(out), obj.is_tuple());
  }
  std::u32string out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(u[i]);
  return Value(utf8_encode(out));
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kList:
      return v.items();
    case Value::Kind::kDict: {
      FULGUR_CHECK(!v.is_namespace(), "'Namespace' object is not iterable");
      std::vector<Value> keys;
      for (const auto& [k, x] : v.dict_data().items) keys.emplace_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<Value> chars;
      for (char32_t c : utf8_decode(v.str())) {
        std::string s;
        utf8_append(s, c);
        chars.emplace_back(std::move(s));
      }
      return chars;
    }
    default:
      fail("'", v.type_name(), "' object is not iterable");
  }
}

int64_t length_of(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return 0;
    case Value::Kind::kString:
      return static_cast<int64_t>(utf8_length(v.str()));
    case Value::Kind::kList:
      return static_cast<int64_t>(v.items().size());
    case Value::Kind::kDict:
      if (!v.is_namespace()) return static_cast<int64_t>(v.dict_data().items.size());
      [[fallthrough]];
    default:
      fail("object of type '", v.type_name(), "' has no len()");
  }
}

}  // namespace fulgur::chat
