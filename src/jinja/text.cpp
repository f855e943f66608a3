#include "jinja/text.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/ascii.h"
#include "core/error.h"

namespace fulgur::chat {

std::u32string utf8_decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    int len = 0;
    char32_t cp = 0;
    if (b0 < 0x80) {
      len = 1;
      cp = b0;
    } else if ((b0 & 0xE0) == 0xC0) {
      len = 2;
      cp = b0 & 0x1F;
    } else if ((b0 & 0xF0) == 0xE0) {
      len = 3;
      cp = b0 & 0x0F;
    } else if ((b0 & 0xF8) == 0xF0) {
      len = 4;
      cp = b0 & 0x07;
    }
    bool ok = len > 0 && i + len <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (b & 0x3F);
    }
    // Reject overlong forms, surrogates and out-of-range values so that encode(decode(x)) == x.
    static constexpr char32_t kMinForLen[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (ok && (cp < kMinForLen[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) ok = false;
    if (!ok) {
      out.push_back(0xDC00 + b0);  // surrogateescape
      i += 1;
    } else {
      out.push_back(cp);
      i += len;
    }
  }
  return out;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp >= 0xDC80 && cp <= 0xDCFF) {  // an escaped raw byte
    out.push_back(static_cast<char>(cp - 0xDC00));
  } else if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string utf8_encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) utf8_append(out, c);
  return out;
}

size_t utf8_length(std::string_view s) {
  bool ascii = true;
  for (char c : s) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  return ascii ? s.size() : utf8_decode(s).size();
}

bool py_isspace(char32_t c) {
  if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
  switch (c) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                     bool right) {
  const std::u32string u = utf8_decode(s);
  const std::u32string set = chars ? utf8_decode(*chars) : std::u32string();
  auto strip_it = [&](char32_t c) {
    return chars ? set.find(c) != std::u32string::npos : py_isspace(c);
  };
  size_t b = 0, e = u.size();
  if (left)
    while (b < e && strip_it(u[b])) ++b;
  if (right)
    while (e > b && strip_it(u[e - 1])) --e;
  return utf8_encode(std::u32string_view(u).substr(b, e - b));
}

namespace {

std::vector<std::string> split_whitespace(std::string_view s, int64_t maxsplit, bool from_right) {
  const std::u32string u = utf8_decode(s);
  std::vector<std::string> parts;
  const int64_t n = static_cast<int64_t>(u.size());
  if (!from_right) {
    int64_t i = 0;
    while (true) {
      while (i < n && py_isspace(u[i])) ++i;
      if (i >= n) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        parts.push_back(utf8_encode(std::u32string_view(u).substr(i)));
        break;
      }
      int64_t j = i;
      while (j < n && !py_isspace(u[j])) ++j;
      parts.push_back(utf8_encode(std::u32string_view(u).substr(i, j - i)));
      i = j;
    }
    return parts;
  }
  int64_t e = n;
  while (true) {
    while (e > 0 && py_isspace(u[e - 1])) --e;
    if (e <= 0) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      parts.push_back(utf8_encode(std::u32string_view(u).substr(0, e)));
      break;
    }
    int64_t b = e;
    while (b > 0 && !py_isspace(u[b - 1])) --b;
    parts.push_back(utf8_encode(std::u32string_view(u).substr(b, e - b)));
    e = b;
  }
  return {parts.rbegin(), parts.rend()};
}

}  // namespace

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep,
                                  int64_t maxsplit, bool from_right) {
  if (!sep) return split_whitespace(s, maxsplit, from_right);
  FULGUR_CHECK(!sep->empty(), "split(): empty separator");
  std::vector<std::string> parts;
  if (!from_right) {
    size_t start = 0;
    while (true) {
      const size_t at = (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit)
                            ? std::string_view::npos
                            : s.find(*sep, start);
      if (at == std::string_view::npos) {
        parts.emplace_back(s.substr(start));
        return parts;
      }
      parts.emplace_back(s.substr(start, at - start));
      start = at + sep->size();
    }
  }
  size_t end = s.size();
  while (true) {
    size_t at = std::string_view::npos;
    if (!(maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) && end >= sep->size()) {
      at = s.substr(0, end).rfind(*sep);
    }
    if (at == std::string_view::npos) {
      parts.emplace_back(s.substr(0, end));
      break;
    }
    parts.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
    end = at;
  }
  return {parts.rbegin(), parts.rend()};
}

