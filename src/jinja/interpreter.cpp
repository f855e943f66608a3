#include "jinja/interpreter.h"

#include <memory>
#include <unordered_map>

#include "jinja/builtins.h"
#include "core/error.h"

namespace fulgur::chat {
namespace {

// Guards against runaway templates: output size, total loop iterations, macro recursion.
constexpr size_t kMaxOutputBytes = size_t{256} << 20;
constexpr int64_t kMaxIterations = 50'000'000;
constexpr int kMaxCallDepth = 100;

// An error that already carries its template position; outer frames pass it through.
class PositionedError : public Error {
 public:
  using Error::Error;
};

[[noreturn]] void rethrow_at(int line, int col, const std::exception& e) {
  throw PositionedError(
      cat("chat template error at line ", line, ", column ", col, ": ", e.what()));
}

// Variables visible at one point: a for-loop iteration and a macro call each get a child scope,
// so `set` inside them does not leak out (which is why templates use namespace()).
class Scope {
 public:
  explicit Scope(std::shared_ptr<Scope> parent) : parent_(std::move(parent)) {}
  const Value* lookup(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent_.get()) {
      auto it = s->vars_.find(name);
      if (it != s->vars_.end()) return &it->second;
    }
    return nullptr;
  }
  void set(const std::string& name, Value v) { vars_[name] = std::move(v); }

 private:
  std::shared_ptr<Scope> parent_;
  std::unordered_map<std::string, Value> vars_;
};
using ScopePtr = std::shared_ptr<Scope>;

enum class Flow { kNormal, kBreak, kContinue };

class Interpreter {
 public:
  explicit Interpreter(const Value& context) {
    globals_ = std::make_shared<Scope>(nullptr);
    for (auto& [name, fn] : global_functions()) globals_->set(name, std::move(fn));
    root_ = std::make_shared<Scope>(globals_);
    FULGUR_CHECK(context.is_dict(), "chat template context must be an object, got ",
                 context.type_name());
    for (const auto& [k, v] : context.dict_data().items) root_->set(k, v);
  }

  std::string run(const Body& body) {
    std::string out;
    exec(body, out, root_);
    return out;
  }

