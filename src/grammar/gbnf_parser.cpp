#include "grammar/gbnf_parser.h"

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/error.h"

namespace fulgur {
namespace {

// Repetition counts above this would blow the grammar up into that many rules.
constexpr int kMaxRepeat = 10000;

using Sequence = std::vector<Element>;

struct RuleDraft {
  std::string name;
  std::vector<Sequence> alternatives;
  bool defined = false;
  size_t first_use = 0;  // text offset of the first reference (for "undefined rule" errors)
};

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Grammar parse(std::string_view root_name) {
    skip_space(true);
    while (pos_ < text_.size()) {
      parse_rule();
      skip_space(true);
    }
    for (const RuleDraft& r : rules_) {
      if (!r.defined) error_at(r.first_use, "rule '", r.name, "' is used but never defined");
    }
    const auto root = ids_.find(std::string(root_name));
    if (root == ids_.end()) fail("grammar: no rule named '", root_name, "' (the start rule)");
    check_left_recursion();
    return flatten(root->second);
  }

 private:
  template <class... Args>
  [[noreturn]] void error_at(size_t at, Args&&... args) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    fail("grammar: line ", line, ", column ", col, ": ", std::forward<Args>(args)...);
  }
  template <class... Args>
  [[noreturn]] void error(Args&&... args) const {
    error_at(pos_, std::forward<Args>(args)...);
  }

  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  bool at_end() const { return pos_ >= text_.size(); }

  // Spaces, tabs and comments; newlines too when newline_ok (inside parentheses, after `|`).
  void skip_space(bool newline_ok) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else if (c == '\n' && newline_ok) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  uint32_t rule_id(const std::string& name, size_t at) {
    const auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    const auto id = static_cast<uint32_t>(rules_.size());
    rules_.push_back({name, {}, false, at});
    ids_.emplace(name, id);
    return id;
  }
  uint32_t new_rule(const std::string& base, std::vector<Sequence> alternatives) {
    std::string name;
    do {
      name = base + "-" + std::to_string(++generated_);
    } while (ids_.count(name) != 0);
    const uint32_t id = rule_id(name, pos_);
    rules_[id].alternatives = std::move(alternatives);
    rules_[id].defined = true;
    return id;
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    if (pos_ == start) error("expected a rule name, found ", describe_here());
    return std::string(text_.substr(start, pos_ - start));
  }

  std::string describe_here() const {
    if (at_end()) return "the end of the grammar";
    const char c = peek();
    if (c == '\n') return "the end of the line";
    return cat("'", c, "'");
  }

  void parse_rule() {
    const size_t name_at = pos_;
    const std::string name = parse_name();
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") error("expected '::=' after rule name '", name, "'");
    pos_ += 3;
    const uint32_t id = rule_id(name, name_at);
    if (rules_[id].defined) error_at(name_at, "rule '", name, "' is defined twice");
    rules_[id].defined = true;
    skip_space(true);
    std::vector<Sequence> alts = parse_alternatives(name, false);
    rules_[id].alternatives = std::move(alts);
    skip_space(false);
    if (!at_end() && peek() != '\n') error("unexpected ", describe_here(), " in rule '", name, "'");
  }

  std::vector<Sequence> parse_alternatives(const std::string& rule, bool nested) {
    std::vector<Sequence> alts;
    alts.push_back(parse_sequence(rule, nested));
    while (true) {
      const size_t save = pos_;
      if (!nested) skip_space(true);  // a top-level rule may go on with `|` on its next line
      if (peek() != '|') {
        pos_ = save;
        break;
      }
      ++pos_;
      skip_space(true);
      alts.push_back(parse_sequence(rule, nested));
    }
    return alts;
  }

