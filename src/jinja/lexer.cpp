#include "jinja/lexer.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "jinja/text.h"
#include "core/error.h"

namespace fulgur::chat {

void syntax_error(int line, int col, const std::string& message) {
  fail("chat template syntax error at line ", line, ", column ", col, ": ", message);
}

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_name_char(char c) {
  return is_name_start(c) || is_digit(c);
}
bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Only "\n", "\r\n" and "\r" are line breaks for jinja2; all become "\n", and (unless
// keep_trailing_newline) one final line break is dropped.
std::string normalize_newlines(std::string_view src, bool keep_trailing_newline) {
  std::string out;
  out.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      out.push_back(src[i]);
    }
  }
  if (!keep_trailing_newline && !out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

bool all_space(std::string_view s) {
  for (char32_t c : utf8_decode(s)) {
    if (!py_isspace(c)) return false;
  }
  return true;
}

class Lexer {
 public:
  Lexer(std::string src, const LexOptions& opt) : src_(std::move(src)), opt_(opt) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::vector<Token> run() {
    size_t pos = 0;
    const size_t n = src_.size();
    while (pos < n) {
      const size_t tag = find_tag(pos);
      if (tag == std::string::npos) {
        emit_data(src_.substr(pos), pos);
        break;
      }
      const char kind = src_[tag + 1];
      const char sign =
          (tag + 2 < n && (src_[tag + 2] == '-' || src_[tag + 2] == '+')) ? src_[tag + 2] : 0;
      std::string data = src_.substr(pos, tag - pos);
      if (sign == '-') {
        data = py_strip(data, std::nullopt, false, true);
      } else if (sign != '+' && opt_.lstrip_blocks && kind != '{') {
        // Indentation before a block/comment tag is dropped when the tag starts its line.
        const size_t nl = data.rfind('\n');
        const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        const bool line_starting = pos == 0 || src_[pos - 1] == '\n';
        if ((l_pos > 0 || line_starting) && l_pos < data.size() &&
            all_space(std::string_view(data).substr(l_pos))) {
          data.resize(l_pos);
        }
      }
      emit_data(std::move(data), pos);
      size_t body = tag + 2 + (sign ? 1 : 0);
      if (kind == '#') {
        pos = lex_comment(tag, body);
      } else if (kind == '%' && try_raw(tag, body, &pos)) {
        // raw block emitted as data
      } else {
        pos = lex_tag(tag, body, kind == '%');
      }
    }
    Token eof;
    eof.kind = TokKind::kEof;
    set_pos(eof, n);
    toks_.push_back(std::move(eof));
    return std::move(toks_);
  }

 private:
  size_t find_tag(size_t from) const {
    size_t at = from;
    while ((at = src_.find('{', at)) != std::string::npos) {
      if (at + 1 < src_.size() &&
          (src_[at + 1] == '{' || src_[at + 1] == '%' || src_[at + 1] == '#'))
        return at;
      ++at;
    }
    return std::string::npos;
  }

  void set_pos(Token& t, size_t pos) const {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos);
    const size_t line = static_cast<size_t>(it - line_starts_.begin());
    t.line = static_cast<int>(line);
    t.col = static_cast<int>(pos - line_starts_[line - 1] + 1);
  }

  [[noreturn]] void error_at(size_t pos, const std::string& msg) const {
    Token t;
    set_pos(t, pos);
    syntax_error(t.line, t.col, msg);
  }

  void emit_data(std::string data, size_t pos) {
    if (data.empty()) return;
    Token t;
    t.kind = TokKind::kData;
    t.text = std::move(data);
    set_pos(t, pos);
    toks_.push_back(std::move(t));
  }

  void emit(TokKind kind, size_t pos, std::string text = {}) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    set_pos(t, pos);
    toks_.push_back(std::move(t));
  }

  size_t skip_space(size_t i) const {
    while (i < src_.size() && is_ascii_space(src_[i])) ++i;
    return i;
  }

