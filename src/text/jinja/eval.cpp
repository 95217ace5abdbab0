// Expression evaluation: names, literals, attribute/item access with the sandbox's lookup rules
// and Undefined hints, slices, calls, Python arithmetic and comparisons.
#include <climits>
#include <cmath>

#include "text/jinja/error.h"
#include "text/jinja/interpreter.h"
#include "text/jinja/methods.h"
#include "text/jinja/strutil.h"

namespace inkling::jinja {
namespace {

std::string ns_type_repr() {
  return "transformers.utils.chat_template_utils.TemplateNamespace object";
}

std::string type_repr(const Value& v) {
  return v.kind() == Kind::kNamespace ? ns_type_repr() : object_type_repr(v);
}

Value no_attribute(const Value& obj, const std::string& name) {
  return Value::undefined("'" + type_repr(obj) + "' has no attribute '" + name + "'");
}

Value no_element(const Value& obj, const Value& key) {
  return Value::undefined(type_repr(obj) + " has no element " + py_repr(key));
}

void check_number(const Value& v, const std::string& op, const Value& a, const Value& b) {
  if (!v.is_number())
    throw_type_error("unsupported operand type(s) for " + op + ": '" + py_type_name(a) + "' and '" +
                     py_type_name(b) + "'");
}

void check_overflow(bool overflow) {
  if (overflow) throw TemplateError(ErrorKind::kLimit, "integer overflow");
}

Value repeat(const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    if (static_cast<double>(seq.str().size()) * static_cast<double>(n) >
        static_cast<double>(kMaxOutputBytes))
      throw TemplateError(ErrorKind::kLimit, "string repetition result too large");
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += seq.str();
    return Value::string(std::move(out));
  }
  if (static_cast<double>(seq.items().size()) * static_cast<double>(n) > 1e7)
    throw TemplateError(ErrorKind::kLimit, "sequence repetition result too large");
  std::vector<Value> out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
  return seq.kind() == Kind::kTuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

// CPython's PySlice_AdjustIndices.
std::vector<size_t> slice_indices(int64_t len, const Value& start, const Value& stop,
                                  const Value& stepv) {
  auto to_int = [](const Value& v) -> std::optional<int64_t> {
    if (v.is_none() || v.is_undefined()) return std::nullopt;
    if (!v.is_int() && !v.is_bool())
      throw_type_error("slice indices must be integers or None or have an __index__ method");
    return v.as_int();
  };
  int64_t step = to_int(stepv).value_or(1);
  if (step == 0) throw_type_error("slice step cannot be zero");
  auto s = to_int(start);
  auto e = to_int(stop);
  int64_t lo, hi;
  if (!s)
    lo = step < 0 ? len - 1 : 0;
  else {
    lo = *s;
    if (lo < 0) {
      lo += len;
      if (lo < 0) lo = step < 0 ? -1 : 0;
    } else if (lo >= len) {
      lo = step < 0 ? len - 1 : len;
    }
  }
  if (!e)
    hi = step < 0 ? -1 : len;
  else {
    hi = *e;
    if (hi < 0) {
      hi += len;
      if (hi < 0) hi = step < 0 ? -1 : 0;
    } else if (hi >= len) {
      hi = step < 0 ? len - 1 : len;
    }
  }
  std::vector<size_t> idx;
  if (step > 0)
    for (int64_t i = lo; i < hi; i += step) idx.push_back(static_cast<size_t>(i));
  else
    for (int64_t i = lo; i > hi; i += step) idx.push_back(static_cast<size_t>(i));
  return idx;
}

}  // namespace

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  const bool nums = a.is_number() && b.is_number();
  const bool ints = nums && !a.is_float() && !b.is_float();
  if (op == "+") {
    if (ints) {
      int64_t r = 0;
      check_overflow(__builtin_add_overflow(a.as_int(), b.as_int(), &r));
      return Value::integer(r);
    }
    if (nums) return Value::number(a.as_double() + b.as_double());
    if (a.is_string() && b.is_string()) return Value::string(a.str() + b.str());
    if (a.kind() == b.kind() && a.is_sequence()) {
      std::vector<Value> out = a.items();
      out.insert(out.end(), b.items().begin(), b.items().end());
      return a.kind() == Kind::kTuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
    }
    if (a.is_string() || a.is_sequence())
      throw_type_error("can only concatenate " + py_type_name(a) + " (not \"" + py_type_name(b) +
                       "\") to " + py_type_name(a));
    check_number(a, "+", a, b);
    check_number(b, "+", a, b);
  }
  if (op == "*") {
    if (ints) {
      int64_t r = 0;
      check_overflow(__builtin_mul_overflow(a.as_int(), b.as_int(), &r));
      return Value::integer(r);
    }
    if (nums) return Value::number(a.as_double() * b.as_double());
    if ((a.is_string() || a.is_sequence()) && (b.is_int() || b.is_bool()))
      return repeat(a, b.as_int());
    if ((b.is_string() || b.is_sequence()) && (a.is_int() || a.is_bool()))
      return repeat(b, a.as_int());
    if (a.is_string() || a.is_sequence() || b.is_string() || b.is_sequence())
      throw_type_error("can't multiply sequence by non-int of type '" +
                       py_type_name(a.is_string() || a.is_sequence() ? b : a) + "'");
  }
  if (op == "%" && a.is_string()) {
    throw TemplateError(ErrorKind::kRuntime, "internal: % on strings is handled by eval");
  }
  check_number(a, op, a, b);
  check_number(b, op, a, b);
  if (op == "-") {
    if (ints) {
      int64_t r = 0;
      check_overflow(__builtin_sub_overflow(a.as_int(), b.as_int(), &r));
      return Value::integer(r);
    }
    return Value::number(a.as_double() - b.as_double());
  }
  if (op == "/") {
    if (b.as_double() == 0.0)
      throw_type_error(ints ? "division by zero" : "float division by zero");
    return Value::number(a.as_double() / b.as_double());
  }
  if (op == "//" || op == "%") {
    if (ints) {
      int64_t x = a.as_int(), y = b.as_int();
      if (y == 0) throw_type_error("integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) throw TemplateError(ErrorKind::kLimit, "integer overflow");
      int64_t q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) {
        --q;
        r += y;
      }
      return Value::integer(op == "//" ? q : r);
    }
    double x = a.as_double(), y = b.as_double();
    if (y == 0.0) throw_type_error(op == "//" ? "float floor division by zero" : "float modulo");
    // CPython float_divmod.
    double mod = std::fmod(x, y);
    double div = (x - mod) / y;
    if (mod != 0.0) {
      if ((y < 0) != (mod < 0)) {
        mod += y;
        div -= 1.0;
      }
    } else {
      mod = std::copysign(0.0, y);
    }
    double floordiv;
    if (div != 0.0) {
      floordiv = std::floor(div);
      if (div - floordiv > 0.5) floordiv += 1.0;
    } else {
      floordiv = std::copysign(0.0, x / y);
    }
    return Value::number(op == "%" ? mod : floordiv);
  }
  if (op == "**") {
    if (ints && b.as_int() >= 0) {
      int64_t base = a.as_int(), e = b.as_int(), r = 1;
      while (e > 0) {
        if (e & 1) check_overflow(__builtin_mul_overflow(r, base, &r));
        e >>= 1;
        if (e) check_overflow(__builtin_mul_overflow(base, base, &base));
      }
      return Value::integer(r);
    }
    if (a.as_double() == 0.0 && b.as_double() < 0)
      throw_type_error("0.0 cannot be raised to a negative power");
    return Value::number(std::pow(a.as_double(), b.as_double()));
  }
  throw TemplateError(ErrorKind::kRuntime, "unknown operator " + op);
}