  // One code point of a literal or class, escapes and UTF-8 decoded.
  uint32_t parse_char() {
    if (at_end()) error("unexpected end of the grammar inside a literal or class");
    const auto c = static_cast<unsigned char>(text_[pos_]);
    if (c == '\\') {
      ++pos_;
      const char e = peek();
      ++pos_;
      switch (e) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case '\\': case '"': case '\'': case '[': case ']': case '-': case '^': case '/':
          return static_cast<uint32_t>(e);
        case 'x': return parse_hex(2);
        case 'u': return parse_hex(4);
        case 'U': return parse_hex(8);
        default:
          --pos_;
          error("unknown escape '\\", e == '\0' ? std::string() : std::string(1, e), "'");
      }
    }
    if (c < 0x80) {
      ++pos_;
      return c;
    }
    const int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (len == 0 || pos_ + static_cast<size_t>(len) > text_.size()) error("invalid UTF-8 in the grammar");
    uint32_t cp = c & (0x7Fu >> len);
    for (int i = 1; i < len; ++i) {
      const auto b = static_cast<unsigned char>(text_[pos_ + static_cast<size_t>(i)]);
      if ((b & 0xC0) != 0x80) error("invalid UTF-8 in the grammar");
      cp = (cp << 6) | (b & 0x3Fu);
    }
    pos_ += static_cast<size_t>(len);
    return cp;
  }
  uint32_t parse_hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char h = peek();
      int d = -1;
      if (h >= '0' && h <= '9') d = h - '0';
      if (h >= 'a' && h <= 'f') d = h - 'a' + 10;
      if (h >= 'A' && h <= 'F') d = h - 'A' + 10;
      if (d < 0) error("expected ", digits, " hex digits in an escape");
      v = v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    if (v > 0x10FFFF) error("escape names U+", v, ", beyond Unicode");
    return v;
  }

  Element chars(CharSet set) {
    char_sets_.push_back(std::move(set));
    return {ElementKind::kChars, static_cast<uint32_t>(char_sets_.size() - 1)};
  }

  int parse_count() {
    const size_t start = pos_;
    long v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      if (v > kMaxRepeat) error("repetition count above ", kMaxRepeat);
      ++pos_;
    }
    if (pos_ == start) error("expected a number in a repetition {m,n}");
    return static_cast<int>(v);
  }

  // Replaces seq[start..] by its repetition min..max times (max < 0: unbounded).
  void repeat(const std::string& rule, Sequence& seq, size_t start, int min, int max) {
    Element unit;
    if (seq.size() - start == 1) {
      unit = seq[start];
    } else {
      Sequence body(seq.begin() + static_cast<std::ptrdiff_t>(start), seq.end());
      unit = {ElementKind::kRule, new_rule(rule, {body})};
    }
    seq.resize(start);
    for (int i = 0; i < min; ++i) seq.push_back(unit);
    if (max < 0) {
      // S ::= unit S | ε: right recursion, which the matcher follows without growing its stack.
      const uint32_t star = new_rule(rule, {});
      rules_[star].alternatives = {{unit, {ElementKind::kRule, star}}, {}};
      seq.push_back({ElementKind::kRule, star});
    } else if (max > min) {
      // O_1 ::= unit | ε;  O_j ::= unit O_{j-1} | ε.
      uint32_t opt = new_rule(rule, {{unit}, {}});
      for (int j = 2; j <= max - min; ++j) opt = new_rule(rule, {{unit, {ElementKind::kRule, opt}}, {}});
      seq.push_back({ElementKind::kRule, opt});
    }
  }

  Sequence parse_sequence(const std::string& rule, bool nested) {
    Sequence seq;
    size_t last_symbol = SIZE_MAX;  // where the symbol a postfix operator repeats starts
    while (!at_end()) {
      const char c = peek();
      if (c == '"') {
        ++pos_;
        last_symbol = seq.size();
        while (peek() != '"') {
          if (at_end() || peek() == '\n') error("unterminated string literal");
          const uint32_t cp = parse_char();
          seq.push_back(chars({false, {{cp, cp}}}));
        }
        ++pos_;
      } else if (c == '[') {
        ++pos_;
        last_symbol = seq.size();
        CharSet set;
        if (peek() == '^') {
          set.negated = true;
          ++pos_;
        }
        while (peek() != ']') {
          if (at_end() || peek() == '\n') error("unterminated character class");
          const uint32_t lo = parse_char();
          uint32_t hi = lo;
          if (peek() == '-' && peek(1) != ']') {
            ++pos_;
            hi = parse_char();
            if (hi < lo) error("character range is backwards");
          }
          set.ranges.push_back({lo, hi});
        }
        ++pos_;
        seq.push_back(chars(std::move(set)));
      } else if (c == '.') {
        ++pos_;
        last_symbol = seq.size();
        seq.push_back(chars({true, {}}));
      } else if (is_name_char(c)) {
        const size_t at = pos_;
        const std::string name = parse_name();
        last_symbol = seq.size();
        seq.push_back({ElementKind::kRule, rule_id(name, at)});
      } else if (c == '(') {
        ++pos_;
        skip_space(true);
        std::vector<Sequence> alts = parse_alternatives(rule, true);
        skip_space(true);
        if (peek() != ')') error("expected ')', found ", describe_here());
        ++pos_;
        last_symbol = seq.size();
        seq.push_back({ElementKind::kRule, new_rule(rule, std::move(alts))});
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (last_symbol == SIZE_MAX || last_symbol >= seq.size()) {
          error("'", c, "' has nothing before it to repeat");
        }
        ++pos_;
        int min = 0, max = -1;
        if (c == '+') min = 1;
        if (c == '?') max = 1;
        if (c == '{') {
          skip_space(false);
          min = parse_count();
          skip_space(false);
          max = min;
          if (peek() == ',') {
            ++pos_;
            skip_space(false);
            max = peek() == '}' ? -1 : parse_count();
            skip_space(false);
          }
          if (peek() != '}') error("expected '}' to close a repetition");
          ++pos_;
          if (max >= 0 && max < min) error("repetition {", min, ",", max, "} has max < min");
        }
        repeat(rule, seq, last_symbol, min, max);
        last_symbol = SIZE_MAX;  // `a**` is not meaningful
      } else {
        break;  // `|`, `)`, a newline, or an error the caller names
      }
      skip_space(nested);
    }
    return seq;
  }

  void check_left_recursion() const {
    const size_t n = rules_.size();
    // Nullable rules (derive the empty string), to a fixed point.
    std::vector<bool> nullable(n, false);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < n; ++r) {
        if (nullable[r]) continue;
        for (const Sequence& alt : rules_[r].alternatives) {
          bool all = true;
          for (const Element& e : alt) {
            if (e.kind != ElementKind::kRule || !nullable[e.value]) {
              all = false;
              break;
            }
          }
          if (all) {
            nullable[r] = true;
            changed = true;
            break;
          }
        }
      }
    }
    // Edges r -> s where s can start r: a cycle is left recursion.
    std::vector<std::vector<uint32_t>> first(n);
    for (size_t r = 0; r < n; ++r) {
      for (const Sequence& alt : rules_[r].alternatives) {
        for (const Element& e : alt) {
          if (e.kind != ElementKind::kRule) break;
          first[r].push_back(e.value);
          if (!nullable[e.value]) break;
        }
      }
    }
    std::vector<int> state(n, 0);  // 0 unseen, 1 on the path, 2 done
    std::vector<uint32_t> path;
    std::function<void(uint32_t)> visit = [&](uint32_t r) {
      state[r] = 1;
      path.push_back(r);
      for (uint32_t s : first[r]) {
        if (state[s] == 1) {
          std::string chain;
          bool on = false;
          for (uint32_t p : path) {
            if (p == s) on = true;
            if (on) chain += rules_[p].name + " -> ";
          }
          chain += rules_[s].name;
          fail("grammar: rule '", rules_[s].name, "' is left-recursive (", chain,
               "): it can reach itself before reading a character");
        }
        if (state[s] == 0) visit(s);
      }
      path.pop_back();
      state[r] = 2;
    };
    for (uint32_t r = 0; r < n; ++r) {
      if (state[r] == 0) visit(r);
    }
  }

  Grammar flatten(uint32_t root) {
    Grammar g;
    g.root = root;
    g.char_sets = std::move(char_sets_);
    for (RuleDraft& r : rules_) {
      g.rule_names.push_back(r.name);
      std::vector<uint32_t> starts;
      for (const Sequence& alt : r.alternatives) {
        starts.push_back(static_cast<uint32_t>(g.elements.size()));
        g.elements.insert(g.elements.end(), alt.begin(), alt.end());
        g.elements.push_back({ElementKind::kEnd, 0});
      }
      g.alternatives.push_back(std::move(starts));
    }
    return g;
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::vector<RuleDraft> rules_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<CharSet> char_sets_;
  int generated_ = 0;
};

}  // namespace

Grammar parse_gbnf(std::string_view text, std::string_view root) {
  return Parser(text).parse(root);
}

}  // namespace fulgur