  // After a block-style end marker: "-" strips all following whitespace, "+" nothing, plain
  // trims one newline when trim_blocks is on.
  size_t after_block_end(size_t end_pos, char sign) const {
    if (sign == '-') {
      size_t i = end_pos;
      // Python's \s* also matches non-ASCII whitespace.
      while (i < src_.size()) {
        size_t j = i;
        const auto c = static_cast<unsigned char>(src_[i]);
        if (c < 0x80) {
          if (!is_ascii_space(src_[i]) && !(c >= 0x1C && c <= 0x1F)) break;
          j = i + 1;
        } else {
          size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
          if (i + len > src_.size()) break;
          const std::u32string u = utf8_decode(std::string_view(src_).substr(i, len));
          if (u.size() != 1 || !py_isspace(u[0])) break;
          j = i + len;
        }
        i = j;
      }
      return i;
    }
    if (sign == 0 && opt_.trim_blocks && end_pos < src_.size() && src_[end_pos] == '\n')
      return end_pos + 1;
    return end_pos;
  }

  size_t lex_comment(size_t tag, size_t body) {
    const size_t close = src_.find("#}", body);
    if (close == std::string::npos) error_at(tag, "missing end of comment tag");
    char sign = 0;
    if (close > body && (src_[close - 1] == '-' || src_[close - 1] == '+')) sign = src_[close - 1];
    return after_block_end(close + 2, sign);
  }

  // {% raw %}...{% endraw %}: the body is data, untouched except for whitespace control at its
  // ends. Returns false when the tag is not `raw`.
  bool try_raw(size_t tag, size_t body, size_t* next) {
    size_t i = skip_space(body);
    if (src_.compare(i, 3, "raw") != 0 || (i + 3 < src_.size() && is_name_char(src_[i + 3])))
      return false;
    i = skip_space(i + 3);
    if (src_.compare(i, 3, "-%}") == 0) {
      i = after_block_end(i + 3, '-');
    } else if (src_.compare(i, 2, "%}") == 0) {
      i += 2;  // jinja2 does not trim the newline after {% raw %}
    } else {
      return false;
    }
    // Find {%[-+]? endraw [-+]?%}
    size_t search = i;
    while (true) {
      const size_t open = src_.find("{%", search);
      if (open == std::string::npos) error_at(tag, "missing end of raw directive");
      size_t j = open + 2;
      char open_sign = 0;
      if (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) open_sign = src_[j++];
      j = skip_space(j);
      if (src_.compare(j, 6, "endraw") != 0) {
        search = open + 2;
        continue;
      }
      j = skip_space(j + 6);
      char close_sign = 0;
      if (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) close_sign = src_[j++];
      if (src_.compare(j, 2, "%}") != 0) {
        search = open + 2;
        continue;
      }
      std::string data = src_.substr(i, open - i);
      if (open_sign == '-') {
        data = py_strip(data, std::nullopt, false, true);
      } else if (open_sign != '+' && opt_.lstrip_blocks) {
        const size_t nl = data.rfind('\n');
        if (nl != std::string::npos && nl + 1 < data.size() &&
            all_space(std::string_view(data).substr(nl + 1))) {
          data.resize(nl + 1);
        }
      }
      emit_data(std::move(data), i);
      *next = after_block_end(j + 2, close_sign);
      return true;
    }
  }

