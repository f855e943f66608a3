// Recursive-descent parser from tokens to the syntax tree, following jinja2's grammar and
// operator precedence (condexpr < or < and < not < compare < +,- < ~ < *,/,//,% < ** < unary <
// postfix/filters/tests).
#pragma once

#include <vector>

#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace fulgur::chat {

// Throws fulgur::Error("chat template syntax error at line L, column C: ...").
Body parse_template(std::vector<Token> tokens);

}  // namespace fulgur::chat
