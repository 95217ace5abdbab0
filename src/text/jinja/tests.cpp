// Tests (`x is name`): Jinja2's builtin tests with their Python semantics, including the
// sandbox's view of Undefined (a sequence, iterable and callable, never defined).
#include <string>
#include <unordered_map>

#include "text/jinja/error.h"
#include "text/jinja/interpreter.h"
#include "text/jinja/strutil.h"

namespace inkling::jinja {
namespace {

using Test = bool (*)(Interpreter&, const Value&, const CallArgs&);

#define TEST(name) bool name(Interpreter& in, const Value& v, const CallArgs& a)
#define NOARGS \
  (void)in;    \
  (void)a

const Value& arg0(const CallArgs& a, const char* test) {
  if (a.args.empty() && a.kwargs.empty())
    throw_type_error(std::string(test) + "() missing 1 required positional argument");
  return a.args.empty() ? a.kwargs[0].second : a.args[0];
}

TEST(t_defined) {
  NOARGS;
  return !v.is_undefined();
}
TEST(t_undefined) {
  NOARGS;
  return v.is_undefined();
}
TEST(t_none) {
  NOARGS;
  return v.is_none();
}
TEST(t_boolean) {
  NOARGS;
  return v.is_bool();
}
TEST(t_true) {
  NOARGS;
  return v.is_bool() && v.as_bool();
}
TEST(t_false) {
  NOARGS;
  return v.is_bool() && !v.as_bool();
}
TEST(t_integer) {
  NOARGS;
  return v.is_int();
}
TEST(t_float) {
  NOARGS;
  return v.is_float();
}
TEST(t_number) {
  NOARGS;
  return v.is_number();
}
TEST(t_string) {
  NOARGS;
  return v.is_string();
}
TEST(t_mapping) {
  NOARGS;
  return v.is_mapping();
}
TEST(t_sequence) {
  NOARGS;
  return v.is_string() || v.is_sequence() || v.is_mapping() || v.is_undefined();
}
TEST(t_iterable) {
  NOARGS;
  return v.is_string() || v.is_sequence() || v.is_mapping() || v.is_undefined();
}
TEST(t_callable) {
  NOARGS;
  return v.is_callable() || v.is_undefined() ||
         (v.kind() == Kind::kNamespace && v.dict().find(std::string_view("__call__")));
}
TEST(t_escaped) {
  NOARGS;
  (void)v;
  return false;
}
TEST(t_lower) {
  NOARGS;
  std::string s = py_str(v);
  return str_lower(s) == s && str_upper(s) != s;
}
TEST(t_upper) {
  NOARGS;
  std::string s = py_str(v);
  return str_upper(s) == s && str_lower(s) != s;
}
TEST(t_odd) {
  NOARGS;
  if (!v.is_int() && !v.is_bool()) throw_type_error("odd test requires an integer");
  return (v.as_int() % 2) != 0;
}
TEST(t_even) {
  NOARGS;
  if (!v.is_int() && !v.is_bool()) throw_type_error("even test requires an integer");
  return (v.as_int() % 2) == 0;
}
TEST(t_divisibleby) {
  (void)in;
  Value r = binary_op("%", v, arg0(a, "divisibleby"));
  return r.as_double() == 0.0;
}
TEST(t_eq) {
  (void)in;
  return py_equal(v, arg0(a, "eq"));
}
TEST(t_ne) {
  (void)in;
  return !py_equal(v, arg0(a, "ne"));
}
TEST(t_lt) {
  (void)in;
  return py_less(v, arg0(a, "lt"));
}
TEST(t_gt) {
  (void)in;
  return py_less(arg0(a, "gt"), v);
}
TEST(t_le) {
  (void)in;
  return py_less(v, arg0(a, "le")) || py_equal(v, arg0(a, "le"));
}
TEST(t_ge) {
  (void)in;
  return py_less(arg0(a, "ge"), v) || py_equal(v, arg0(a, "ge"));
}
TEST(t_in) {
  (void)in;
  return py_contains(arg0(a, "in"), v);
}
TEST(t_sameas) {
  (void)in;
  const Value& o = arg0(a, "sameas");
  if (v.kind() != o.kind()) return false;
  if (v.identity()) return v.identity() == o.identity();
  return py_equal(v, o);
}
TEST(t_filter) {
  (void)in;
  (void)a;
  return v.is_string() && has_filter(v.str());
}
bool t_test(Interpreter& in, const Value& v, const CallArgs& a);

const std::unordered_map<std::string, Test>& tests() {
  static const std::unordered_map<std::string, Test> kTests = {
      {"defined", t_defined},
      {"undefined", t_undefined},
      {"none", t_none},
      {"boolean", t_boolean},
      {"true", t_true},
      {"false", t_false},
      {"integer", t_integer},
      {"float", t_float},
      {"number", t_number},
      {"string", t_string},
      {"mapping", t_mapping},
      {"sequence", t_sequence},
      {"iterable", t_iterable},
      {"callable", t_callable},
      {"escaped", t_escaped},
      {"lower", t_lower},
      {"upper", t_upper},
      {"odd", t_odd},
      {"even", t_even},
      {"divisibleby", t_divisibleby},
      {"eq", t_eq},
      {"equalto", t_eq},
      {"==", t_eq},
      {"ne", t_ne},
      {"!=", t_ne},
      {"lt", t_lt},
      {"lessthan", t_lt},
      {"<", t_lt},
      {"gt", t_gt},
      {"greaterthan", t_gt},
      {">", t_gt},
      {"le", t_le},
      {"<=", t_le},
      {"ge", t_ge},
      {">=", t_ge},
      {"in", t_in},
      {"sameas", t_sameas},
      {"filter", t_filter},
      {"test", t_test},
  };
  return kTests;
}

bool t_test(Interpreter& in, const Value& v, const CallArgs& a) {
  (void)in;
  (void)a;
  return v.is_string() && tests().count(v.str());
}

}  // namespace

bool has_test(const std::string& name) {
  return tests().count(name) != 0;
}

bool Interpreter::apply_test(const std::string& name, const Value& v, const CallArgs& args) {
  auto it = tests().find(name);
  if (it == tests().end())
    throw TemplateError(ErrorKind::kRuntime, "No test named '" + name + "' found.");
  return it->second(*this, v, args);
}

}  // namespace inkling::jinja
