#include "gguf/gguf_value.h"

#include <cstdio>

namespace fulgur {

bool gguf_type_valid(uint32_t id) {
  return id <= static_cast<uint32_t>(GgufType::kFloat64);
}

std::string gguf_type_name(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
      return "UINT8";
    case GgufType::kInt8:
      return "INT8";
    case GgufType::kUint16:
      return "UINT16";
    case GgufType::kInt16:
      return "INT16";
    case GgufType::kUint32:
      return "UINT32";
    case GgufType::kInt32:
      return "INT32";
    case GgufType::kFloat32:
      return "FLOAT32";
    case GgufType::kBool:
      return "BOOL";
    case GgufType::kString:
      return "STRING";
    case GgufType::kArray:
      return "ARRAY";
    case GgufType::kUint64:
      return "UINT64";
    case GgufType::kInt64:
      return "INT64";
    case GgufType::kFloat64:
      return "FLOAT64";
  }
  return cat("type#", static_cast<uint32_t>(type));
}

size_t gguf_scalar_size(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool:
      return 1;
    case GgufType::kUint16:
    case GgufType::kInt16:
      return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32:
      return 4;
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
      return 8;
    case GgufType::kString:
    case GgufType::kArray:
      return 0;
  }
  return 0;
}

bool gguf_is_integer(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kUint16:
    case GgufType::kInt16:
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kUint64:
    case GgufType::kInt64:
      return true;
    default:
      return false;
  }
}

bool gguf_is_signed(GgufType type) {
  return type == GgufType::kInt8 || type == GgufType::kInt16 || type == GgufType::kInt32 ||
         type == GgufType::kInt64;
}

namespace {

// Sign-extends or zero-extends the little-endian integer at p to 64 bits.
uint64_t load_int(GgufType type, const void* p) {
  switch (type) {
    case GgufType::kUint8: {
      uint8_t v;
      std::memcpy(&v, p, 1);
      return v;
    }
    case GgufType::kInt8: {
      int8_t v;
      std::memcpy(&v, p, 1);
      return static_cast<uint64_t>(int64_t{v});
    }
    case GgufType::kUint16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case GgufType::kInt16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return static_cast<uint64_t>(int64_t{v});
    }
    case GgufType::kUint32: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case GgufType::kInt32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return static_cast<uint64_t>(int64_t{v});
    }
    default: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}

std::string format_scalar(GgufType type, const void* p) {
  switch (type) {
    case GgufType::kBool:
      return *static_cast<const uint8_t*>(p) != 0 ? "true" : "false";
    case GgufType::kFloat32: {
      float v;
      std::memcpy(&v, p, 4);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
      return buf;
    }
    case GgufType::kFloat64: {
      double v;
      std::memcpy(&v, p, 8);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", v);
      return buf;
    }
    default: {
      const uint64_t bits = load_int(type, p);
      return gguf_is_signed(type) ? std::to_string(static_cast<int64_t>(bits))
                                  : std::to_string(bits);
    }
  }
}

// Quotes a string for display, escaping control bytes so a hostile file cannot drive the terminal.
std::string quote(const std::string& s, size_t max_bytes) {
  std::string out = "\"";
  const size_t n = s.size() < max_bytes ? s.size() : max_bytes;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (n < s.size()) out += cat("...(", s.size(), " bytes)");
  out += '"';
  return out;
}

}  // namespace

GgufValue GgufValue::string(std::string s) {
  GgufValue out;
  out.type_ = out.elem_ = GgufType::kString;
  out.str_ = std::move(s);
  return out;
}

GgufValue GgufValue::string_array(std::vector<std::string> v) {
  GgufValue out;
  out.type_ = GgufType::kArray;
  out.elem_ = GgufType::kString;
  out.count_ = v.size();
  out.strings_ = std::move(v);
  return out;
}

