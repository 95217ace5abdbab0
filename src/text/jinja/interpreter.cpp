// Interpreter: statements and scopes. Loop bodies get a fresh frame per iteration and macros a
// frame over their defining scope (Jinja2's lexical scoping); `if` shares the enclosing frame.
// Expression evaluation is in eval.cpp.
#include "text/jinja/interpreter.h"

#include "text/jinja/error.h"
#include "text/jinja/methods.h"

namespace inkling::jinja {
namespace {

// Macro calls and recursive loop() calls share one depth budget (Python's recursion limit).
struct DepthScope {
  DepthScope(int& d, int limit, const char* what = "nested macro calls") : d_(d) {
    if (++d_ > limit)
      throw TemplateError(ErrorKind::kLimit, "maximum recursion depth exceeded (" +
                                                 std::to_string(limit) + " " + what + ")");
  }
  ~DepthScope() { --d_; }
  int& d_;
};

// Restores the interpreter's current frame when a scope ends (also on exceptions).
struct FrameSwap {
  FrameSwap(FramePtr& slot, FramePtr next) : slot_(slot), saved_(std::move(slot)) {
    slot_ = std::move(next);
  }
  ~FrameSwap() { slot_ = std::move(saved_); }
  FramePtr& slot_;
  FramePtr saved_;
};

}  // namespace

[[noreturn]] void fail_undefined(const Value& u) {
  throw TemplateError(u.undefined_is_security() ? ErrorKind::kSecurity : ErrorKind::kUndefined,
                      u.undefined_message());
}

Interpreter::Interpreter(const Dict& vars, int64_t max_steps)
    : vars_(vars), frame_(std::make_shared<Frame>()), max_steps_(max_steps) {
  install_globals(globals_);
}

Interpreter::~Interpreter() {
  for (const Value& ns : namespaces_) ns.mutable_dict().clear();
  for (const FramePtr& f : closure_frames_) f->vars.clear();
}

void Interpreter::check_size(size_t bytes) const {
  if (bytes > kMaxOutputBytes)
    throw TemplateError(ErrorKind::kLimit, "rendered output exceeds " +
                                               std::to_string(kMaxOutputBytes >> 20) + " MiB");
}

void Interpreter::step() {
  if (++steps_ > max_steps_)
    throw TemplateError(ErrorKind::kLimit,
                        "template exceeded " + std::to_string(max_steps_) + " execution steps");
}

std::string Interpreter::render(const Body& body) {
  std::string out;
  exec_body(body, out);
  return out;
}

Value Interpreter::lookup(const std::string& name) const {
  for (const Frame* f = frame_.get(); f; f = f->parent.get()) {
    if (const Value* v = f->vars.find(name)) return *v;
  }
  if (const Value* v = vars_.find(std::string_view(name))) return *v;
  if (const Value* g = globals_.find(std::string_view(name))) return *g;
  return Value::undefined("'" + name + "' is undefined");
}

Interpreter::Flow Interpreter::exec_body(const Body& body, std::string& out) {
  for (const NodePtr& n : body) {
    Flow f = exec(*n, out);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec(const Node& n, std::string& out) {
  step();
  try {
    switch (n.kind) {
      case NodeKind::kData:
        out += n.name;
        break;
      case NodeKind::kOutput: {
        Value v = eval(*n.a);
        if (v.is_string())
          out += v.str();
        else
          out += py_str(v);
        check_size(out.size());
        break;
      }
      case NodeKind::kIf: {
        for (const auto& [cond, body] : n.branches)
          if (eval(*cond).truthy()) return exec_body(body, out);
        return exec_body(n.else_body, out);
      }
      case NodeKind::kFor:
        exec_for(n, eval(*n.a), 0, out);
        break;
      case NodeKind::kSet:
        exec_set(*n.target, eval(*n.a));
        break;
      case NodeKind::kSetBlock: {
        std::string captured;
        exec_body(n.body, captured);
        Value v = Value::string(std::move(captured));
        if (n.a) v = eval_filter(*n.a, &v);
        exec_set(*n.target, v);
        break;
      }
      case NodeKind::kMacro:
        assign(n.name, make_macro(n, n.body, n.kwargs, n.name));
        break;
      case NodeKind::kCallBlock: {
        Value caller = make_macro(n, n.body, n.kwargs, "caller");
        CallArgs args = eval_args(*n.a);
        args.kwargs.emplace_back("caller", caller);
        Value fn = eval(*n.a->a);
        out += py_str(call(fn, args));
        break;
      }
      case NodeKind::kFilterBlock: {
        std::string captured;
        exec_body(n.body, captured);
        Value v = Value::string(std::move(captured));
        out += py_str(eval_filter(*n.a, &v));
        break;
      }
      case NodeKind::kWith: {
        auto f = std::make_shared<Frame>();
        f->parent = frame_;
        for (const auto& [name, expr] : n.kwargs) f->vars[name] = eval(*expr);
        FrameSwap swap(frame_, f);
        return exec_body(n.body, out);
      }
      case NodeKind::kScope:
        return exec_body(n.body, out);
      case NodeKind::kBreak:
        return Flow::kBreak;
      case NodeKind::kContinue:
        return Flow::kContinue;
      default:
        throw TemplateError(ErrorKind::kRuntime, "unexpected node in statement position");
    }
  } catch (TemplateError& e) {
    e.set_line(n.line);
    throw;
  }
  return Flow::kNormal;
}

void Interpreter::exec_set(const Node& target, const Value& v) {
  if (target.kind == NodeKind::kName) {
    assign(target.name, v);
  } else if (target.kind == NodeKind::kNsRef) {
    Value ns = lookup(target.name);
    if (ns.kind() != Kind::kNamespace)
      throw TemplateError(ErrorKind::kRuntime, "cannot assign attribute on non-namespace object");
    if (!target.attr.empty() && target.attr[0] == '_')
      throw TemplateError(ErrorKind::kSecurity,
                          "Chat templates cannot store underscore-prefixed attributes on a "
                          "namespace, but got '" +
                              target.attr + "'. Please rename the attribute.");
    ns.mutable_dict().set(Value::string(target.attr), v);
  } else {  // tuple of names
    std::vector<Value> vals = iterate(v);
    size_t want = target.items.size();
    if (vals.size() > want)
      throw_type_error("too many values to unpack (expected " + std::to_string(want) + ")");
    if (vals.size() < want)
      throw_type_error("not enough values to unpack (expected " + std::to_string(want) + ", got " +
                       std::to_string(vals.size()) + ")");
    for (size_t i = 0; i < want; ++i) assign(target.items[i]->name, vals[i]);
  }
}

Value Interpreter::make_macro(const Node& n, const Body& body,
                              const std::vector<std::pair<std::string, NodePtr>>& params,
                              const std::string& name) {
  FramePtr closure = frame_;
  closure_frames_.push_back(frame_);
  const bool catch_varargs = n.uses_varargs;
  const bool catch_kwargs = n.uses_kwargs;
  const bool wants_caller = n.uses_caller;
  const Node* node = &n;
  const Body* body_ptr = &body;
  const auto* params_ptr = &params;
  return Value::callable(
      name,
      [=](Interpreter& in, const CallArgs& args) -> Value {
        DepthScope depth(in.call_depth_, kMaxCallDepth);
        auto f = std::make_shared<Frame>();
        f->parent = closure;
        const auto& ps = *params_ptr;
        if (args.args.size() > ps.size() && !catch_varargs)
          throw_type_error("macro '" + name + "' takes not more than " + std::to_string(ps.size()) +
                           " argument(s)");
        std::vector<bool> bound(ps.size(), false);
        for (size_t i = 0; i < ps.size() && i < args.args.size(); ++i) {
          f->vars[ps[i].first] = args.args[i];
          bound[i] = true;
        }
        Dict extra_kwargs;
        Value caller;
        for (const auto& [k, v] : args.kwargs) {
          bool matched = false;
          for (size_t i = 0; i < ps.size(); ++i) {
            if (ps[i].first != k) continue;
            if (bound[i])
              throw_type_error("macro '" + name + "' got multiple values for argument '" + k + "'");
            f->vars[k] = v;
            bound[i] = matched = true;
          }
          if (matched) continue;
          if (k == "caller" && wants_caller)
            caller = v;
          else if (catch_kwargs)
            extra_kwargs.set(Value::string(k), v);
          else if (k != "caller")
            throw_type_error("macro '" + name + "' takes no keyword argument '" + k + "'");
        }
        FrameSwap swap(in.frame_, f);
        for (size_t i = 0; i < ps.size(); ++i) {
          if (bound[i]) continue;
          f->vars[ps[i].first] =
              ps[i].second ? in.eval(*ps[i].second)
                           : Value::undefined("parameter '" + ps[i].first + "' was not provided");
        }
        if (catch_varargs) {
          std::vector<Value> rest;
          for (size_t i = ps.size(); i < args.args.size(); ++i) rest.push_back(args.args[i]);
          f->vars["varargs"] = Value::tuple(std::move(rest));
        }
        if (catch_kwargs) f->vars["kwargs"] = Value::dict(std::move(extra_kwargs));
        if (wants_caller && !caller.is_undefined()) f->vars["caller"] = caller;
        std::string out;
        try {
          in.exec_body(*body_ptr, out);
        } catch (TemplateError& e) {
          e.set_line(node->line);
          throw;
        }
        return Value::string(std::move(out));
      },
      /*is_macro=*/true);
}

void Interpreter::exec_for(const Node& n, const Value& iterable, int depth, std::string& out) {
  std::vector<Value> items = iterate(iterable);
  const Node& target = *n.target;
  auto bind = [&](Frame& f, const Value& item) {
    if (target.kind == NodeKind::kName) {
      f.vars[target.name] = item;
      return;
    }
    std::vector<Value> parts = iterate(item);
    size_t want = target.items.size();
    if (parts.size() != want)
      throw_type_error(parts.size() > want
                           ? "too many values to unpack (expected " + std::to_string(want) + ")"
                           : "not enough values to unpack (expected " + std::to_string(want) +
                                 ", got " + std::to_string(parts.size()) + ")");
    for (size_t i = 0; i < want; ++i) f.vars[target.items[i]->name] = parts[i];
  };
  if (n.b) {  // `for x in y if cond`: filter first; loop.* counts the kept items
    std::vector<Value> kept;
    for (const Value& item : items) {
      step();
      auto f = std::make_shared<Frame>();
      f->parent = frame_;
      bind(*f, item);
      FrameSwap swap(frame_, f);
      if (eval(*n.b).truthy()) kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    exec_body(n.else_body, out);
    return;
  }
  const bool uses_loop = n.uses_loop;
  const int64_t len = static_cast<int64_t>(items.size());
  auto changed_state = std::make_shared<std::pair<Value, bool>>();  // loop.changed() memory
  for (int64_t i = 0; i < len; ++i) {
    step();
    auto f = std::make_shared<Frame>();
    f->parent = frame_;
    bind(*f, items[static_cast<size_t>(i)]);
    if (uses_loop) {
      Dict loop;
      auto put = [&loop](const char* k, Value v) { loop.set(Value::string(k), std::move(v)); };
      put("index", Value::integer(i + 1));
      put("index0", Value::integer(i));
      put("revindex", Value::integer(len - i));
      put("revindex0", Value::integer(len - i - 1));
      put("first", Value::boolean(i == 0));
      put("last", Value::boolean(i == len - 1));
      put("length", Value::integer(len));
      put("depth", Value::integer(depth + 1));
      put("depth0", Value::integer(depth));
      put("previtem", i > 0 ? items[static_cast<size_t>(i - 1)]
                            : Value::undefined("there is no previous item"));
      put("nextitem", i + 1 < len ? items[static_cast<size_t>(i + 1)]
                                  : Value::undefined("there is no next item"));
      put("cycle", Value::callable("cycle", [i](Interpreter&, const CallArgs& a) {
            if (a.args.empty()) throw_type_error("no items for cycling given");
            return a.args[static_cast<size_t>(i) % a.args.size()];
          }));
      put("changed", Value::callable("changed", [changed_state](Interpreter&, const CallArgs& a) {
            Value now = Value::tuple(a.args);
            bool differs = !changed_state->second || !py_equal(now, changed_state->first);
            changed_state->first = now;
            changed_state->second = true;
            return Value::boolean(differs);
          }));
      if (n.recursive) {
        const Node* node = &n;
        put("__call__", Value::callable("loop", [node, depth](Interpreter& in, const CallArgs& a) {
              if (a.args.size() != 1) throw_type_error("loop() takes exactly one argument");
              DepthScope scope(in.call_depth_, kMaxCallDepth, "nested recursive loop calls");
              std::string inner;
              in.exec_for(*node, a.args[0], depth + 1, inner);
              return Value::string(std::move(inner));
            }));
      }
      f->vars["loop"] = Value::ns(std::move(loop));
    }
    FrameSwap swap(frame_, f);
    Flow flow = exec_body(n.body, out);
    if (flow == Flow::kBreak) break;
  }
}

}  // namespace inkling::jinja
