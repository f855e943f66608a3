// The GBNF parser: grammars llama.cpp accepts parse, and bad ones fail with the line and
// column of the fault.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "grammar/gbnf_parser.h"
#include "grammar/matcher.h"

namespace fulgur {
namespace {

std::string parse_error(const std::string& text) {
  try {
    parse_gbnf(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(GbnfParser, ParsesLlamaCppJsonGrammar) {
  // llama.cpp's grammars/json.gbnf, comments and multi-line groups included.
  const std::string text = R"(# a JSON value
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)";
  const Grammar g = parse_gbnf(text);
  EXPECT_EQ(g.rule_names[g.root], "root");
  GrammarMatcher m(std::make_shared<Grammar>(g));
  EXPECT_TRUE(m.accept_bytes(R"({"a": [1, 2.5e3, "x\n", true], "b": {}})"));
  EXPECT_TRUE(m.complete());
}

TEST(GbnfParser, AlternativeOnTheNextLine) {
  const Grammar g = parse_gbnf("root ::= \"a\"\n  | \"b\"\nother ::= \"c\"\n");
  GrammarMatcher m(std::make_shared<Grammar>(g));
  EXPECT_TRUE(m.can_accept("b"));
  EXPECT_FALSE(m.can_accept("c"));
}

TEST(GbnfParser, ErrorsNameLineAndColumn) {
  EXPECT_NE(parse_error("root ::= \"a\"\nfoo ::= bar\n").find("line 2, column 9: rule 'bar' is used but never defined"),
            std::string::npos)
      << parse_error("root ::= \"a\"\nfoo ::= bar\n");
  EXPECT_NE(parse_error("root ::= \"abc\n").find("line 1, column 14: unterminated string literal"), std::string::npos)
      << parse_error("root ::= \"abc\n");
  EXPECT_NE(parse_error("root ::= [a-z\n").find("line 1"), std::string::npos);
  EXPECT_NE(parse_error("root ::= ( \"a\" \n").find("expected ')'"), std::string::npos);
  EXPECT_NE(parse_error("root = \"a\"").find("line 1, column 6: expected '::='"), std::string::npos)
      << parse_error("root = \"a\"");
  EXPECT_NE(parse_error("root ::= * \"a\"").find("line 1, column 10: '*' has nothing before it"), std::string::npos)
      << parse_error("root ::= * \"a\"");
  EXPECT_NE(parse_error("root ::= \"a\"{3,1}").find("max < min"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"\\q\"").find("unknown escape '\\q'"), std::string::npos);
  EXPECT_NE(parse_error("root ::= [z-a]").find("backwards"), std::string::npos);
  EXPECT_NE(parse_error("a ::= \"x\"").find("no rule named 'root'"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"a\"\nroot ::= \"b\"").find("line 2, column 1: rule 'root' is defined twice"),
            std::string::npos);
  EXPECT_NE(parse_error("root ::= \"a\" )").find("unexpected ')'"), std::string::npos);
}

TEST(GbnfParser, RefusesLeftRecursion) {
  const std::string e = parse_error("root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]\n");
  EXPECT_NE(e.find("'expr' is left-recursive"), std::string::npos) << e;
  // Through a nullable prefix too.
  const std::string e2 = parse_error("root ::= opt root \"x\" | \"y\"\nopt ::= \"a\"?\n");
  EXPECT_NE(e2.find("left-recursive"), std::string::npos) << e2;
  // Right recursion is fine.
  EXPECT_NO_THROW(parse_gbnf("root ::= \"a\" root | \"b\""));
}

}  // namespace
}  // namespace fulgur
