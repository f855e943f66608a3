// A compiled context-free grammar over Unicode code points, the form the matcher walks
// (grammar/matcher.h). GBNF text (grammar/gbnf_parser.h) and JSON schemas
// (grammar/json_schema.h) both end up here.
//
// Every rule is a list of alternatives; an alternative is a run of elements in one flat array
// ending with a kEnd element. Repetition, optionals and groups were desugared by the parser
// into generated rules (right-recursive, so the matcher's stacks stay shallow), which is why
// only three kinds of element exist.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fulgur {

struct CharRange {
  uint32_t lo = 0, hi = 0;  // inclusive code points
};

// A character class: code points in any range, or (negated) in none of them. `.` is an empty
// negated class.
struct CharSet {
  bool negated = false;
  std::vector<CharRange> ranges;

  bool contains(uint32_t c) const;
  // Whether some code point in [lo, hi] is in the set (a partly read UTF-8 character can still
  // become one of these).
  bool intersects(uint32_t lo, uint32_t hi) const;
};

enum class ElementKind : uint8_t {
  kEnd,    // end of an alternative
  kChars,  // one code point of char_sets[value]
  kRule,   // rule `value`
};

struct Element {
  ElementKind kind = ElementKind::kEnd;
  uint32_t value = 0;
};

struct Grammar {
  std::vector<std::string> rule_names;             // [rule]
  std::vector<std::vector<uint32_t>> alternatives; // [rule] start of each alternative in elements
  std::vector<Element> elements;                   // alternatives, each closed by kEnd
  std::vector<CharSet> char_sets;
  uint32_t root = 0;

  size_t n_rules() const { return rule_names.size(); }
};

}  // namespace fulgur
