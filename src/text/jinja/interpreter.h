// Interpreter: renders a parsed template against variables — scopes (per-iteration loop frames,
// macro closures), statements, expression evaluation with Python semantics, and the sandbox's
// attribute rules. Filters/tests live in filters.cpp, methods and globals in methods.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/jinja/ast.h"
#include "text/jinja/value.h"

namespace inkling::jinja {

// Limits that turn runaway templates into errors instead of stack overflows or hangs.
inline constexpr int kMaxCallDepth = 200;          // nested macro calls
inline constexpr int64_t kMaxSteps = 100'000'000;  // default budget: statements + loop iterations
inline constexpr size_t kMaxOutputBytes = 256u << 20;  // rendered text / built strings

// Variables of one scope. Scopes hold a handful of names, so a vector beats a hash map.
class FrameVars {
 public:
  Value& operator[](const std::string& name) {
    for (auto& [k, v] : items_)
      if (k == name) return v;
    items_.emplace_back(name, Value());
    return items_.back().second;
  }
  const Value* find(const std::string& name) const {
    for (const auto& [k, v] : items_)
      if (k == name) return &v;
    return nullptr;
  }
  void clear() { items_.clear(); }

 private:
  std::vector<std::pair<std::string, Value>> items_;
};

struct Frame {
  FrameVars vars;
  std::shared_ptr<Frame> parent;
};
using FramePtr = std::shared_ptr<Frame>;

class Interpreter {
 public:
  // `vars` are the render variables; they shadow the globals (range, namespace, ...).
  explicit Interpreter(const Dict& vars, int64_t max_steps = kMaxSteps);
  ~Interpreter();

  // Renders the template body; throws TemplateError.
  std::string render(const Body& body);

  // Used by filters, tests and methods.
  Value getattr(const Value& obj, const std::string& name);
  Value getitem(const Value& obj, const Value& key);
  Value call(const Value& fn, const CallArgs& args);
  Value apply_filter(const std::string& name, const Value& v, const CallArgs& args);
  bool apply_test(const std::string& name, const Value& v, const CallArgs& args);
  std::vector<Value> iterate(const Value& v);
  void register_namespace(const Value& ns) { namespaces_.push_back(ns); }
  void check_size(size_t bytes) const;

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Flow exec_body(const Body& body, std::string& out);
  Flow exec(const Node& n, std::string& out);
  void exec_for(const Node& n, const Value& iterable, int depth, std::string& out);
  void exec_set(const Node& target, const Value& v);
  Value make_macro(const Node& n, const Body& body,
                   const std::vector<std::pair<std::string, NodePtr>>& params,
                   const std::string& name);

  Value eval(const Node& n);
  Value eval_binary(const Node& n);
  Value eval_compare(const Node& n);
  Value eval_call(const Node& n);
  Value eval_filter(const Node& n, const Value* block_input);
  CallArgs eval_args(const Node& n);

  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value v) { frame_->vars[name] = std::move(v); }
  void step();

  Dict vars_;
  Dict globals_;
  FramePtr frame_;
  int call_depth_ = 0;
  int64_t steps_ = 0;
  int64_t max_steps_;
  // Cleared after rendering to break reference cycles (namespace -> itself, frame -> macro ->
  // closure frame).
  std::vector<Value> namespaces_;
  std::vector<FramePtr> closure_frames_;
};

// Python arithmetic on template values (shared with filters): + - * / // % **.
Value binary_op(const std::string& op, const Value& a, const Value& b);
// Whether a filter / test of that name exists (filters.cpp, tests.cpp).
bool has_filter(const std::string& name);
bool has_test(const std::string& name);
// Raises the error an Undefined value carries when it is used.
[[noreturn]] void fail_undefined(const Value& u);

}  // namespace inkling::jinja
