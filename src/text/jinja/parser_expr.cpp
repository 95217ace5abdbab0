// Parser, expressions: jinja2/parser.py's precedence chain (condexpr, or, and, not, compare,
// math, concat, pow, unary), primaries, postfix access, calls, filters and tests.
#include <cerrno>
#include <cstdlib>

#include "text/jinja/parser_impl.h"

namespace inkling::jinja {

bool Parser::tuple_end(std::initializer_list<const char*> extra_end) const {
  if (cur().type == Tok::kVarEnd || cur().type == Tok::kBlockEnd || is_op(")")) return true;
  for (const char* e : extra_end)
    if (is_name(e)) return true;
  return false;
}

NodePtr Parser::parse_tuple(bool with_condexpr, bool simplified,
                            std::initializer_list<const char*> extra_end, bool explicit_parens) {
  const Token start = cur();
  std::vector<NodePtr> args;
  bool is_tuple = false;
  while (true) {
    if (!args.empty()) expect_op(",");
    if (tuple_end(extra_end)) break;
    if (simplified)
      args.push_back(parse_primary());
    else if (with_condexpr)
      args.push_back(parse_expression(true));
    else
      args.push_back(parse_expression(false));
    if (is_op(","))
      is_tuple = true;
    else
      break;
  }
  if (!is_tuple) {
    if (!args.empty()) return args[0];
    if (!explicit_parens) fail("Expected an expression, got '" + describe(cur()) + "'");
  }
  auto t = make(NodeKind::kTuple, start);
  t->items = std::move(args);
  return t;
}

NodePtr Parser::parse_expression(bool with_condexpr) {
  DepthGuard g(*this);
  return with_condexpr ? parse_condexpr() : parse_or();
}

NodePtr Parser::parse_condexpr() {
  const Token start = cur();
  NodePtr expr1 = parse_or();
  ChainGuard chain(*this);
  while (skip_name("if")) {
    chain.link();
    NodePtr expr2 = parse_or();
    NodePtr expr3;
    if (skip_name("else")) expr3 = parse_condexpr();
    auto n = make(NodeKind::kCondExpr, start);
    n->a = expr2;
    n->b = expr1;
    n->c = expr3;
    expr1 = n;
  }
  return expr1;
}

NodePtr Parser::binary(const Token& at, const char* op, NodePtr l, NodePtr r) {
  auto n = make(NodeKind::kBinary, at);
  n->name = op;
  n->a = std::move(l);
  n->b = std::move(r);
  return n;
}

NodePtr Parser::parse_or() {
  const Token start = cur();
  NodePtr left = parse_and();
  ChainGuard chain(*this);
  while (skip_name("or")) {
    chain.link();
    left = binary(start, "or", left, parse_and());
  }
  return left;
}

NodePtr Parser::parse_and() {
  const Token start = cur();
  NodePtr left = parse_not();
  ChainGuard chain(*this);
  while (skip_name("and")) {
    chain.link();
    left = binary(start, "and", left, parse_not());
  }
  return left;
}

NodePtr Parser::parse_not() {
  const Token start = cur();
  if (skip_name("not")) {
    DepthGuard g(*this);
    auto n = make(NodeKind::kUnary, start);
    n->name = "not";
    n->a = parse_not();
    return n;
  }
  return parse_compare();
}

NodePtr Parser::parse_compare() {
  const Token start = cur();
  NodePtr expr = parse_math1();
  std::vector<std::pair<std::string, NodePtr>> ops;
  while (true) {
    if (cur().type == Tok::kOp && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                   cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
      std::string op = cur().text;
      next();
      ops.emplace_back(op, parse_math1());
    } else if (skip_name("in")) {
      ops.emplace_back("in", parse_math1());
    } else if (is_name("not") && look().type == Tok::kName && look().text == "in") {
      next();
      next();
      ops.emplace_back("notin", parse_math1());
    } else {
      break;
    }
  }
  if (ops.empty()) return expr;
  auto n = make(NodeKind::kCompare, start);
  n->a = expr;
  n->kwargs = std::move(ops);
  return n;
}

NodePtr Parser::parse_math1() {
  const Token start = cur();
  NodePtr left = parse_concat();
  ChainGuard chain(*this);
  while (is_op("+") || is_op("-")) {
    chain.link();
    std::string op = cur().text;
    next();
    left = binary(start, op.c_str(), left, parse_concat());
  }
  return left;
}

NodePtr Parser::parse_concat() {
  const Token start = cur();
  std::vector<NodePtr> args{parse_math2()};
  while (skip_op("~")) args.push_back(parse_math2());
  if (args.size() == 1) return args[0];
  auto n = make(NodeKind::kConcat, start);
  n->items = std::move(args);
  return n;
}

NodePtr Parser::parse_math2() {
  const Token start = cur();
  NodePtr left = parse_pow();
  ChainGuard chain(*this);
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    chain.link();
    std::string op = cur().text;
    next();
    left = binary(start, op.c_str(), left, parse_pow());
  }
  return left;
}

