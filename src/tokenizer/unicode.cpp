#include "tokenizer/unicode.h"

#include <utf8proc.h>

#include <array>
#include <cstdlib>

#include "core/error.h"

namespace fulgur {
namespace {

struct ByteTables {
  std::array<uint32_t, 256> to_cp{};     // [256] byte -> stand-in code point
  std::array<int16_t, 0x144> to_byte{};  // [U+0000..U+0143] code point -> byte or -1

  ByteTables() {
    to_byte.fill(-1);
    uint32_t next_extra = 0x100;  // the 68 non-printable bytes take U+0100.. in byte order
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      to_cp[b] = printable ? static_cast<uint32_t>(b) : next_extra++;
      to_byte[to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteTables& tables() {
  static const ByteTables t;
  return t;
}

bool is_cont(unsigned char c) {
  return (c & 0xC0) == 0x80;
}

}  // namespace

uint32_t byte_to_codepoint(uint8_t byte) {
  return tables().to_cp[byte];
}

int codepoint_to_byte(uint32_t cp) {
  return cp < 0x144 ? tables().to_byte[cp] : -1;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

Utf8Step utf8_step(const unsigned char* p, size_t n) {
  const unsigned char c = p[0];
  if (c < 0x80) return {Utf8Step::kValid, 1, c};
  size_t len;
  uint32_t cp;
  // The allowed range of the second byte narrows for E0, ED, F0 and F4 (Table 3-7): that is
  // what excludes overlongs, surrogates and code points above U+10FFFF.
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2, cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3, cp = c & 0x0F;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4, cp = c & 0x07;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return {Utf8Step::kInvalid, 1, 0};
  }
  for (size_t i = 1; i < len; ++i) {
    if (i >= n) return {Utf8Step::kIncomplete, i, 0};
    const unsigned char d = p[i];
    const bool ok = i == 1 ? (d >= lo && d <= hi) : is_cont(d);
    if (!ok) return {Utf8Step::kInvalid, i, 0};
    cp = (cp << 6) | (d & 0x3F);
  }
  return {Utf8Step::kValid, len, cp};
}

bool is_valid_utf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  size_t i = 0;
  while (i < text.size()) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    const Utf8Step s = utf8_step(p + i, text.size() - i);
    if (s.kind != Utf8Step::kValid) return false;
    i += s.length;
  }
  return true;
}

namespace {

// Appends NFC(run) to out; run is valid UTF-8.
void append_nfc(std::string& out, std::string_view run) {
  bool ascii = true;
  for (char ch : run) ascii = ascii && static_cast<unsigned char>(ch) < 0x80;
  if (ascii) {  // ASCII is NFC and nothing in it composes with an ASCII successor
    out += run;
    return;
  }
  utf8proc_uint8_t* dst = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(run.data()),
                   static_cast<utf8proc_ssize_t>(run.size()), &dst,
                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) {  // cannot happen for validated input; keep the text rather than lose it
    out += run;
    return;
  }
  out.append(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
  std::free(dst);
}

}  // namespace

std::string nfc_normalize(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  size_t run_start = 0, i = 0;
  while (i < text.size()) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    const Utf8Step s = utf8_step(p + i, text.size() - i);
    if (s.kind == Utf8Step::kValid) {
      i += s.length;
      continue;
    }
    append_nfc(out, text.substr(run_start, i - run_start));
    out.append(text.substr(i, s.length));  // invalid bytes pass through untouched
    i += s.length;
    run_start = i;
  }
  append_nfc(out, text.substr(run_start));
  return out;
}

}  // namespace fulgur