GgufValue GgufValue::raw_array(GgufType element, size_t count, std::vector<uint8_t> bytes) {
  const size_t esize = gguf_scalar_size(element);
  FULGUR_CHECK(esize != 0, "raw_array: element type ", gguf_type_name(element),
               " is not a fixed-size scalar");
  FULGUR_CHECK(bytes.size() / esize == count && bytes.size() % esize == 0,
               "raw_array: ", bytes.size(), " bytes do not hold ", count, " elements of ",
               gguf_type_name(element));
  if (element == GgufType::kBool) {
    for (size_t i = 0; i < count; ++i) {
      FULGUR_CHECK(bytes[i] <= 1, "BOOL array element ", i, " is ", +bytes[i], ", expected 0 or 1");
    }
  }
  GgufValue out;
  out.type_ = GgufType::kArray;
  out.elem_ = element;
  out.count_ = count;
  out.raw_ = std::move(bytes);
  return out;
}

std::string GgufValue::type_name() const {
  if (is_array()) return cat("ARRAY[", gguf_type_name(elem_), "]");
  return gguf_type_name(type_);
}

void GgufValue::expect_scalar(GgufType t, std::string_view what) const {
  if (type_ != t) fail(what, ": expected ", gguf_type_name(t), ", got ", type_name());
}

void GgufValue::expect_array(GgufType t, std::string_view what) const {
  if (type_ != GgufType::kArray || elem_ != t) {
    fail(what, ": expected ARRAY[", gguf_type_name(t), "], got ", type_name());
  }
}

void GgufValue::expect_int_array(std::string_view what) const {
  if (type_ != GgufType::kArray || !gguf_is_integer(elem_)) {
    fail(what, ": expected an array of integers, got ", type_name());
  }
}

GgufValue::IntBits GgufValue::int_bits(std::string_view what) const {
  if (!gguf_is_integer(type_)) fail(what, ": expected an integer, got ", type_name());
  return {gguf_is_signed(type_), load_int(type_, &bits_)};
}

GgufValue::IntBits GgufValue::element_int_bits(size_t i) const {
  return {gguf_is_signed(elem_), load_int(elem_, raw_.data() + i * gguf_scalar_size(elem_))};
}

void GgufValue::fail_range(const IntBits& b, std::string_view what, int64_t index,
                           std::string_view range) {
  const std::string value =
      b.is_signed ? std::to_string(static_cast<int64_t>(b.bits)) : std::to_string(b.bits);
  if (index >= 0) fail(what, ": element ", index, " = ", value, " is outside ", range);
  fail(what, ": value ", value, " is outside ", range);
}

double GgufValue::get_float(std::string_view what) const {
  if (type_ == GgufType::kFloat32) return static_cast<double>(get<float>(what));
  if (type_ == GgufType::kFloat64) return get<double>(what);
  fail(what, ": expected FLOAT32 or FLOAT64, got ", type_name());
}

const std::string& GgufValue::get_string(std::string_view what) const {
  expect_scalar(GgufType::kString, what);
  return str_;
}

const std::vector<std::string>& GgufValue::get_strings(std::string_view what) const {
  expect_array(GgufType::kString, what);
  return strings_;
}

GgufValue GgufValue::element(size_t i) const {
  FULGUR_CHECK(is_array(), "element(", i, ") of a non-array ", type_name());
  FULGUR_CHECK(i < count_, "element index ", i, " out of range for an array of ", count_);
  if (elem_ == GgufType::kString) return string(strings_[i]);
  GgufValue out;
  out.type_ = out.elem_ = elem_;
  const size_t esize = gguf_scalar_size(elem_);
  std::memcpy(&out.bits_, raw_.data() + i * esize, esize);
  return out;
}

std::string GgufValue::to_string(size_t max_elements) const {
  constexpr size_t kMaxStringBytes = 200;  // long chat templates would flood a terminal
  if (type_ == GgufType::kString) return quote(str_, kMaxStringBytes);
  if (!is_array()) return format_scalar(type_, &bits_);
  std::string out = "[";
  const size_t n = count_ < max_elements ? count_ : max_elements;
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) out += ", ";
    out += elem_ == GgufType::kString
               ? quote(strings_[i], kMaxStringBytes)
               : format_scalar(elem_, raw_.data() + i * gguf_scalar_size(elem_));
  }
  if (n < count_) out += n > 0 ? ", ..." : "...";
  out += "]";
  return out;
}

bool GgufValue::operator==(const GgufValue& other) const {
  return type_ == other.type_ && elem_ == other.elem_ && bits_ == other.bits_ &&
         str_ == other.str_ && count_ == other.count_ && raw_ == other.raw_ &&
         strings_ == other.strings_;
}

}  // namespace fulgur
