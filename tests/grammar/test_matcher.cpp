// The byte matcher over small grammars: what it accepts, what it rejects, snapshots, UTF-8.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "grammar/gbnf_parser.h"
#include "grammar/matcher.h"

namespace fulgur {
namespace {

GrammarMatcher matcher(const std::string& gbnf) {
  return GrammarMatcher(std::make_shared<Grammar>(parse_gbnf(gbnf)));
}

// Whether the whole string is a sentence of the grammar.
bool matches(const std::string& gbnf, const std::string& text) {
  GrammarMatcher m = matcher(gbnf);
  return m.accept_bytes(text) && m.complete();
}

TEST(GrammarMatcher, Repetition) {
  const std::string g = "root ::= \"a\"{2,4} \"b\"* [0-9]+ \"!\"?";
  EXPECT_TRUE(matches(g, "aa1"));
  EXPECT_TRUE(matches(g, "aaaabbb123!"));
  EXPECT_FALSE(matches(g, "a1"));       // too few a
  EXPECT_FALSE(matches(g, "aaaaa1"));   // too many a
  EXPECT_FALSE(matches(g, "aab"));      // + needs a digit
  EXPECT_FALSE(matches(g, "aa1!!"));
  EXPECT_TRUE(matches("root ::= \"x\"{3}", "xxx"));
  EXPECT_FALSE(matches("root ::= \"x\"{3}", "xx"));
  EXPECT_TRUE(matches("root ::= (\"ab\"){2,}", "ababab"));
  EXPECT_FALSE(matches("root ::= (\"ab\"){2,}", "ab"));
  EXPECT_TRUE(matches("root ::= \"ab\"*", ""));  // a postfix repeats the whole literal
  EXPECT_TRUE(matches("root ::= \"ab\"*", "abab"));
  EXPECT_FALSE(matches("root ::= \"ab\"*", "abb"));
}

TEST(GrammarMatcher, NestedRules) {
  const std::string g = R"(root ::= list
list ::= "[" ( item ( "," item )* )? "]"
item ::= list | [a-z]+
)";
  EXPECT_TRUE(matches(g, "[]"));
  EXPECT_TRUE(matches(g, "[a,[b,[]],cd]"));
  EXPECT_TRUE(matches(g, "[[[[[[x]]]]]]"));
  EXPECT_FALSE(matches(g, "[a,]"));
  EXPECT_FALSE(matches(g, "[[a]"));
  GrammarMatcher m = matcher(g);
  EXPECT_TRUE(m.accept_bytes("[a,[b"));
  EXPECT_FALSE(m.complete());
  EXPECT_FALSE(m.accept_byte('['));  // after a letter: letter, ',' or ']'
  EXPECT_TRUE(m.accept_bytes("]]"));
  EXPECT_TRUE(m.complete());
  EXPECT_FALSE(m.can_continue());
}

TEST(GrammarMatcher, RejectionLeavesStateAndCopiesAreSnapshots) {
  GrammarMatcher m = matcher("root ::= \"hello\" | \"help\"");
  EXPECT_TRUE(m.accept_bytes("hel"));
  const GrammarMatcher snapshot = m;
  EXPECT_FALSE(m.accept_bytes("px"));  // all or nothing: "p" alone would be fine
  EXPECT_TRUE(m.accept_bytes("lo"));
  EXPECT_TRUE(m.complete());
  GrammarMatcher back = snapshot;
  EXPECT_FALSE(back.complete());
  EXPECT_TRUE(back.accept_byte('p'));
  EXPECT_TRUE(back.complete());
}

TEST(GrammarMatcher, ClassesAndUtf8) {
  const std::string g = "root ::= [^a-c] [α-ω] . \"é\"";
  EXPECT_TRUE(matches(g, "dβ€é"));
  EXPECT_FALSE(matches(g, "bβ€é"));
  EXPECT_FALSE(matches(g, "dbxé"));
  GrammarMatcher m = matcher(g);
  EXPECT_TRUE(m.accept_bytes("d"));
  // β is CE B2: the lead byte alone is still possible, a Cyrillic lead (D0) is not.
  EXPECT_TRUE(m.can_accept("\xCE"));
  EXPECT_FALSE(m.can_accept("\xD0"));
  EXPECT_TRUE(m.accept_byte(0xCE));
  EXPECT_FALSE(m.complete());
  EXPECT_FALSE(m.accept_byte('x'));  // a continuation byte must follow
  EXPECT_TRUE(m.accept_byte(0xB2));
  EXPECT_FALSE(m.accept_byte(0xFF));  // never valid UTF-8
  EXPECT_TRUE(matches("root ::= \"\\x41\\u00e9\\n\"", "A\xC3\xA9\n"));
}

TEST(GrammarMatcher, AmbiguousGrammarStaysSmall) {
  // Both alternatives reach the same place after every character: without de-duplication the
  // stacks would double per character.
  GrammarMatcher m = matcher("root ::= ( [a-z] | [a-m] )*");
  EXPECT_TRUE(m.accept_bytes(std::string(200, 'c')));
  EXPECT_LE(m.tops().size(), 4u);
  EXPECT_TRUE(m.complete());
}

}  // namespace
}  // namespace fulgur