NodePtr Parser::parse_pow() {
  const Token start = cur();
  NodePtr left = parse_unary(true);
  ChainGuard chain(*this);
  while (skip_op("**")) {
    chain.link();
    left = binary(start, "**", left, parse_unary(true));
  }
  return left;
}

NodePtr Parser::parse_unary(bool with_filter) {
  DepthGuard g(*this);
  const Token start = cur();
  NodePtr node;
  if (is_op("-") || is_op("+")) {
    std::string op = cur().text;
    next();
    auto n = make(NodeKind::kUnary, start);
    n->name = op;
    n->a = parse_unary(false);
    node = n;
  } else {
    node = parse_primary();
  }
  node = parse_postfix(node);
  if (with_filter) node = parse_filter_expr(node);
  return node;
}

NodePtr Parser::parse_primary() {
  DepthGuard g(*this);
  const Token tok = cur();
  if (tok.type == Tok::kName) {
    next();
    auto n = make(NodeKind::kConst, tok);
    if (tok.text == "true" || tok.text == "True")
      n->value = Value::boolean(true);
    else if (tok.text == "false" || tok.text == "False")
      n->value = Value::boolean(false);
    else if (tok.text == "none" || tok.text == "None")
      n->value = Value::none();
    else {
      n->kind = NodeKind::kName;
      n->name = tok.text;
    }
    return n;
  }
  if (tok.type == Tok::kString) {
    std::string s = tok.text;
    next();
    while (cur().type == Tok::kString) {
      s += cur().text;
      next();
    }
    auto n = make(NodeKind::kConst, tok);
    n->value = Value::string(std::move(s));
    return n;
  }
  if (tok.type == Tok::kInt || tok.type == Tok::kFloat) {
    next();
    auto n = make(NodeKind::kConst, tok);
    std::string txt;
    for (char ch : tok.text)
      if (ch != '_') txt += ch;
    if (tok.type == Tok::kFloat) {
      n->value = Value::number(std::strtod(txt.c_str(), nullptr));
    } else {
      int base = 10;
      size_t off = 0;
      if (txt.size() > 1 && txt[0] == '0') {
        char p = static_cast<char>(txt[1] | 0x20);
        base = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 10;
        if (base != 10) off = 2;
      }
      errno = 0;
      long long v = std::strtoll(txt.c_str() + off, nullptr, base);
      if (errno == ERANGE) fail_at("integer literal too large", tok);
      n->value = Value::integer(v);
    }
    return n;
  }
  if (tok.type == Tok::kOp && tok.text == "(") {
    next();
    NodePtr n = parse_tuple(true, false, {}, true);
    expect_op(")");
    return n;
  }
  if (tok.type == Tok::kOp && tok.text == "[") {
    next();
    auto n = make(NodeKind::kList, tok);
    while (!is_op("]")) {
      if (!n->items.empty()) expect_op(",");
      if (is_op("]")) break;
      n->items.push_back(parse_expression(true));
    }
    expect_op("]");
    return n;
  }
  if (tok.type == Tok::kOp && tok.text == "{") {
    next();
    auto n = make(NodeKind::kDict, tok);
    while (!is_op("}")) {
      if (!n->items.empty()) expect_op(",");
      if (is_op("}")) break;
      n->items.push_back(parse_expression(true));
      expect_op(":");
      n->items.push_back(parse_expression(true));
    }
    expect_op("}");
    return n;
  }
  fail("unexpected '" + describe(tok) + "'");
}

NodePtr Parser::parse_postfix(NodePtr node) {
  ChainGuard chain(*this);
  for (;; chain.link()) {
    if (is_op(".") || is_op("["))
      node = parse_subscript(node);
    else if (is_op("("))
      node = parse_call(node);
    else
      return node;
  }
}

NodePtr Parser::parse_filter_expr(NodePtr node) {
  ChainGuard chain(*this);
  for (;; chain.link()) {
    if (is_op("|"))
      node = parse_filter(node, false);
    else if (is_name("is"))
      node = parse_test(node);
    else if (is_op("("))
      node = parse_call(node);
    else
      return node;
  }
}