std::string py_replace(std::string_view s, std::string_view old_s, std::string_view new_s,
                       int64_t count) {
  std::string out;
  if (old_s.empty()) {  // Python inserts `new` between every code point and at both ends
    const std::u32string u = utf8_decode(s);
    int64_t done = 0;
    for (size_t i = 0; i <= u.size(); ++i) {
      if (count < 0 || done < count) {
        out += new_s;
        ++done;
      }
      if (i < u.size()) utf8_append(out, u[i]);
    }
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t at = s.find(old_s, start);
    if (at == std::string_view::npos) break;
    out += s.substr(start, at - start);
    out += new_s;
    start = at + old_s.size();
    ++done;
  }
  out += s.substr(start);
  return out;
}

std::string py_title(std::string_view s) {
  // Jinja splits at runs of whitespace, '-', '(', '{', '[', '<' and capitalizes each piece.
  auto is_break = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == '-' ||
           c == '(' || c == '{' || c == '[' || c == '<';
  };
  std::string out(s);
  bool at_word_start = true;
  for (char& c : out) {
    if (is_break(c)) {
      at_word_start = true;
      continue;
    }
    if (at_word_start) {
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    } else if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
    at_word_start = false;
  }
  return out;
}

std::string py_capitalize(std::string_view s) {
  std::string out = ascii_lower(s);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 32);
  return out;
}

std::string py_repr_string(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  char buf[16];
  for (char32_t c : utf8_decode(s)) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      out += buf;
    } else if (c >= 0xD800 && c <= 0xDFFF) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      utf8_append(out, c);
    }
  }
  out.push_back(quote);
  return out;
}

std::string py_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  // Scientific with no precision gives the shortest digits that round-trip, like Python's repr.
  const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  const std::string_view sci(buf, res.ptr - buf);
  const size_t e_pos = sci.find('e');
  std::string digits;
  bool negative = false;
  for (char c : sci.substr(0, e_pos)) {
    if (c == '-')
      negative = true;
    else if (c != '.')
      digits.push_back(c);
  }
  const int exp = std::atoi(std::string(sci.substr(e_pos + 1)).c_str());
  std::string out = negative ? "-" : "";
  if (exp >= -4 && exp < 16) {
    if (exp >= 0) {
      const size_t int_len = static_cast<size_t>(exp) + 1;
      while (digits.size() < int_len) digits.push_back('0');
      out += digits.substr(0, int_len);
      out += '.';
      out += digits.size() > int_len ? digits.substr(int_len) : "0";
    } else {
      out += "0.";
      out.append(static_cast<size_t>(-exp - 1), '0');
      out += digits;
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) {
    out += '.';
    out.append(digits, 1, std::string::npos);
  }
  std::snprintf(buf, sizeof buf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return out + buf;
}

void json_append_string(std::string& out, std::string_view s, bool ensure_ascii) {
  char buf[16];
  out.push_back('"');
  auto escape_unit = [&](unsigned u) {
    std::snprintf(buf, sizeof buf, "\\u%04x", u);
    out += buf;
  };
  auto plain_byte = [&](unsigned char c) {
    switch (c) {
      case '"':
        out += "\\\"";
        return;
      case '\\':
        out += "\\\\";
        return;
      case '\n':
        out += "\\n";
        return;
      case '\r':
        out += "\\r";
        return;
      case '\t':
        out += "\\t";
        return;
      case '\b':
        out += "\\b";
        return;
      case '\f':
        out += "\\f";
        return;
      default:
        if (c < 0x20 || (ensure_ascii && c == 0x7F))
          escape_unit(c);
        else
          out.push_back(static_cast<char>(c));
    }
  };
  if (!ensure_ascii) {
    for (char c : s) plain_byte(static_cast<unsigned char>(c));
  } else {
    for (char32_t c : utf8_decode(s)) {
      if (c < 0x80) {
        plain_byte(static_cast<unsigned char>(c));
      } else if (c < 0x10000) {
        escape_unit(c);
      } else {  // UTF-16 surrogate pair, as json.dumps writes it
        const char32_t v = c - 0x10000;
        escape_unit(0xD800 + (v >> 10));
        escape_unit(0xDC00 + (v & 0x3FF));
      }
    }
  }
  out.push_back('"');
}

}  // namespace fulgur::chat
