// One GGUF metadata value (reference/archs-gguf.md §1.2): a scalar, a string, or a flat array of
// scalars or strings. Values own their bytes so they outlive the reader that produced them and can
// be handed to the writer unchanged. Every typed accessor takes a `what` string ("file 'm.gguf':
// key 'general.alignment'") that starts the message of the fulgur::Error it throws on a mismatch.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.h"

namespace fulgur {

// GGUF stores little-endian scalars; we copy them into host memory byte for byte.
static_assert(std::endian::native == std::endian::little, "fulgur assumes a little-endian host");

enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// True for the ids 0..12 defined by the format.
bool gguf_type_valid(uint32_t id);
// "UINT32", "STRING", ...; "type#N" for an id outside the format.
std::string gguf_type_name(GgufType type);
// Bytes of a fixed-size scalar; 0 for STRING and ARRAY.
size_t gguf_scalar_size(GgufType type);
bool gguf_is_integer(GgufType type);
bool gguf_is_signed(GgufType type);

// The GGUF type that stores a C++ scalar type; only the 11 fixed-size GGUF scalars qualify.
template <class T>
struct GgufTypeOf;
template <>
struct GgufTypeOf<uint8_t> {
  static constexpr GgufType value = GgufType::kUint8;
};
template <>
struct GgufTypeOf<int8_t> {
  static constexpr GgufType value = GgufType::kInt8;
};
template <>
struct GgufTypeOf<uint16_t> {
  static constexpr GgufType value = GgufType::kUint16;
};
template <>
struct GgufTypeOf<int16_t> {
  static constexpr GgufType value = GgufType::kInt16;
};
template <>
struct GgufTypeOf<uint32_t> {
  static constexpr GgufType value = GgufType::kUint32;
};
template <>
struct GgufTypeOf<int32_t> {
  static constexpr GgufType value = GgufType::kInt32;
};
template <>
struct GgufTypeOf<float> {
  static constexpr GgufType value = GgufType::kFloat32;
};
template <>
struct GgufTypeOf<bool> {
  static constexpr GgufType value = GgufType::kBool;
};
template <>
struct GgufTypeOf<uint64_t> {
  static constexpr GgufType value = GgufType::kUint64;
};
template <>
struct GgufTypeOf<int64_t> {
  static constexpr GgufType value = GgufType::kInt64;
};
template <>
struct GgufTypeOf<double> {
  static constexpr GgufType value = GgufType::kFloat64;
};
template <class T>
inline constexpr GgufType kGgufTypeOf = GgufTypeOf<T>::value;
template <class T>
concept GgufScalar = requires {
  GgufTypeOf<T>::value;
};
template <class T>
concept GgufInteger = GgufScalar<T> && std::is_integral_v<T> && !std::is_same_v<T, bool>;

class GgufValue {
 public:
  GgufValue() = default;  // UINT8 0

  template <GgufScalar T>
  static GgufValue scalar(T v) {
    GgufValue out;
    out.type_ = out.elem_ = kGgufTypeOf<T>;
    std::memcpy(&out.bits_, &v, sizeof(T));
    return out;
  }
  static GgufValue string(std::string s);
  template <GgufScalar T>
  static GgufValue array(std::span<const T> v) {
    std::vector<uint8_t> raw(v.size() * sizeof(T));  // [n] elements, host order
    if (!v.empty()) std::memcpy(raw.data(), v.data(), raw.size());
    return raw_array(kGgufTypeOf<T>, v.size(), std::move(raw));
  }
  template <GgufScalar T>
  static GgufValue array(const std::vector<T>& v) {
    if constexpr (std::is_same_v<T, bool>) {  // vector<bool> is packed; expand to bytes
      std::vector<uint8_t> raw(v.begin(), v.end());
      const size_t n = raw.size();  // before the move below
      return raw_array(GgufType::kBool, n, std::move(raw));
    } else {
      return array(std::span<const T>(v));
    }
  }
  static GgufValue string_array(std::vector<std::string> v);
  // An array of fixed-size scalars from their little-endian bytes (count * scalar size of
  // `element`). BOOL bytes must be 0 or 1.
  static GgufValue raw_array(GgufType element, size_t count, std::vector<uint8_t> bytes);