NodePtr Parser::parse_subscript(NodePtr node) {
  const Token tok = cur();
  next();
  if (tok.text == ".") {
    const Token attr = cur();
    next();
    if (attr.type == Tok::kName) {
      auto n = make(NodeKind::kGetattr, tok);
      n->a = node;
      n->name = attr.text;
      return n;
    }
    if (attr.type != Tok::kInt) fail_at("expected name or number", attr);
    auto key = make(NodeKind::kConst, attr);
    key->value = Value::integer(std::strtoll(attr.text.c_str(), nullptr, 10));
    auto n = make(NodeKind::kGetitem, tok);
    n->a = node;
    n->b = key;
    return n;
  }
  std::vector<NodePtr> args;
  while (!is_op("]")) {
    if (!args.empty()) {
      expect_op(",");
      if (is_op("]")) break;
    }
    args.push_back(parse_subscribed());
  }
  expect_op("]");
  NodePtr arg;
  if (args.size() == 1) {
    arg = args[0];
  } else {
    auto t = make(NodeKind::kTuple, tok);
    t->items = std::move(args);
    arg = t;
  }
  if (arg->kind == NodeKind::kSlice) {
    auto s = std::make_shared<Node>(*arg);
    s->a = node;
    return s;
  }
  auto n = make(NodeKind::kGetitem, tok);
  n->a = node;
  n->b = arg;
  return n;
}

NodePtr Parser::parse_subscribed() {
  const Token start = cur();
  NodePtr first;
  if (!is_op(":")) {
    first = parse_expression(true);
    if (!is_op(":")) return first;
  }
  next();  // ':'
  auto s = make(NodeKind::kSlice, start);
  s->b = first;
  if (!is_op("]") && !is_op(",") && !is_op(":")) s->c = parse_expression(true);
  if (skip_op(":")) {
    if (!is_op("]") && !is_op(",")) s->d = parse_expression(true);
  }
  return s;
}

void Parser::parse_call_args(Node& n) {
  expect_op("(");
  bool require_comma = false;
  while (!is_op(")")) {
    if (require_comma) {
      expect_op(",");
      if (is_op(")")) break;
    }
    if (skip_op("*")) {
      n.dyn_args = parse_expression(true);
    } else if (skip_op("**")) {
      n.dyn_kwargs = parse_expression(true);
    } else if (cur().type == Tok::kName && look().type == Tok::kOp && look().text == "=") {
      std::string key = cur().text;
      next();
      next();
      n.kwargs.emplace_back(key, parse_expression(true));
    } else {
      n.items.push_back(parse_expression(true));
    }
    require_comma = true;
  }
  expect_op(")");
}

NodePtr Parser::parse_call(NodePtr node) {
  auto n = make(NodeKind::kCall, cur());
  n->a = node;
  parse_call_args(*n);
  return n;
}

NodePtr Parser::parse_filter(NodePtr node, bool start_inline) {
  ChainGuard chain(*this);
  while (is_op("|") || start_inline) {
    chain.link();
    if (!start_inline) next();
    start_inline = false;
    const Token at = cur();
    std::string name = expect_name();
    while (skip_op(".")) name += "." + expect_name();
    auto f = make(NodeKind::kFilter, at);
    f->a = node;
    f->name = name;
    if (is_op("(")) parse_call_args(*f);
    node = f;
  }
  return node;
}

NodePtr Parser::parse_test(NodePtr node) {
  const Token start = cur();
  next();  // 'is'
  bool negated = skip_name("not");
  std::string name = expect_name();
  while (skip_op(".")) name += "." + expect_name();
  auto t = make(NodeKind::kTest, start);
  t->a = node;
  t->name = name;
  if (is_op("(")) {
    parse_call_args(*t);
  } else if ((cur().type == Tok::kName || cur().type == Tok::kString || cur().type == Tok::kInt ||
              cur().type == Tok::kFloat || is_op("[") || is_op("{")) &&
             !is_name("else") && !is_name("or") && !is_name("and")) {
    if (is_name("is")) fail("You cannot chain multiple tests with is");
    t->items.push_back(parse_postfix(parse_primary()));
  }
  if (!negated) return t;
  auto n = make(NodeKind::kUnary, start);
  n->name = "not";
  n->a = t;
  return n;
}

}  // namespace inkling::jinja
