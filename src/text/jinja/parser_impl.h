// Parser internals shared by parser.cpp (statements) and parser_expr.cpp (expressions): a
// recursive-descent port of jinja2/parser.py over the lexer's tokens.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/ast.h"
#include "text/jinja/error.h"
#include "text/jinja/lexer.h"

namespace inkling::jinja {

inline constexpr int kMaxParseDepth = 200;

using MutNode = std::shared_ptr<Node>;

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : t_(std::move(toks)) {}

  Body parse_root() {
    Body body = subparse({});
    if (cur().type != Tok::kEof) fail("unexpected token");
    return body;
  }

 private:
  // ---- token helpers ------------------------------------------------------------------
  const Token& cur() const { return t_[i_]; }
  const Token& look() const { return t_[std::min(i_ + 1, t_.size() - 1)]; }
  void next() {
    if (i_ + 1 < t_.size()) ++i_;
  }
  bool is_op(const char* op) const { return cur().type == Tok::kOp && cur().text == op; }
  bool is_name(const char* n) const { return cur().type == Tok::kName && cur().text == n; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }

  static std::string describe(const Token& t) {
    switch (t.type) {
      case Tok::kName:
      case Tok::kOp:
        return t.text;
      case Tok::kBlockEnd:
        return "end of statement block";
      case Tok::kVarEnd:
        return "end of print statement";
      case Tok::kBlockBegin:
        return "begin of statement block";
      case Tok::kVarBegin:
        return "begin of print statement";
      case Tok::kEof:
        return "end of template";
      case Tok::kString:
        return "string";
      case Tok::kInt:
        return "integer";
      case Tok::kFloat:
        return "float";
      case Tok::kData:
        return "template data";
    }
    return "token";
  }

  [[noreturn]] void fail(const std::string& msg) const {
    throw TemplateError(ErrorKind::kSyntax, msg, cur().line, cur().column);
  }
  [[noreturn]] void fail_at(const std::string& msg, const Token& t) const {
    throw TemplateError(ErrorKind::kSyntax, msg, t.line, t.column);
  }

  void expect(Tok type, const char* what) {
    if (cur().type != type)
      fail(std::string("expected token '") + what + "', got '" + describe(cur()) + "'");
    next();
  }
  void expect_op(const char* op) {
    if (!is_op(op)) fail(std::string("expected token '") + op + "', got '" + describe(cur()) + "'");
    next();
  }
  std::string expect_name() {
    if (cur().type != Tok::kName) fail("expected token 'name', got '" + describe(cur()) + "'");
    std::string n = cur().text;
    next();
    return n;
  }

  MutNode make(NodeKind k, const Token& at) const {
    auto n = std::make_shared<Node>();
    n->kind = k;
    n->line = at.line;
    n->column = at.column;
    return n;
  }

  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxParseDepth)
        p_.fail("template nesting exceeds " + std::to_string(kMaxParseDepth) + " levels");
    }
    ~DepthGuard() { --p_.depth_; }
    Parser& p_;
  };
  // Chains built in a loop (a + b + c, x.a.b, v|f|g, ...) nest the tree without recursing here:
  // each link counts as one level while the chain is parsed (Jinja2 compiles them to nested
  // parentheses, which Python also refuses beyond 200).
  struct ChainGuard {
    explicit ChainGuard(Parser& p) : p_(p) {}
    void link() {
      ++n_;
      if (++p_.depth_ > kMaxParseDepth)
        p_.fail("template nesting exceeds " + std::to_string(kMaxParseDepth) + " levels");
    }
    ~ChainGuard() { p_.depth_ -= n_; }
    Parser& p_;
    int n_ = 0;
  };

  // statements (parser.cpp)
  bool at_end_tag(std::initializer_list<const char*> ends) const;
  Body subparse(std::initializer_list<const char*> ends);
  [[noreturn]] void fail_unknown_tag(const std::string& name, const Token& at) const;
  void append_expected(std::string& msg) const;
  Body parse_statements(const char* tag, std::vector<std::string> ends, bool drop_needle);
  NodePtr parse_statement();
  NodePtr parse_for();
  NodePtr parse_if();
  NodePtr parse_set();
  void parse_signature(Node& s);
  NodePtr parse_macro();
  NodePtr parse_call_block();
  NodePtr parse_filter_block();
  NodePtr parse_with();
  NodePtr parse_assign_target(bool with_tuple, bool name_only,
                              std::initializer_list<const char*> extra_end, bool with_namespace);

  // expressions (parser_expr.cpp)
  bool tuple_end(std::initializer_list<const char*> extra_end) const;
  NodePtr parse_tuple(bool with_condexpr, bool simplified,
                      std::initializer_list<const char*> extra_end, bool explicit_parens = false);
  NodePtr parse_expression(bool with_condexpr);
  NodePtr parse_condexpr();
  NodePtr binary(const Token& at, const char* op, NodePtr l, NodePtr r);
  NodePtr parse_or();
  NodePtr parse_and();
  NodePtr parse_not();
  NodePtr parse_compare();
  NodePtr parse_math1();
  NodePtr parse_concat();
  NodePtr parse_math2();
  NodePtr parse_pow();
  NodePtr parse_unary(bool with_filter);
  NodePtr parse_primary();
  NodePtr parse_postfix(NodePtr node);
  NodePtr parse_filter_expr(NodePtr node);
  NodePtr parse_subscript(NodePtr node);
  NodePtr parse_subscribed();
  void parse_call_args(Node& n);
  NodePtr parse_call(NodePtr node);
  NodePtr parse_filter(NodePtr node, bool start_inline);
  NodePtr parse_test(NodePtr node);

  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  std::vector<std::pair<std::string, std::vector<std::string>>> stack_;
};

}  // namespace inkling::jinja
