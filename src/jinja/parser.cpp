#include "jinja/parser.h"

#include <initializer_list>
#include <string_view>

#include "core/error.h"

namespace fulgur::chat {
namespace {

// Bounds recursion so that a hostile template ("((((...") fails cleanly instead of overflowing
// the stack.
constexpr int kMaxDepth = 200;

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : toks_(std::move(toks)) {}

  Body parse_all() {
    Body body = subparse({});
    if (cur().kind != TokKind::kEof) error(cur(), cat("unexpected '", cur().text, "'"));
    return body;
  }

 private:
  const Token& cur() const { return toks_[p_]; }
  const Token& peek(size_t k = 1) const { return toks_[std::min(p_ + k, toks_.size() - 1)]; }
  const Token& next() {
    const Token& t = toks_[p_];
    if (p_ + 1 < toks_.size()) ++p_;
    return t;
  }
  [[noreturn]] void error(const Token& t, const std::string& msg) const {
    syntax_error(t.line, t.col, msg);
  }

  bool is_op(std::string_view op) const { return cur().kind == TokKind::kOp && cur().text == op; }
  bool is_name(std::string_view name) const {
    return cur().kind == TokKind::kName && cur().text == name;
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TokKind::kEof:
        return "end of template";
      case TokKind::kBlockEnd:
        return "end of statement block";
      case TokKind::kVarEnd:
        return "end of print statement";
      case TokKind::kData:
        return "template data";
      case TokKind::kString:
        return "string literal";
      default:
        return "'" + t.text + "'";
    }
  }
  void expect_op(std::string_view op) {
    if (!is_op(op)) error(cur(), cat("expected '", op, "', got ", describe(cur())));
    next();
  }
  void expect_block_end() {
    if (cur().kind != TokKind::kBlockEnd)
      error(cur(), "expected end of statement block, got " + describe(cur()));
    next();
  }
  std::string expect_name() {
    if (cur().kind != TokKind::kName) error(cur(), "expected a name, got " + describe(cur()));
    return next().text;
  }

  ExprPtr make(ExprKind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->col = at.col;
    return e;
  }

  struct DepthGuard {
    DepthGuard(Parser& p, const Token& at) : p(p) {
      if (++p.depth_ > kMaxDepth) p.error(at, "template nested too deeply");
    }
    ~DepthGuard() { --p.depth_; }
    Parser& p;
  };

  // ---- statements ----

