// Jinja lexer: splits a template into data and tag tokens, applying whitespace control the way
// jinja2's lexer does (`{%-`/`-%}` strip all whitespace, trim_blocks eats the newline after a
// block or comment tag, lstrip_blocks eats indentation before one, `+` opts a tag out).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fulgur::chat {

enum class TokKind : uint8_t {
  kData,        // literal template text (already whitespace-processed)
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,  // text holds the unescaped value
  kInt,
  kFloat,
  kOp,  // text holds the operator
  kEof,
};

struct Token {
  TokKind kind = TokKind::kEof;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0.0;
  int line = 1;
  int col = 1;
};

struct LexOptions {
  bool trim_blocks = true;    // HF's setting
  bool lstrip_blocks = true;  // HF's setting
  bool keep_trailing_newline = false;
};

// Throws fulgur::Error("chat template syntax error at line L, column C: ...").
std::vector<Token> tokenize(std::string_view source, const LexOptions& options);

[[noreturn]] void syntax_error(int line, int col, const std::string& message);

}  // namespace fulgur::chat