  GgufType type() const { return type_; }
  bool is_array() const { return type_ == GgufType::kArray; }
  // The element type of an array; the type itself for a scalar or string.
  GgufType element_type() const { return elem_; }
  // Number of elements of an array; 1 for a scalar or string.
  size_t size() const { return is_array() ? count_ : 1; }
  // "UINT32" or "ARRAY[STRING]".
  std::string type_name() const;

  // ---- scalars ----
  // Exactly type T, else Error "<what>: expected UINT32, got INT32".
  template <GgufScalar T>
  T get(std::string_view what = "value") const {
    expect_scalar(kGgufTypeOf<T>, what);
    T v;
    std::memcpy(&v, &bits_, sizeof(T));
    return v;
  }
  // Any integer scalar type whose value fits T, else Error naming the value and T's range.
  template <GgufInteger T>
  T get_int(std::string_view what = "value") const {
    const IntBits b = int_bits(what);
    check_int_range<T>(b, what);
    return from_bits<T>(b);
  }
  // FLOAT32 or FLOAT64.
  double get_float(std::string_view what = "value") const;
  const std::string& get_string(std::string_view what = "value") const;
  bool get_bool(std::string_view what = "value") const { return get<bool>(what); }

  // ---- arrays ----
  // Array whose element type is exactly T.
  template <GgufScalar T>
  std::vector<T> get_array(std::string_view what = "value") const {
    expect_array(kGgufTypeOf<T>, what);
    std::vector<T> out(count_);
    for (size_t i = 0; i < count_; ++i) {
      T v;  // via a temporary: vector<bool> has no addressable elements
      std::memcpy(&v, raw_.data() + i * sizeof(T), sizeof(T));
      out[i] = v;
    }
    return out;
  }
  // Array of any integer element type; each element must fit T.
  template <GgufInteger T>
  std::vector<T> get_int_array(std::string_view what = "value") const {
    expect_int_array(what);
    std::vector<T> out(count_);
    for (size_t i = 0; i < count_; ++i) {
      const IntBits b = element_int_bits(i);
      check_int_range<T>(b, what, static_cast<int64_t>(i));
      out[i] = from_bits<T>(b);
    }
    return out;
  }
  const std::vector<std::string>& get_strings(std::string_view what = "value") const;
  // Little-endian bytes of an array of fixed-size elements ([size() * scalar size]); empty for
  // string arrays and non-arrays.
  const std::vector<uint8_t>& array_bytes() const { return raw_; }
  // Element i of an array as a scalar or string value (index checked).
  GgufValue element(size_t i) const;

  // Human-readable rendering; arrays show at most max_elements elements then "...".
  std::string to_string(size_t max_elements = 8) const;

  bool operator==(const GgufValue& other) const;

 private:
  struct IntBits {
    bool is_signed;
    uint64_t bits;  // the int64 bit pattern when is_signed
  };
  void expect_scalar(GgufType t, std::string_view what) const;
  void expect_array(GgufType t, std::string_view what) const;
  void expect_int_array(std::string_view what) const;
  IntBits int_bits(std::string_view what) const;
  IntBits element_int_bits(size_t i) const;
  [[noreturn]] static void fail_range(const IntBits& b, std::string_view what, int64_t index,
                                      std::string_view range);

  template <class T>
  static void check_int_range(const IntBits& b, std::string_view what, int64_t index = -1) {
    const bool ok =
        b.is_signed ? std::in_range<T>(static_cast<int64_t>(b.bits)) : std::in_range<T>(b.bits);
    if (!ok) {
      fail_range(
          b, what, index,
          cat("[", +std::numeric_limits<T>::min(), ", ", +std::numeric_limits<T>::max(), "]"));
    }
  }
  template <class T>
  static T from_bits(const IntBits& b) {
    return b.is_signed ? static_cast<T>(static_cast<int64_t>(b.bits)) : static_cast<T>(b.bits);
  }

  GgufType type_ = GgufType::kUint8;
  GgufType elem_ = GgufType::kUint8;
  uint64_t bits_ = 0;                 // scalar bytes in the low sizeof(T) bytes
  std::string str_;                   // STRING value
  size_t count_ = 0;                  // array length
  std::vector<uint8_t> raw_;          // [count_ * scalar size] array of fixed-size elements
  std::vector<std::string> strings_;  // [count_] array of STRING
};

}  // namespace fulgur
