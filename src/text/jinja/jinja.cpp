// jinja::Template: parsing plus Jinja2's compile-time checks (unknown filters/tests outside `if`
// are errors at load), rendering, and the conversion of TemplateError into Status.
#include "text/jinja/jinja.h"

#include <algorithm>
#include <vector>

#include "text/jinja/error.h"
#include "text/jinja/interpreter.h"
#include "text/jinja/parser.h"

namespace inkling::jinja {

namespace {

// Longest root-to-leaf path of a parsed template. The parser bounds each kind of nesting to
// kMaxParseDepth, but nestings of different kinds can stack; everything that walks the tree
// afterwards (checks, rendering) recurses, so the total is bounded too. Computed without recursion.
constexpr size_t kMaxTreeDepth = 800;  // 4 x the parser's kMaxParseDepth

size_t tree_depth(const Body& body) {
  std::vector<std::pair<const Node*, size_t>> stack;
  for (const auto& n : body) stack.emplace_back(n.get(), 1);
  size_t deepest = 0;
  while (!stack.empty()) {
    const auto [n, d] = stack.back();
    stack.pop_back();
    deepest = std::max(deepest, d);
    auto push = [&, d = d](const NodePtr& c) {
      if (c) stack.emplace_back(c.get(), d + 1);
    };
    for (const NodePtr* p : {&n->a, &n->b, &n->c, &n->d, &n->target, &n->dyn_args, &n->dyn_kwargs})
      push(*p);
    for (const auto& x : n->items) push(x);
    for (const auto& kv : n->kwargs) push(kv.second);
    for (const auto& [cond, branch] : n->branches) {
      push(cond);
      for (const auto& x : branch) push(x);
    }
    for (const auto& x : n->body) push(x);
    for (const auto& x : n->else_body) push(x);
  }
  return deepest;
}

// Jinja2 3.x reports an unknown filter/test when compiling, unless it sits inside an `if`
// (then only when executed).
void check_names(const Node& n, bool in_if) {
  if (!in_if && n.kind == NodeKind::kFilter && !has_filter(n.name))
    throw TemplateError(ErrorKind::kSyntax, "No filter named '" + n.name + "'.", n.line, n.column);
  if (!in_if && n.kind == NodeKind::kTest && !has_test(n.name))
    throw TemplateError(ErrorKind::kSyntax, "No test named '" + n.name + "'.", n.line, n.column);
  for (const NodePtr* p : {&n.a, &n.b, &n.c, &n.d, &n.target, &n.dyn_args, &n.dyn_kwargs})
    if (*p) check_names(**p, in_if);
  for (const auto& x : n.items) check_names(*x, in_if);
  for (const auto& [k, v] : n.kwargs)
    if (v) check_names(*v, in_if);
  for (const auto& [cond, body] : n.branches) {
    check_names(*cond, in_if);
    for (const auto& s : body) check_names(*s, true);
  }
  bool nested = in_if || n.kind == NodeKind::kIf;
  for (const auto& s : n.body) check_names(*s, nested);
  for (const auto& s : n.else_body) check_names(*s, nested);
}

}  // namespace

Result<Template> Template::parse(std::string_view source) {
  try {
    auto body = std::make_shared<Body>(parse_template(source));
    if (tree_depth(*body) > kMaxTreeDepth)
      return Status::error("[template] template nesting exceeds " + std::to_string(kMaxTreeDepth) +
                           " levels");
    for (const auto& n : *body) check_names(*n, false);
    Template t;
    t.body_ = std::move(body);
    return t;
  } catch (const TemplateError& e) {
    return Status::error("[template] line " + std::to_string(e.line()) + ", column " +
                         std::to_string(e.column()) + ": " + e.message());
  } catch (const std::exception& e) {
    return Status::error(std::string("[template] internal error while parsing: ") + e.what());
  }
}

Result<std::string> Template::render(const Dict& vars, int64_t max_steps) const {
  try {
    Interpreter in(vars, max_steps);
    return in.render(*body_);
  } catch (const TemplateError& e) {
    if (e.kind() == ErrorKind::kRaise) return Status::error(e.message());
    return Status::error("[template] line " + std::to_string(e.line()) + ": " + e.message());
  } catch (const std::bad_alloc&) {
    return Status::error("[template] out of memory while rendering");
  } catch (const std::exception& e) {
    return Status::error(std::string("[template] internal error while rendering: ") + e.what());
  }
}

}  // namespace inkling::jinja