  size_t lex_tag(size_t tag, size_t i, bool block) {
    emit(block ? TokKind::kBlockBegin : TokKind::kVarBegin, tag);
    std::vector<char> balance;  // closing brackets we still expect
    const size_t n = src_.size();
    while (true) {
      if (i >= n)
        error_at(tag, block ? "unexpected end of template, expected '%}'"
                            : "unexpected end of template, expected '}}'");
      if (balance.empty()) {
        if (block) {
          if (src_.compare(i, 3, "-%}") == 0 || src_.compare(i, 3, "+%}") == 0) {
            emit(TokKind::kBlockEnd, i);
            return after_block_end(i + 3, src_[i]);
          }
          if (src_.compare(i, 2, "%}") == 0) {
            emit(TokKind::kBlockEnd, i);
            return after_block_end(i + 2, 0);
          }
        } else {
          if (src_.compare(i, 3, "-}}") == 0) {
            emit(TokKind::kVarEnd, i);
            return after_block_end(i + 3, '-');
          }
          if (src_.compare(i, 2, "}}") == 0) {
            emit(TokKind::kVarEnd, i);
            return i + 2;
          }
        }
      }
      const char c = src_[i];
      if (is_ascii_space(c)) {
        ++i;
      } else if (is_digit(c)) {
        i = lex_number(i);
      } else if (is_name_start(c)) {
        size_t j = i;
        while (j < n && is_name_char(src_[j])) ++j;
        emit(TokKind::kName, i, src_.substr(i, j - i));
        i = j;
      } else if (c == '\'' || c == '"') {
        i = lex_string(i);
      } else {
        i = lex_operator(i, balance);
      }
    }
  }