Value Interpreter::getattr(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Kind::kUndefined:
      fail_undefined(obj);
    case Kind::kDict: {
      if (auto m = bound_method(obj, name)) return *m;
      if (const Value* v = obj.dict().find(std::string_view(name))) return *v;
      return no_attribute(obj, name);
    }
    case Kind::kNamespace: {
      if (const Value* v = obj.dict().find(std::string_view(name))) return *v;
      return no_attribute(obj, name);
    }
    default:
      if (auto m = bound_method(obj, name)) return *m;
      return no_attribute(obj, name);
  }
}

Value Interpreter::getitem(const Value& obj, const Value& key) {
  switch (obj.kind()) {
    case Kind::kUndefined:
      fail_undefined(obj);
    case Kind::kDict: {
      if (key.kind() == Kind::kList || key.kind() == Kind::kDict) return no_element(obj, key);
      if (const Value* v = obj.dict().find(key)) return *v;
      if (key.is_string()) {
        if (auto m = bound_method(obj, key.str())) return *m;
        return no_attribute(obj, key.str());
      }
      return no_element(obj, key);
    }
    case Kind::kList:
    case Kind::kTuple:
    case Kind::kString: {
      if (key.is_int() || key.is_bool()) {
        int64_t i = key.as_int();
        if (obj.is_string()) {
          std::vector<char32_t> cps = utf8_decode(obj.str());
          int64_t n = static_cast<int64_t>(cps.size());
          if (i < 0) i += n;
          if (i < 0 || i >= n) return no_element(obj, key);
          std::string s;
          utf8_append(s, cps[static_cast<size_t>(i)]);
          return Value::string(std::move(s));
        }
        int64_t n = static_cast<int64_t>(obj.items().size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) return no_element(obj, key);
        return obj.items()[static_cast<size_t>(i)];
      }
      if (key.is_string()) return getattr(obj, key.str());
      return no_element(obj, key);
    }
    default:
      if (key.is_string()) return getattr(obj, key.str());
      return no_element(obj, key);
  }
}

