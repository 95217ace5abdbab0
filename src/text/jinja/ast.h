// Syntax tree of a parsed template: one Node type for expressions and statements, shaped after
// jinja2.nodes. Nodes are immutable after parsing and shared by every render of the template.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/value.h"

namespace inkling::jinja {

enum class NodeKind {
  // expressions
  kConst,     // value
  kName,      // name
  kList,      // items
  kTuple,     // items
  kDict,      // items = k0, v0, k1, v1, ...
  kGetattr,   // a.name
  kGetitem,   // a[b]
  kSlice,     // a[b:c:d] (any of b, c, d may be null)
  kCall,      // a(items..., kwargs..., *dyn_args, **dyn_kwargs)
  kFilter,    // a | name(items..., kwargs...) ; a is null inside filter blocks
  kTest,      // a is name(items..., kwargs...)
  kUnary,     // name in {"-", "+", "not"}, a
  kBinary,    // a name b for name in {+ - * / // % ** and or}
  kConcat,    // items joined with ~
  kCompare,   // a, then ops = (op, operand) pairs
  kCondExpr,  // b if a else c (c may be null)
  kNsRef,     // name.attr as an assignment target (name, attr in `attr`)
  // statements
  kData,         // literal template text in `name`
  kOutput,       // {{ a }}
  kIf,           // branches (cond, body)..., else_body
  kFor,          // for target in a [if b] [recursive]: body else else_body
  kSet,          // set target = a
  kSetBlock,     // set target [| filters in a]: body
  kMacro,        // macro name(params): body
  kCallBlock,    // call(params) a: body
  kFilterBlock,  // filter a (filter chain with a null innermost operand): body
  kWith,         // with params (target name, value): body
  kScope,        // a body rendered in place (generation, autoescape, block)
  kBreak,
  kContinue,
};

struct Node;
using NodePtr = std::shared_ptr<const Node>;
using Body = std::vector<NodePtr>;

struct Node {
  NodeKind kind;
  int line = 0;
  int column = 0;
  std::string name;
  std::string attr;
  Value value;
  NodePtr a, b, c, d;
  NodePtr target;
  std::vector<NodePtr> items;
  std::vector<std::pair<std::string, NodePtr>> kwargs;  // call kwargs; compare ops; params
  NodePtr dyn_args, dyn_kwargs;
  std::vector<std::pair<NodePtr, Body>> branches;
  Body body, else_body;
  bool recursive = false;
  // Set by the parser: whether the body reads `loop` (for) / varargs, kwargs, caller (macro).
  bool uses_loop = false, uses_varargs = false, uses_kwargs = false, uses_caller = false;
};

// True when `name` is read anywhere below `n` (used for loop/varargs/kwargs/caller).
inline bool references(const Node& n, const std::string& name) {
  if (n.kind == NodeKind::kName && n.name == name) return true;
  for (const NodePtr* p : {&n.a, &n.b, &n.c, &n.d, &n.target, &n.dyn_args, &n.dyn_kwargs})
    if (*p && references(**p, name)) return true;
  for (const auto& x : n.items)
    if (references(*x, name)) return true;
  for (const auto& [k, v] : n.kwargs)
    if (v && references(*v, name)) return true;
  for (const auto& [cond, body] : n.branches) {
    if (references(*cond, name)) return true;
    for (const auto& s : body)
      if (references(*s, name)) return true;
  }
  for (const Body* b : {&n.body, &n.else_body})
    for (const auto& s : *b)
      if (references(*s, name)) return true;
  return false;
}

inline bool body_references(const Body& body, const std::string& name) {
  for (const auto& s : body)
    if (references(*s, name)) return true;
  return false;
}

}  // namespace inkling::jinja