  size_t lex_number(size_t i) {
    const size_t n = src_.size();
    auto digits = [&](size_t j) {  // (\d+_)*\d+ ; returns end or j when none
      size_t k = j;
      while (k < n &&
             (is_digit(src_[k]) || (src_[k] == '_' && k > j && k + 1 < n && is_digit(src_[k + 1]))))
        ++k;
      return k;
    };
    Token t;
    set_pos(t, i);
    const bool after_dot = i > 0 && src_[i - 1] == '.';  // `x.0` is an item lookup, not a float
    if (!after_dot && !(src_[i] == '0' && i + 1 < n &&
                        (src_[i + 1] == 'x' || src_[i + 1] == 'o' || src_[i + 1] == 'b'))) {
      size_t j = digits(i);
      bool is_float = false;
      if (j + 1 < n && src_[j] == '.' && is_digit(src_[j + 1])) {
        j = digits(j + 1);
        is_float = true;
      }
      if (j < n && (src_[j] == 'e' || src_[j] == 'E')) {
        size_t k = j + 1;
        if (k < n && (src_[k] == '+' || src_[k] == '-')) ++k;
        if (k < n && is_digit(src_[k])) {
          j = digits(k);
          is_float = true;
        }
      }
      if (is_float) {
        std::string text;
        for (size_t k = i; k < j; ++k)
          if (src_[k] != '_') text.push_back(src_[k]);
        t.kind = TokKind::kFloat;
        t.float_value = std::strtod(text.c_str(), nullptr);
        t.text = src_.substr(i, j - i);
        toks_.push_back(std::move(t));
        return j;
      }
    }
    int base = 10;
    size_t j = i;
    if (src_[i] == '0' && i + 1 < n &&
        (src_[i + 1] == 'x' || src_[i + 1] == 'o' || src_[i + 1] == 'b')) {
      base = src_[i + 1] == 'x' ? 16 : src_[i + 1] == 'o' ? 8 : 2;
      j = i + 2;
    }
    std::string text;
    while (j < n && (std::isxdigit(static_cast<unsigned char>(src_[j])) || src_[j] == '_')) {
      const char c = src_[j];
      if (base == 10 && !is_digit(c) && c != '_') break;
      if (c != '_') text.push_back(c);
      ++j;
    }
    if (text.empty()) error_at(i, "invalid number literal");
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, base);
    if (errno == ERANGE || *end != '\0')
      error_at(i, "integer literal '" + src_.substr(i, j - i) + "' is invalid or out of range");
    t.kind = TokKind::kInt;
    t.int_value = v;
    t.text = src_.substr(i, j - i);
    toks_.push_back(std::move(t));
    return j;
  }

  size_t lex_string(size_t i) {
    const char quote = src_[i];
    const size_t n = src_.size();
    std::string value;
    size_t j = i + 1;
    auto hex_value = [&](size_t at, int count) -> char32_t {
      if (at + count > n) error_at(at, "truncated \\x/\\u escape in string literal");
      char32_t v = 0;
      for (int k = 0; k < count; ++k) {
        const char c = src_[at + k];
        if (!std::isxdigit(static_cast<unsigned char>(c)))
          error_at(at, "truncated \\x/\\u escape in string literal");
        v = v * 16 + static_cast<char32_t>(is_digit(c) ? c - '0' : (std::tolower(c) - 'a' + 10));
      }
      return v;
    };
    while (true) {
      if (j >= n) error_at(i, "unterminated string literal");
      const char c = src_[j];
      if (c == quote) break;
      if (c != '\\') {
        value.push_back(c);
        ++j;
        continue;
      }
      if (j + 1 >= n) error_at(i, "unterminated string literal");
      const char e = src_[j + 1];
      j += 2;
      switch (e) {
        case '\n':
          break;  // line continuation
        case '\\':
          value.push_back('\\');
          break;
        case '\'':
          value.push_back('\'');
          break;
        case '"':
          value.push_back('"');
          break;
        case 'a':
          value.push_back('\a');
          break;
        case 'b':
          value.push_back('\b');
          break;
        case 'f':
          value.push_back('\f');
          break;
        case 'n':
          value.push_back('\n');
          break;
        case 'r':
          value.push_back('\r');
          break;
        case 't':
          value.push_back('\t');
          break;
        case 'v':
          value.push_back('\v');
          break;
        case 'x':
          utf8_append(value, hex_value(j, 2));
          j += 2;
          break;
        case 'u':
          utf8_append(value, hex_value(j, 4));
          j += 4;
          break;
        case 'U': {
          const char32_t cp = hex_value(j, 8);
          if (cp > 0x10FFFF) error_at(j, "\\U escape out of range");
          utf8_append(value, cp);
          j += 8;
          break;
        }
        default:
          if (e >= '0' && e <= '7') {  // up to three octal digits
            char32_t v = static_cast<char32_t>(e - '0');
            for (int k = 0; k < 2 && j < n && src_[j] >= '0' && src_[j] <= '7'; ++k)
              v = v * 8 + static_cast<char32_t>(src_[j++] - '0');
            utf8_append(value, v);
          } else {  // unknown escapes keep their backslash, as in Python
            value.push_back('\\');
            value.push_back(e);
          }
      }
    }
    Token t;
    t.kind = TokKind::kString;
    t.text = std::move(value);
    set_pos(t, i);
    toks_.push_back(std::move(t));
    return j + 1;
  }

  size_t lex_operator(size_t i, std::vector<char>& balance) {
    static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    for (std::string_view op : kTwo) {
      if (src_.compare(i, 2, op) == 0) {
        emit(TokKind::kOp, i, std::string(op));
        return i + 2;
      }
    }
    const char c = src_[i];
    static constexpr std::string_view kOne = "+-/*%~[](){}><=.:|,;";
    if (kOne.find(c) == std::string_view::npos) error_at(i, cat("unexpected char '", c, "'"));
    if (c == '(') balance.push_back(')');
    if (c == '[') balance.push_back(']');
    if (c == '{') balance.push_back('}');
    if (c == ')' || c == ']' || c == '}') {
      if (balance.empty()) error_at(i, cat("unexpected '", c, "'"));
      if (balance.back() != c)
        error_at(i, cat("unexpected '", c, "', expected '", balance.back(), "'"));
      balance.pop_back();
    }
    emit(TokKind::kOp, i, std::string(1, c));
    return i + 1;
  }

  std::string src_;
  LexOptions opt_;
  std::vector<size_t> line_starts_;  // byte offset of each line's first character
  std::vector<Token> toks_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const LexOptions& options) {
  return Lexer(normalize_newlines(source, options.keep_trailing_newline), options).run();
}

}  // namespace fulgur::chat
