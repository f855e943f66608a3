// Syntax tree of a parsed template. Plain tagged structs: the interpreter switches on `kind`.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace fulgur::chat {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind : uint8_t {
  kLiteral,   // literal
  kName,      // name
  kList,      // children
  kTuple,     // children
  kDict,      // children: key0, value0, key1, value1, ...
  kGetAttr,   // children[0].name
  kGetItem,   // children[0][children[1]]
  kSlice,     // children[0][children[1]:children[2]:children[3]] (null = omitted)
  kCall,      // children[0](children[1..], kwargs)
  kFilter,    // children[0] | name(children[1..], kwargs)
  kTest,      // children[0] is name(children[1..], kwargs)
  kNot,       // not children[0]
  kNeg,       // -children[0]
  kPos,       // +children[0]
  kBinary,    // children[0] name children[1]; name in + - * / // % **
  kConcat,    // children joined with ~
  kAnd,       // children[0] and children[1]
  kOr,        // children[0] or children[1]
  kCompare,   // children[0] ops[0] children[1] ops[1] children[2] ...
  kCondExpr,  // children[1] if children[0] else children[2] (children[2] may be null)
};

struct Expr {
  ExprKind kind;
  int line = 0;
  int col = 0;
  Value literal;
  std::string name;
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;  // kCompare: "==", "!=", "<", "<=", ">", ">=", "in", "notin"
};

enum class StmtKind : uint8_t {
  kOutput,    // text
  kPrint,     // {{ expr }}
  kIf,        // branches (cond, body); else_body
  kFor,       // targets in expr [if filter]: body; else_body
  kSet,       // targets = expr, or target.attr = expr
  kSetBlock,  // {% set target %}body{% endset %}
  kMacro,     // name(params = defaults): body
  kBreak,
  kContinue,
  kGeneration,   // HF's {% generation %} marker: renders its body
  kFilterBlock,  // {% filter f(args) %}body{% endfilter %}; expr is the filter with a null input
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  int col = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;
  std::vector<std::string> targets;
  std::string attr;  // kSet on a namespace: targets[0].attr
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // one per param, null when none
};

}  // namespace fulgur::chat
