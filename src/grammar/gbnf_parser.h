// GBNF, llama.cpp's grammar format, parsed into a Grammar:
//
//   root   ::= object            # a rule per line; `#` starts a comment
//   object ::= "{" ws ( pair ( "," ws pair )* )? "}"
//   pair   ::= [a-z]+ ":" ws [0-9]{1,3}
//   ws     ::= [ \t\n]*
//
// Literals "..." and classes [...] / [^...] take the escapes \n \r \t \\ \" \' \[ \] \- \^
// \xHH \uHHHH \UHHHHHHHH and raw UTF-8; `.` is any code point; `( )` groups; `|` alternates;
// `*` `+` `?` `{m}` `{m,}` `{m,n}` repeat the symbol before them. A rule's body ends at the end
// of its line, except inside parentheses, after a `|`, or when the next line starts with `|`.
// Errors (fulgur::Error) name the line and column: syntax, undefined rules, a missing root and
// left recursion (a rule that can reach itself before reading a character, which a pushdown
// matcher could never leave).
#pragma once

#include <string_view>

#include "grammar/grammar.h"

namespace fulgur {

Grammar parse_gbnf(std::string_view text, std::string_view root = "root");

}  // namespace fulgur
