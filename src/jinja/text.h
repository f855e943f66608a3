// Python string semantics over UTF-8 byte strings. Jinja templates run on Python `str`, which is
// indexed by code point, so lengths, slices and strip sets must count code points, not bytes.
// Invalid UTF-8 bytes decode to U+DC80+byte (Python's "surrogateescape"), so every byte string
// round-trips through decode/encode unchanged.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fulgur::chat {

std::u32string utf8_decode(std::string_view s);
std::string utf8_encode(std::u32string_view s);
void utf8_append(std::string& out, char32_t cp);
size_t utf8_length(std::string_view s);

// str.isspace() for one code point (the set Python's str.split()/strip() use).
bool py_isspace(char32_t c);

// str.strip / lstrip / rstrip; chars == nullopt strips whitespace.
std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                     bool right);
// str.split / str.rsplit; sep == nullopt splits on runs of whitespace. maxsplit < 0: no limit.
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep,
                                  int64_t maxsplit, bool from_right);
// str.replace with count < 0 meaning all.
std::string py_replace(std::string_view s, std::string_view old_s, std::string_view new_s,
                       int64_t count);

// ASCII-only case mapping (non-ASCII code points pass through unchanged); str.lower and
// str.upper are core/ascii.h's ascii_lower and ascii_upper, shared with convert's name matching.
std::string py_title(std::string_view s);       // Jinja's `title` filter
std::string py_capitalize(std::string_view s);  // str.capitalize

// repr(str): quotes and escapes as Python prints it inside a list or dict.
std::string py_repr_string(std::string_view s);
// repr(float): shortest round-trip digits, fixed for 1e-4 <= |x| < 1e16, else 1e+16 style.
std::string py_float_repr(double d);
// A JSON string literal as json.dumps writes it (ensure_ascii escapes non-ASCII as \uXXXX).
void json_append_string(std::string& out, std::string_view s, bool ensure_ascii);

}  // namespace fulgur::chat