  // Parses until `{% <one of end_names>`; leaves the cursor on that name token.
  Body subparse(std::initializer_list<std::string_view> end_names) {
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.kind == TokKind::kEof) {
        if (end_names.size() != 0) {
          std::string expected;
          for (std::string_view end : end_names)
            expected += (expected.empty() ? "'" : " or '") + std::string(end) + "'";
          error(t, "unexpected end of template, expected " + expected);
        }
        return body;
      }
      if (t.kind == TokKind::kData) {
        auto s = stmt(StmtKind::kOutput, t);
        s->text = t.text;
        body.push_back(std::move(s));
        next();
      } else if (t.kind == TokKind::kVarBegin) {
        next();
        auto s = stmt(StmtKind::kPrint, t);
        s->expr = parse_tuple(true);
        if (cur().kind != TokKind::kVarEnd)
          error(cur(), "expected end of print statement, got " + describe(cur()));
        next();
        body.push_back(std::move(s));
      } else if (t.kind == TokKind::kBlockBegin) {
        const Token& name = peek();
        if (name.kind != TokKind::kName)
          error(name, "expected a statement name, got " + describe(name));
        for (std::string_view end : end_names) {
          if (name.text == end) {
            next();
            return body;
          }
        }
        next();
        body.push_back(parse_statement());
      } else {
        error(t, "unexpected " + describe(t));
      }
    }
  }

  StmtPtr stmt(StmtKind kind, const Token& at) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = at.line;
    s->col = at.col;
    return s;
  }

  StmtPtr parse_statement() {
    const Token& t = next();  // the statement name
    DepthGuard guard(*this, t);
    const std::string& name = t.text;
    if (name == "if") return parse_if(t);
    if (name == "for") return parse_for(t);
    if (name == "set") return parse_set(t);
    if (name == "macro") return parse_macro(t);
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) error(t, cat("'", name, "' outside of a loop"));
      expect_block_end();
      return stmt(name == "break" ? StmtKind::kBreak : StmtKind::kContinue, t);
    }
    if (name == "generation") {
      expect_block_end();
      auto s = stmt(StmtKind::kGeneration, t);
      s->body = subparse({"endgeneration"});
      next();
      expect_block_end();
      return s;
    }
    if (name == "filter") {
      auto s = stmt(StmtKind::kFilterBlock, t);
      s->expr = parse_filter(nullptr, t);
      expect_block_end();
      s->body = subparse({"endfilter"});
      next();
      expect_block_end();
      return s;
    }
    static constexpr std::string_view kEnds[] = {"endif", "endfor", "endmacro",  "endset",
                                                 "else",  "elif",   "endfilter", "endgeneration"};
    for (std::string_view end : kEnds) {
      if (name == end) error(t, cat("unexpected '", name, "'"));
    }
    error(t, cat("unknown or unsupported statement '", name, "'"));
  }

  StmtPtr parse_if(const Token& at) {
    auto s = stmt(StmtKind::kIf, at);
    ExprPtr cond = parse_tuple(true);
    expect_block_end();
    while (true) {
      Body body = subparse({"elif", "else", "endif"});
      s->branches.emplace_back(std::move(cond), std::move(body));
      const std::string tag = next().text;
      if (tag == "elif") {
        cond = parse_tuple(true);
        expect_block_end();
        continue;
      }
      if (tag == "else") {
        expect_block_end();
        s->else_body = subparse({"endif"});
        next();
      }
      expect_block_end();
      return s;
    }
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> names;
    const bool paren = is_op("(");
    if (paren) next();
    while (true) {
      names.push_back(expect_name());
      if (!is_op(",")) break;
      next();
      if (cur().kind != TokKind::kName) break;  // trailing comma
    }
    if (paren) expect_op(")");
    return names;
  }

  StmtPtr parse_for(const Token& at) {
    auto s = stmt(StmtKind::kFor, at);
    s->targets = parse_targets();
    if (!is_name("in")) error(cur(), "expected 'in', got " + describe(cur()));
    next();
    s->expr = parse_tuple(false);
    if (is_name("if")) {
      next();
      s->filter = parse_tuple(true);
    }
    if (is_name("recursive")) error(cur(), "recursive loops are not supported");
    expect_block_end();
    ++loop_depth_;
    s->body = subparse({"endfor", "else"});
    --loop_depth_;
    if (next().text == "else") {
      expect_block_end();
      s->else_body = subparse({"endfor"});
      next();
    }
    expect_block_end();
    return s;
  }

  StmtPtr parse_set(const Token& at) {
    const Token& first = cur();
    std::string target = expect_name();
    if (is_op(".")) {  // {% set ns.attr = value %}
      next();
      auto s = stmt(StmtKind::kSet, at);
      s->targets = {target};
      s->attr = expect_name();
      expect_op("=");
      s->expr = parse_tuple(true);
      expect_block_end();
      return s;
    }
    std::vector<std::string> targets = {target};
    while (is_op(",")) {
      next();
      if (cur().kind != TokKind::kName) break;
      targets.push_back(expect_name());
    }
    if (is_op("=")) {
      next();
      auto s = stmt(StmtKind::kSet, at);
      s->targets = std::move(targets);
      s->expr = parse_tuple(true);
      expect_block_end();
      return s;
    }
    if (targets.size() != 1) error(first, "block assignment takes a single name");
    auto s = stmt(StmtKind::kSetBlock, at);
    s->targets = std::move(targets);
    if (is_op("|")) s->expr = parse_filter(nullptr, cur());
    expect_block_end();
    s->body = subparse({"endset"});
    next();
    expect_block_end();
    return s;
  }

  StmtPtr parse_macro(const Token& at) {
    auto s = stmt(StmtKind::kMacro, at);
    s->name = expect_name();
    expect_op("(");
    while (!is_op(")")) {
      if (!s->params.empty()) expect_op(",");
      if (is_op(")")) break;
      s->params.push_back(expect_name());
      if (is_op("=")) {
        next();
        s->defaults.push_back(parse_expression(true));
      } else {
        s->defaults.push_back(nullptr);
      }
    }
    next();
    expect_block_end();
    const int saved_loop_depth = loop_depth_;
    loop_depth_ = 0;  // break/continue cannot cross a macro boundary
    s->body = subparse({"endmacro"});
    loop_depth_ = saved_loop_depth;
    next();
    if (cur().kind == TokKind::kName) next();  // {% endmacro name %}
    expect_block_end();
    return s;
  }

  // ---- expressions ----

  // Comma-separated expressions become a tuple (`{{ a, b }}`, `set a, b = 1, 2`).
  ExprPtr parse_tuple(bool with_condexpr) {
    const Token& at = cur();
    ExprPtr first = parse_expression(with_condexpr);
    if (!is_op(",")) return first;
    auto tuple = make(ExprKind::kTuple, at);
    tuple->children.push_back(std::move(first));
    while (is_op(",")) {
      next();
      if (cur().kind == TokKind::kBlockEnd || cur().kind == TokKind::kVarEnd || is_op(")") ||
          is_name("if"))
        break;
      tuple->children.push_back(parse_expression(with_condexpr));
    }
    return tuple;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard guard(*this, cur());
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    ExprPtr expr = parse_or();
    while (is_name("if")) {
      const Token& at = next();
      auto cond = make(ExprKind::kCondExpr, at);
      cond->children.push_back(parse_or());
      cond->children.push_back(std::move(expr));
      if (is_name("else")) {
        next();
        cond->children.push_back(parse_condexpr());
      } else {
        cond->children.push_back(nullptr);
      }
      expr = std::move(cond);
    }
    return expr;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      auto e = make(ExprKind::kOr, next());
      e->children.push_back(std::move(left));
      e->children.push_back(parse_and());
      left = std::move(e);
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      auto e = make(ExprKind::kAnd, next());
      e->children.push_back(std::move(left));
      e->children.push_back(parse_not());
      left = std::move(e);
    }
    return left;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      const Token& at = next();
      DepthGuard guard(*this, at);
      auto e = make(ExprKind::kNot, at);
      e->children.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const Token& at = cur();
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().kind == TokKind::kOp &&
          (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == "<=" ||
           cur().text == ">" || cur().text == ">=")) {
        op = next().text;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && peek().kind == TokKind::kName && peek().text == "in") {
        next();
        next();
        op = "notin";
      } else {
        break;
      }
      if (!cmp) {
        cmp = make(ExprKind::kCompare, at);
        cmp->children.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->children.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  ExprPtr binary(ExprPtr left, const Token& op_tok, ExprPtr right) {
    auto e = make(ExprKind::kBinary, op_tok);
    e->name = op_tok.text;
    e->children.push_back(std::move(left));
    e->children.push_back(std::move(right));
    return e;
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& op = next();
      left = binary(std::move(left), op, parse_concat());
    }
    return left;
  }

  ExprPtr parse_concat() {
    const Token& at = cur();
    ExprPtr first = parse_math2();
    if (!is_op("~")) return first;
    auto e = make(ExprKind::kConcat, at);
    e->children.push_back(std::move(first));
    while (is_op("~")) {
      next();
      e->children.push_back(parse_math2());
    }
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& op = next();
      left = binary(std::move(left), op, parse_pow());
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {  // left-associative in jinja2
      const Token& op = next();
      left = binary(std::move(left), op, parse_unary(true));
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    const Token& at = cur();
    DepthGuard guard(*this, at);
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      next();
      node = make(at.text == "-" ? ExprKind::kNeg : ExprKind::kPos, at);
      node->children.push_back(parse_unary(false));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    switch (t.kind) {
      case TokKind::kName: {
        next();
        auto e = make(ExprKind::kLiteral, t);
        if (t.text == "true" || t.text == "True")
          e->literal = Value(true);
        else if (t.text == "false" || t.text == "False")
          e->literal = Value(false);
        else if (t.text == "none" || t.text == "None")
          e->literal = Value::none();
        else {
          e->kind = ExprKind::kName;
          e->name = t.text;
        }
        return e;
      }
      case TokKind::kString: {
        std::string s;
        while (cur().kind == TokKind::kString) s += next().text;  // adjacent literals concatenate
        auto e = make(ExprKind::kLiteral, t);
        e->literal = Value(std::move(s));
        return e;
      }
      case TokKind::kInt: {
        next();
        auto e = make(ExprKind::kLiteral, t);
        e->literal = Value(t.int_value);
        return e;
      }
      case TokKind::kFloat: {
        next();
        auto e = make(ExprKind::kLiteral, t);
        e->literal = Value(t.float_value);
        return e;
      }
      case TokKind::kOp:
        if (t.text == "(") {
          next();
          if (is_op(")")) {
            next();
            return make(ExprKind::kTuple, t);
          }
          ExprPtr inner = parse_expression(true);
          if (is_op(",")) {
            auto tuple = make(ExprKind::kTuple, t);
            tuple->children.push_back(std::move(inner));
            while (is_op(",")) {
              next();
              if (is_op(")")) break;
              tuple->children.push_back(parse_expression(true));
            }
            inner = std::move(tuple);
          }
          expect_op(")");
          return inner;
        }
        if (t.text == "[") {
          next();
          auto e = make(ExprKind::kList, t);
          while (!is_op("]")) {
            if (!e->children.empty()) expect_op(",");
            if (is_op("]")) break;
            e->children.push_back(parse_expression(true));
          }
          next();
          return e;
        }
        if (t.text == "{") {
          next();
          auto e = make(ExprKind::kDict, t);
          while (!is_op("}")) {
            if (!e->children.empty()) expect_op(",");
            if (is_op("}")) break;
            e->children.push_back(parse_expression(true));
            expect_op(":");
            e->children.push_back(parse_expression(true));
          }
          next();
          return e;
        }
        break;
      default:
        break;
    }
    error(t, "unexpected " + describe(t));
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".")) {
        const Token& dot = next();
        if (cur().kind == TokKind::kName) {
          auto e = make(ExprKind::kGetAttr, dot);
          e->name = next().text;
          e->children.push_back(std::move(node));
          node = std::move(e);
        } else if (cur().kind == TokKind::kInt) {
          auto e = make(ExprKind::kGetItem, dot);
          auto idx = make(ExprKind::kLiteral, cur());
          idx->literal = Value(next().int_value);
          e->children.push_back(std::move(node));
          e->children.push_back(std::move(idx));
          node = std::move(e);
        } else {
          error(cur(), "expected an attribute name after '.', got " + describe(cur()));
        }
      } else if (is_op("[")) {
        node = parse_subscript(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const Token& at = next();  // [
    ExprPtr parts[3];
    bool is_slice = false;
    int part = 0;
    while (!is_op("]")) {
      if (is_op(":")) {
        next();
        is_slice = true;
        if (++part > 2) error(cur(), "too many ':' in subscript");
        continue;
      }
      if (parts[part]) error(cur(), "expected ']' or ':', got " + describe(cur()));
      parts[part] = parse_expression(true);
    }
    next();
    if (!is_slice) {
      if (!parts[0]) error(at, "empty subscript");
      auto e = make(ExprKind::kGetItem, at);
      e->children.push_back(std::move(node));
      e->children.push_back(std::move(parts[0]));
      return e;
    }
    auto e = make(ExprKind::kSlice, at);
    e->children.push_back(std::move(node));
    for (auto& p : parts) e->children.push_back(std::move(p));
    return e;
  }

  // Parses "(args)" into e->children (after whatever is already there) and e->kwargs.
  void parse_args(Expr* e) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (cur().kind == TokKind::kName && peek().kind == TokKind::kOp && peek().text == "=") {
        std::string key = next().text;
        next();
        e->kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!e->kwargs.empty()) error(cur(), "positional argument after keyword argument");
        e->children.push_back(parse_expression(true));
      }
    }
    next();
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto e = make(ExprKind::kCall, cur());
    e->line = callee->line;  // errors point at the function name, not at '('
    e->col = callee->col;
    e->children.push_back(std::move(callee));
    parse_args(e.get());
    return e;
  }

  // `| name(args)`; input may be null for {% filter %} blocks.
  ExprPtr parse_filter(ExprPtr input, const Token& at) {
    auto e = make(ExprKind::kFilter, at);
    if (is_op("|")) next();
    e->name = expect_name();
    while (is_op(".")) {
      next();
      e->name += '.';
      e->name += expect_name();
    }
    e->children.push_back(std::move(input));
    if (is_op("(")) parse_args(e.get());
    return e;
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        node = parse_filter(std::move(node), cur());
      } else if (is_name("is")) {
        const Token& at = next();
        bool negated = false;
        if (is_name("not")) {
          next();
          negated = true;
        }
        auto e = make(ExprKind::kTest, at);
        e->name = expect_name();
        e->children.push_back(std::move(node));
        if (is_op("(")) {
          parse_args(e.get());
        } else {
          const Token& t = cur();
          const bool starts_arg = t.kind == TokKind::kName || t.kind == TokKind::kString ||
                                  t.kind == TokKind::kInt || t.kind == TokKind::kFloat ||
                                  (t.kind == TokKind::kOp && (t.text == "[" || t.text == "{"));
          if (starts_arg &&
              !(t.kind == TokKind::kName &&
                (t.text == "else" || t.text == "or" || t.text == "and" || t.text == "if" ||
                 t.text == "is" || t.text == "in" || t.text == "not"))) {
            e->children.push_back(parse_postfix(parse_primary()));
          }
        }
        if (negated) {
          auto n = make(ExprKind::kNot, at);
          n->children.push_back(std::move(e));
          node = std::move(n);
        } else {
          node = std::move(e);
        }
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  std::vector<Token> toks_;
  size_t p_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body parse_template(std::vector<Token> tokens) {
  return Parser(std::move(tokens)).parse_all();
}

}  // namespace fulgur::chat