Value Interpreter::call(const Value& fn, const CallArgs& args) {
  if (fn.is_callable()) return fn.fn().fn(*this, args);
  if (fn.is_undefined()) fail_undefined(fn);
  if (fn.kind() == Kind::kNamespace)
    if (const Value* c = fn.dict().find(std::string_view("__call__"))) return call(*c, args);
  throw_type_error("'" + py_type_name(fn) + "' object is not callable");
}

std::vector<Value> Interpreter::iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::kList:
    case Kind::kTuple:
      return v.items();
    case Kind::kDict: {
      std::vector<Value> keys;
      for (const auto& [k, val] : v.dict().items()) keys.push_back(k);
      return keys;
    }
    case Kind::kString: {
      std::vector<Value> out;
      for (char32_t c : utf8_decode(v.str())) {
        std::string s;
        utf8_append(s, c);
        out.push_back(Value::string(std::move(s)));
      }
      return out;
    }
    case Kind::kUndefined:
      return {};
    default:
      throw_type_error("'" + py_type_name(v) + "' object is not iterable");
  }
}

CallArgs Interpreter::eval_args(const Node& n) {
  CallArgs args;
  for (const auto& a : n.items) args.args.push_back(eval(*a));
  for (const auto& [k, v] : n.kwargs) args.kwargs.emplace_back(k, eval(*v));
  if (n.dyn_args)
    for (Value& v : iterate(eval(*n.dyn_args))) args.args.push_back(std::move(v));
  if (n.dyn_kwargs) {
    Value d = eval(*n.dyn_kwargs);
    if (!d.is_mapping()) throw_type_error("argument after ** must be a mapping");
    for (const auto& [k, v] : d.dict().items()) {
      if (!k.is_string()) throw_type_error("keywords must be strings");
      args.kwargs.emplace_back(k.str(), v);
    }
  }
  return args;
}

Value Interpreter::eval_filter(const Node& n, const Value* block_input) {
  Value input = n.a ? (n.a->kind == NodeKind::kFilter ? eval_filter(*n.a, block_input) : eval(*n.a))
                    : *block_input;
  return apply_filter(n.name, input, eval_args(n));
}

