// Parser, statements: tags ({% for %}, {% if %}, {% set %}, macros, call/filter blocks, ...)
// with Jinja2's end-tag bookkeeping and error messages.
#include "text/jinja/parser.h"

#include "text/jinja/parser_impl.h"

namespace inkling::jinja {

bool Parser::at_end_tag(std::initializer_list<const char*> ends) const {
  for (const char* e : ends)
    if (is_name(e)) return true;
  return false;
}

Body Parser::subparse(std::initializer_list<const char*> ends) {
  Body body;
  while (cur().type != Tok::kEof) {
    const Token& tok = cur();
    if (tok.type == Tok::kData) {
      auto n = make(NodeKind::kData, tok);
      n->name = tok.text;
      body.push_back(n);
      next();
    } else if (tok.type == Tok::kVarBegin) {
      next();
      auto n = make(NodeKind::kOutput, tok);
      n->a = parse_tuple(true, false, {});
      body.push_back(n);
      expect(Tok::kVarEnd, "end of print statement");
    } else if (tok.type == Tok::kBlockBegin) {
      next();
      if (ends.size() && at_end_tag(ends)) return body;
      NodePtr st = parse_statement();
      if (st) body.push_back(st);
      expect(Tok::kBlockEnd, "end of statement block");
    } else {
      fail("unexpected '" + describe(tok) + "'");
    }
  }
  return body;
}

void Parser::fail_unknown_tag(const std::string& name, const Token& at) const {
  std::string msg = "Encountered unknown tag '" + name + "'.";
  append_expected(msg);
  fail_at(msg, at);
}

void Parser::append_expected(std::string& msg) const {
  if (stack_.empty()) return;
  const auto& top = stack_.back();
  msg += " Jinja was looking for the following tags: ";
  for (size_t k = 0; k < top.second.size(); ++k) {
    if (k) msg += " or ";
    msg += "'" + top.second[k] + "'";
  }
  msg += ". The innermost block that needs to be closed is '" + top.first + "'.";
}

Body Parser::parse_statements(const char* tag, std::vector<std::string> ends, bool drop_needle) {
  DepthGuard g(*this);
  skip_op(":");
  expect(Tok::kBlockEnd, "end of statement block");
  stack_.emplace_back(tag, ends);
  Body body;
  switch (ends.size()) {
    case 1:
      body = subparse({ends[0].c_str()});
      break;
    case 2:
      body = subparse({ends[0].c_str(), ends[1].c_str()});
      break;
    default:
      body = subparse({ends[0].c_str(), ends[1].c_str(), ends[2].c_str()});
      break;
  }
  if (cur().type == Tok::kEof) {
    std::string msg = "Unexpected end of template.";
    append_expected(msg);
    fail(msg);
  }
  stack_.pop_back();
  if (drop_needle) next();
  return body;
}

NodePtr Parser::parse_statement() {
  const Token& tok = cur();
  if (tok.type != Tok::kName) fail("tag name expected");
  const std::string& n = tok.text;
  if (n == "for") return parse_for();
  if (n == "if") return parse_if();
  if (n == "set") return parse_set();
  if (n == "macro") return parse_macro();
  if (n == "call") return parse_call_block();
  if (n == "filter") return parse_filter_block();
  if (n == "with") return parse_with();
  if (n == "print") {
    next();
    auto o = make(NodeKind::kOutput, tok);
    o->a = parse_tuple(true, false, {});
    return o;
  }
  if (n == "break" || n == "continue") {
    if (loop_depth_ == 0) fail("'" + n + "' outside loop");
    auto s = make(n == "break" ? NodeKind::kBreak : NodeKind::kContinue, tok);
    next();
    return s;
  }
  if (n == "generation" || n == "autoescape" || n == "block") {
    Token start = tok;
    std::string tag = n;
    next();
    auto s = make(NodeKind::kScope, start);
    if (tag == "autoescape") parse_expression(true);
    if (tag == "block") {
      expect_name();
      skip_name("scoped");
      skip_name("required");
    }
    s->body = parse_statements(tag.c_str(), {"end" + tag}, true);
    if (tag == "block" && cur().type == Tok::kName) next();
    return s;
  }
  if (n == "extends" || n == "include" || n == "import" || n == "from")
    fail_at("'" + n + "' is not supported (templates are rendered without a loader)", tok);
  fail_unknown_tag(n, tok);
}

NodePtr Parser::parse_for() {
  const Token start = cur();
  next();
  auto s = make(NodeKind::kFor, start);
  s->target = parse_assign_target(true, false, {"in"}, false);
  if (!skip_name("in")) fail("expected token 'in', got '" + describe(cur()) + "'");
  s->a = parse_tuple(false, false, {"recursive"});
  if (skip_name("if")) s->b = parse_expression(true);
  s->recursive = skip_name("recursive");
  ++loop_depth_;
  s->body = parse_statements("for", {"endfor", "else"}, false);
  --loop_depth_;
  s->uses_loop = body_references(s->body, "loop");
  if (skip_name("else"))
    s->else_body = parse_statements("for", {"endfor"}, true);
  else
    next();
  return s;
}

NodePtr Parser::parse_if() {
  const Token start = cur();
  next();
  auto s = make(NodeKind::kIf, start);
  NodePtr cond = parse_tuple(false, false, {});
  while (true) {
    Body body = parse_statements("if", {"elif", "else", "endif"}, false);
    s->branches.emplace_back(cond, std::move(body));
    if (skip_name("elif")) {
      cond = parse_tuple(false, false, {});
      continue;
    }
    if (skip_name("else"))
      s->else_body = parse_statements("if", {"endif"}, true);
    else
      next();
    break;
  }
  return s;
}

NodePtr Parser::parse_set() {
  const Token start = cur();
  next();
  NodePtr target = parse_assign_target(true, false, {}, true);
  if (skip_op("=")) {
    auto s = make(NodeKind::kSet, start);
    s->target = target;
    s->a = parse_tuple(true, false, {});
    return s;
  }
  auto s = make(NodeKind::kSetBlock, start);
  s->target = target;
  if (is_op("|")) s->a = parse_filter(nullptr, false);
  s->body = parse_statements("set", {"endset"}, true);
  return s;
}

void Parser::parse_signature(Node& s) {
  expect_op("(");
  bool have_default = false;
  while (!is_op(")")) {
    if (!s.kwargs.empty()) expect_op(",");
    std::string arg = parse_assign_target(false, true, {}, false)->name;
    NodePtr def;
    if (skip_op("=")) {
      def = parse_expression(true);
      have_default = true;
    } else if (have_default) {
      fail("non-default argument follows default argument");
    }
    s.kwargs.emplace_back(arg, def);
  }
  expect_op(")");
}

NodePtr Parser::parse_macro() {
  const Token start = cur();
  next();
  auto s = make(NodeKind::kMacro, start);
  s->name = parse_assign_target(false, true, {}, false)->name;
  parse_signature(*s);
  int saved = loop_depth_;
  loop_depth_ = 0;
  s->body = parse_statements("macro", {"endmacro"}, true);
  s->uses_varargs = body_references(s->body, "varargs");
  s->uses_kwargs = body_references(s->body, "kwargs");
  s->uses_caller = body_references(s->body, "caller");
  loop_depth_ = saved;
  return s;
}

NodePtr Parser::parse_call_block() {
  const Token start = cur();
  next();
  auto s = make(NodeKind::kCallBlock, start);
  if (is_op("(")) parse_signature(*s);
  s->a = parse_expression(true);
  if (s->a->kind != NodeKind::kCall) fail_at("expected call", start);
  int saved = loop_depth_;
  loop_depth_ = 0;
  s->body = parse_statements("call", {"endcall"}, true);
  s->uses_varargs = body_references(s->body, "varargs");
  s->uses_kwargs = body_references(s->body, "kwargs");
  s->uses_caller = body_references(s->body, "caller");
  loop_depth_ = saved;
  return s;
}

NodePtr Parser::parse_filter_block() {
  const Token start = cur();
  next();
  auto s = make(NodeKind::kFilterBlock, start);
  s->a = parse_filter(nullptr, true);
  s->body = parse_statements("filter", {"endfilter"}, true);
  return s;
}

NodePtr Parser::parse_with() {
  const Token start = cur();
  next();
  auto s = make(NodeKind::kWith, start);
  while (cur().type != Tok::kBlockEnd) {
    if (!s->kwargs.empty()) expect_op(",");
    NodePtr target = parse_assign_target(true, false, {}, false);
    if (target->kind != NodeKind::kName) fail("can't assign to a tuple in 'with'");
    expect_op("=");
    s->kwargs.emplace_back(target->name, parse_expression(true));
  }
  s->body = parse_statements("with", {"endwith"}, true);
  return s;
}

NodePtr Parser::parse_assign_target(bool with_tuple, bool name_only,
                                    std::initializer_list<const char*> extra_end,
                                    bool with_namespace) {
  const Token start = cur();
  NodePtr target;
  if (with_namespace && look().type == Tok::kOp && look().text == ".") {
    auto n = make(NodeKind::kNsRef, start);
    n->name = expect_name();
    next();  // the dot
    n->attr = expect_name();
    return n;
  }
  if (name_only) {
    auto n = make(NodeKind::kName, start);
    n->name = expect_name();
    return n;
  }
  target = with_tuple ? parse_tuple(true, true, extra_end) : parse_primary();
  bool ok = target->kind == NodeKind::kName;
  if (target->kind == NodeKind::kTuple) {
    ok = true;
    for (const auto& it : target->items) ok = ok && it->kind == NodeKind::kName;
  }
  if (!ok)
    fail_at("can't assign to '" +
                std::string(target->kind == NodeKind::kConst ? "const" : "expression") + "'",
            start);
  return target;
}

Body parse_template(std::string_view source) {
  return Parser(tokenize(source)).parse_root();
}

}  // namespace inkling::jinja