 private:
  Flow exec(const Body& body, std::string& out, const ScopePtr& scope) {
    for (const StmtPtr& s : body) {
      Flow flow;
      try {
        flow = exec_one(*s, out, scope);
      } catch (const PositionedError&) {
        throw;
      } catch (const Error& e) {
        rethrow_at(s->line, s->col, e);
      }
      if (flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
  }

  void append(std::string& out, const std::string& text) {
    FULGUR_CHECK(out.size() + text.size() <= kMaxOutputBytes, "rendered output exceeds ",
                 kMaxOutputBytes, " bytes");
    out += text;
  }

  Flow exec_one(const Stmt& s, std::string& out, const ScopePtr& scope) {
    switch (s.kind) {
      case StmtKind::kOutput:
        append(out, s.text);
        return Flow::kNormal;
      case StmtKind::kPrint:
        append(out, eval(*s.expr, scope).to_string());
        return Flow::kNormal;
      case StmtKind::kIf:
        for (const auto& [cond, body] : s.branches) {
          if (eval(*cond, scope).truthy()) return exec(body, out, scope);
        }
        return exec(s.else_body, out, scope);
      case StmtKind::kFor:
        return exec_for(s, out, scope);
      case StmtKind::kSet: {
        Value v = eval(*s.expr, scope);
        if (!s.attr.empty()) {
          const Value* target = scope->lookup(s.targets[0]);
          FULGUR_CHECK(target && target->is_namespace(), "cannot assign attribute '", s.attr,
                       "' on '", s.targets[0], "': it is not a namespace object");
          target->mutable_dict().set(s.attr, std::move(v));
        } else {
          assign(s.targets, std::move(v), *scope);
        }
        return Flow::kNormal;
      }
      case StmtKind::kSetBlock: {
        std::string text;
        exec(s.body, text, scope);
        Value v(std::move(text));
        if (s.expr) v = apply_filter_expr(*s.expr, std::move(v), scope);
        scope->set(s.targets[0], std::move(v));
        return Flow::kNormal;
      }
      case StmtKind::kFilterBlock: {
        std::string text;
        exec(s.body, text, scope);
        append(out, apply_filter_expr(*s.expr, Value(std::move(text)), scope).to_string());
        return Flow::kNormal;
      }
      case StmtKind::kMacro:
        scope->set(s.name, make_macro(s, scope));
        return Flow::kNormal;
      case StmtKind::kBreak:
        return Flow::kBreak;
      case StmtKind::kContinue:
        return Flow::kContinue;
      case StmtKind::kGeneration:
        return exec(s.body, out, scope);
    }
    return Flow::kNormal;
  }

  static void assign(const std::vector<std::string>& targets, Value v, Scope& scope) {
    if (targets.size() == 1) {
      scope.set(targets[0], std::move(v));
      return;
    }
    const std::vector<Value> parts = iterate(v);
    FULGUR_CHECK(parts.size() == targets.size(),
                 parts.size() < targets.size() ? "not enough" : "too many",
                 " values to unpack (expected ", targets.size(), ", got ", parts.size(), ")");
    for (size_t i = 0; i < targets.size(); ++i) scope.set(targets[i], parts[i]);
  }

  Flow exec_for(const Stmt& s, std::string& out, const ScopePtr& scope) {
    const Value iterable = eval(*s.expr, scope);
    std::vector<Value> items = iterate(iterable);
    if (s.filter) {  // `for x in xs if cond`: loop.* counts only the kept items
      std::vector<Value> kept;
      for (Value& item : items) {
        auto probe = std::make_shared<Scope>(scope);
        assign(s.targets, item, *probe);
        if (eval(*s.filter, probe).truthy()) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }
    if (items.empty()) return exec(s.else_body, out, scope);
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      FULGUR_CHECK(++iterations_ <= kMaxIterations, "template exceeded ", kMaxIterations,
                   " loop iterations");
      auto iter_scope = std::make_shared<Scope>(scope);
      assign(s.targets, items[i], *iter_scope);
      std::vector<std::pair<std::string, Value>> loop = {
          {"index", Value(i + 1)},    {"index0", Value(i)},
          {"revindex", Value(n - i)}, {"revindex0", Value(n - i - 1)},
          {"first", Value(i == 0)},   {"last", Value(i == n - 1)},
          {"length", Value(n)},       {"depth", Value(1)},
          {"depth0", Value(0)},
      };
      if (i > 0) loop.emplace_back("previtem", items[i - 1]);
      if (i + 1 < n) loop.emplace_back("nextitem", items[i + 1]);
      loop.emplace_back("cycle", Value::function("loop.cycle", [i](CallArgs& args) {
                          FULGUR_CHECK(!args.args.empty(), "no items for cycling given");
                          return args.args[static_cast<size_t>(i) % args.args.size()];
                        }));
      iter_scope->set("loop", Value::dict(std::move(loop)));
      if (exec(s.body, out, iter_scope) == Flow::kBreak) break;
    }
    return Flow::kNormal;
  }

  Value make_macro(const Stmt& s, const ScopePtr& scope) {
    // A weak reference: the macro value lives in that scope, a strong one would be a cycle.
    std::weak_ptr<Scope> defining = scope;
    const Stmt* node = &s;
    return Value::function(s.name, [this, node, defining](CallArgs& args) {
      ScopePtr parent = defining.lock();
      if (!parent) parent = root_;
      FULGUR_CHECK(args.args.size() <= node->params.size(), "macro '", node->name,
                   "' takes not more than ", node->params.size(), " argument(s)");
      FULGUR_CHECK(call_depth_ < kMaxCallDepth, "macro recursion deeper than ", kMaxCallDepth);
      auto local = std::make_shared<Scope>(parent);
      std::vector<bool> given(node->params.size(), false);
      for (size_t i = 0; i < args.args.size(); ++i) {
        local->set(node->params[i], args.args[i]);
        given[i] = true;
      }
      for (const auto& [key, v] : args.kwargs) {
        size_t i = 0;
        while (i < node->params.size() && node->params[i] != key) ++i;
        FULGUR_CHECK(i < node->params.size(), "macro '", node->name,
                     "' takes no keyword argument '", key, "'");
        local->set(key, v);
        given[i] = true;
      }
      for (size_t i = 0; i < node->params.size(); ++i) {
        if (given[i]) continue;
        local->set(node->params[i], node->defaults[i]
                                        ? eval(*node->defaults[i], local)
                                        : Value::undefined(cat("parameter '", node->params[i],
                                                               "' was not provided")));
      }
      ++call_depth_;
      std::string text;
      try {
        exec(node->body, text, local);
      } catch (...) {
        --call_depth_;
        throw;
      }
      --call_depth_;
      return Value(std::move(text));
    });
  }

  CallArgs eval_args(const Expr& e, size_t first, const ScopePtr& scope) {
    CallArgs args;
    for (size_t i = first; i < e.children.size(); ++i)
      args.args.push_back(eval(*e.children[i], scope));
    for (const auto& [k, v] : e.kwargs) args.kwargs.emplace_back(k, eval(*v, scope));
    return args;
  }

  Value apply_filter_expr(const Expr& f, Value input, const ScopePtr& scope) {
    CallArgs args = eval_args(f, 1, scope);
    try {
      return apply_filter(f.name, input, args);
    } catch (const PositionedError&) {
      throw;
    } catch (const Error& e) {
      rethrow_at(f.line, f.col, e);
    }
  }

  Value eval(const Expr& e, const ScopePtr& scope) {
    try {
      return eval_inner(e, scope);
    } catch (const PositionedError&) {
      throw;
    } catch (const Error& err) {
      rethrow_at(e.line, e.col, err);
    }
  }

  Value eval_inner(const Expr& e, const ScopePtr& scope) {
    switch (e.kind) {
      case ExprKind::kLiteral:
        return e.literal;
      case ExprKind::kName: {
        const Value* v = scope->lookup(e.name);
        return v ? *v : Value::undefined(cat("'", e.name, "' is undefined"));
      }
      case ExprKind::kList:
      case ExprKind::kTuple: {
        std::vector<Value> items;
        for (const auto& c : e.children) items.push_back(eval(*c, scope));
        return Value::list(std::move(items), e.kind == ExprKind::kTuple);
      }
      case ExprKind::kDict: {
        std::vector<std::pair<std::string, Value>> items;
        for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
          Value key = eval(*e.children[i], scope);
          FULGUR_CHECK(key.is_string(), "dict literal keys must be strings, got ", key.type_name());
          items.emplace_back(key.str(), eval(*e.children[i + 1], scope));
        }
        return Value::dict(std::move(items));
      }
      case ExprKind::kGetAttr:
        return get_attr(eval(*e.children[0], scope), e.name);
      case ExprKind::kGetItem:
        return get_item(eval(*e.children[0], scope), eval(*e.children[1], scope));
      case ExprKind::kSlice: {
        Value obj = eval(*e.children[0], scope);
        Value parts[3];
        for (int i = 0; i < 3; ++i) {
          if (e.children[1 + i]) parts[i] = eval(*e.children[1 + i], scope);
        }
        return slice(obj, parts[0], parts[1], parts[2]);
      }
      case ExprKind::kCall: {
        Value fn = eval(*e.children[0], scope);
        CallArgs args = eval_args(e, 1, scope);
        if (fn.is_undefined()) undefined_error(fn);
        FULGUR_CHECK(fn.is_callable(), "'", fn.type_name(), "' object is not callable");
        return fn.callable().fn(args);
      }
      case ExprKind::kFilter:
        return apply_filter_expr(e, eval(*e.children[0], scope), scope);
      case ExprKind::kTest: {
        Value subject = eval(*e.children[0], scope);
        CallArgs args = eval_args(e, 1, scope);
        return Value(apply_test(e.name, subject, args));
      }
      case ExprKind::kNot:
        return Value(!eval(*e.children[0], scope).truthy());
      case ExprKind::kNeg:
        return negate(eval(*e.children[0], scope));
      case ExprKind::kPos: {
        Value v = eval(*e.children[0], scope);
        if (v.is_undefined()) undefined_error(v);
        FULGUR_CHECK(v.is_number(), "bad operand type for unary +: '", v.type_name(), "'");
        return v.is_bool() ? Value(v.as_int()) : v;
      }
      case ExprKind::kBinary:
        return binary_op(e.name, eval(*e.children[0], scope), eval(*e.children[1], scope));
      case ExprKind::kConcat: {
        std::string s;
        for (const auto& c : e.children) s += eval(*c, scope).to_string();
        return Value(std::move(s));
      }
      case ExprKind::kAnd: {  // Python returns the deciding operand, not a bool
        Value a = eval(*e.children[0], scope);
        return a.truthy() ? eval(*e.children[1], scope) : a;
      }
      case ExprKind::kOr: {
        Value a = eval(*e.children[0], scope);
        return a.truthy() ? a : eval(*e.children[1], scope);
      }
      case ExprKind::kCompare: {
        Value left = eval(*e.children[0], scope);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.children[i + 1], scope);
          const std::string& op = e.ops[i];
          const bool ok = op == "in"      ? contains(right, left)
                          : op == "notin" ? !contains(right, left)
                                          : compare_op(op, left, right);
          if (!ok) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case ExprKind::kCondExpr:
        if (eval(*e.children[0], scope).truthy()) return eval(*e.children[1], scope);
        if (e.children[2]) return eval(*e.children[2], scope);
        return Value::undefined(
            "the inline if-expression evaluated to false and no else section was defined");
    }
    fail("unknown expression kind");
  }

  ScopePtr globals_;
  ScopePtr root_;
  int64_t iterations_ = 0;
  int call_depth_ = 0;
};

}  // namespace

std::string render_template(const Body& body, const Value& context) {
  Interpreter interp(context);
  return interp.run(body);
}

}  // namespace fulgur::chat