Value Interpreter::eval_compare(const Node& n) {
  Value left = eval(*n.a);
  for (const auto& [op, expr] : n.kwargs) {
    Value right = eval(*expr);
    bool r;
    if (op == "==")
      r = py_equal(left, right);
    else if (op == "!=")
      r = !py_equal(left, right);
    else if (op == "in")
      r = py_contains(right, left);
    else if (op == "notin")
      r = !py_contains(right, left);
    else {
      if (left.is_undefined()) fail_undefined(left);
      if (right.is_undefined()) fail_undefined(right);
      auto less = [&](const Value& x, const Value& y, const char* sym) -> bool {
        try {
          return py_less(x, y);
        } catch (const TemplateError&) {
          throw_type_error(std::string("'") + sym + "' not supported between instances of '" +
                           py_type_name(left) + "' and '" + py_type_name(right) + "'");
        }
      };
      if (op == "<")
        r = less(left, right, "<");
      else if (op == ">")
        r = less(right, left, ">");
      else if (op == "<=")
        r = less(left, right, "<=") || py_equal(left, right);
      else
        r = less(right, left, ">=") || py_equal(left, right);
    }
    if (!r) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

Value Interpreter::eval(const Node& n) {
  switch (n.kind) {
    case NodeKind::kConst:
      return n.value;
    case NodeKind::kName:
      return lookup(n.name);
    case NodeKind::kList:
    case NodeKind::kTuple: {
      std::vector<Value> items;
      items.reserve(n.items.size());
      for (const auto& e : n.items) items.push_back(eval(*e));
      return n.kind == NodeKind::kList ? Value::list(std::move(items))
                                       : Value::tuple(std::move(items));
    }
    case NodeKind::kDict: {
      Dict d;
      for (size_t i = 0; i + 1 < n.items.size(); i += 2) {
        Value k = eval(*n.items[i]);
        if (k.kind() == Kind::kList || k.kind() == Kind::kDict)
          throw_type_error("unhashable type: '" + py_type_name(k) + "'");
        d.set(k, eval(*n.items[i + 1]));
      }
      return Value::dict(std::move(d));
    }
    case NodeKind::kGetattr:
      return getattr(eval(*n.a), n.name);
    case NodeKind::kGetitem:
      return getitem(eval(*n.a), eval(*n.b));
    case NodeKind::kSlice: {
      // x[1, :] parses a slice inside a tuple key (Jinja2 would build a slice object there).
      if (!n.a) throw_type_error("slice syntax is only supported as the whole subscript");
      Value obj = eval(*n.a);
      if (obj.is_undefined()) fail_undefined(obj);
      Value start = n.b ? eval(*n.b) : Value::none();
      Value stop = n.c ? eval(*n.c) : Value::none();
      Value stepv = n.d ? eval(*n.d) : Value::none();
      if (obj.is_string()) {
        std::vector<char32_t> cps = utf8_decode(obj.str());
        std::string out;
        for (size_t i : slice_indices(static_cast<int64_t>(cps.size()), start, stop, stepv))
          utf8_append(out, cps[i]);
        return Value::string(std::move(out));
      }
      if (obj.is_sequence()) {
        std::vector<Value> out;
        for (size_t i : slice_indices(static_cast<int64_t>(obj.items().size()), start, stop, stepv))
          out.push_back(obj.items()[i]);
        return obj.kind() == Kind::kTuple ? Value::tuple(std::move(out))
                                          : Value::list(std::move(out));
      }
      return Value::undefined(type_repr(obj) + " has no element slice(" + py_repr(start) + ", " +
                              py_repr(stop) + ", " + py_repr(stepv) + ")");
    }
    case NodeKind::kCall:
      return call(eval(*n.a), eval_args(n));
    case NodeKind::kFilter:
      return eval_filter(n, nullptr);
    case NodeKind::kTest:
      return Value::boolean(apply_test(n.name, eval(*n.a), eval_args(n)));
    case NodeKind::kUnary: {
      Value v = eval(*n.a);
      if (n.name == "not") return Value::boolean(!v.truthy());
      if (v.is_undefined()) fail_undefined(v);
      if (!v.is_number())
        throw_type_error("bad operand type for unary " + n.name + ": '" + py_type_name(v) + "'");
      if (n.name == "+") return v.is_bool() ? Value::integer(v.as_int()) : v;
      if (v.is_float()) return Value::number(-v.as_double());
      if (v.as_int() == INT64_MIN) throw TemplateError(ErrorKind::kLimit, "integer overflow");
      return Value::integer(-v.as_int());
    }
    case NodeKind::kBinary: {
      if (n.name == "and") {
        Value l = eval(*n.a);
        return l.truthy() ? eval(*n.b) : l;
      }
      if (n.name == "or") {
        Value l = eval(*n.a);
        return l.truthy() ? l : eval(*n.b);
      }
      Value l = eval(*n.a);
      Value r = eval(*n.b);
      if (n.name == "%" && l.is_string()) return Value::string(percent_format(*this, l.str(), r));
      return binary_op(n.name, l, r);
    }
    case NodeKind::kConcat: {
      std::string out;
      for (const auto& e : n.items) out += py_str(eval(*e));
      check_size(out.size());
      return Value::string(std::move(out));
    }
    case NodeKind::kCompare:
      return eval_compare(n);
    case NodeKind::kCondExpr: {
      if (eval(*n.a).truthy()) return eval(*n.b);
      if (n.c) return eval(*n.c);
      return Value::undefined("the inline if-expression on line " + std::to_string(n.line) +
                              " evaluated to false and no else section was defined.");
    }
    default:
      throw TemplateError(ErrorKind::kRuntime, "unexpected node in expression position");
  }
}

}  // namespace inkling::jinja
