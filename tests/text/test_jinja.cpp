// Jinja engine unit tests: syntax errors with line/column, load-time checks, runtime errors,
// limits (recursion, nesting, size, steps), Python float/JSON printing and odd inputs.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "text/jinja/jinja.h"

namespace inkling::jinja {
namespace {

std::string render(const std::string& src, const std::string& vars_json = "{}") {
  Result<Template> t = Template::parse(src);
  if (!t.ok()) return "PARSE: " + t.status().message();
  Result<std::string> r = t->render_json(nlohmann::ordered_json::parse(vars_json));
  return r.ok() ? r.value() : "ERROR: " + r.status().message();
}

std::string parse_error(const std::string& src) {
  Result<Template> t = Template::parse(src);
  return t.ok() ? "" : t.status().message();
}

TEST(JinjaSyntax, ErrorsCarryLineAndColumn) {
  EXPECT_EQ(parse_error("ok\n  {{ 1 + }}"),
            "[template] line 2, column 10: unexpected 'end of print statement'");
  EXPECT_EQ(parse_error("{% if x %}\n{% endfor %}"),
            "[template] line 2, column 4: Encountered unknown tag 'endfor'. Jinja was looking for "
            "the following tags: 'elif' or 'else' or 'endif'. The innermost block that needs to be "
            "closed is 'if'.");
  EXPECT_EQ(parse_error("{% for x in y %}\nbody"),
            "[template] line 2, column 5: Unexpected end of template. Jinja was looking for the "
            "following tags: 'endfor' or 'else'. The innermost block that needs to be closed is "
            "'for'.");
  EXPECT_EQ(parse_error("{% frobnicate %}"),
            "[template] line 1, column 4: Encountered unknown tag 'frobnicate'.");
  EXPECT_EQ(parse_error("a\nb {{ x $ y }}"),
            "[template] line 2, column 8: unexpected char '$' at 9");
  EXPECT_EQ(parse_error("{# never closed"),
            "[template] line 1, column 1: Missing end of comment tag");
  EXPECT_EQ(parse_error("{{ (1 ]] }}"),
            "[template] line 1, column 7: unexpected ']', expected ')'");
  EXPECT_EQ(parse_error("{{ }}"),
            "[template] line 1, column 4: Expected an expression, got 'end of print statement'");
  EXPECT_EQ(parse_error("{% break %}"), "[template] line 1, column 4: 'break' outside loop");
  EXPECT_EQ(parse_error("{% include 'x' %}")
                .rfind("[template] line 1, column 4: 'include' is not supported", 0),
            0u);
  EXPECT_EQ(parse_error("{% set 1 = 2 %}"), "[template] line 1, column 8: can't assign to 'const'");
  EXPECT_EQ(
      parse_error("{{ 'unterminated }}").rfind("[template] line 1, column 4: unexpected char", 0),
      0u);
  EXPECT_EQ(parse_error("{% raw %}no end"),
            "[template] line 1, column 10: Missing end of raw directive");
}

TEST(JinjaSyntax, UnknownFilterOrTestFailsAtLoad) {
  EXPECT_EQ(parse_error("\n {{ x | nope }}"),
            "[template] line 2, column 9: No filter named 'nope'.");
  EXPECT_EQ(parse_error("{{ x is nope }}"), "[template] line 1, column 6: No test named 'nope'.");
  // Inside an `if`, Jinja2 only fails when the filter actually runs.
  EXPECT_EQ(render("{% if false %}{{ x|nope }}{% endif %}ok"), "ok");
  EXPECT_EQ(render("{% if true %}{{ x|nope }}{% endif %}"),
            "ERROR: [template] line 1: No filter named 'nope' found.");
}

TEST(JinjaRuntime, RaiseExceptionIsExact) {
  EXPECT_EQ(render("{{ raise_exception('bad: ' ~ n) }}", R"({"n": 1.5})"), "ERROR: bad: 1.5");
}

TEST(JinjaRuntime, UndefinedFollowsJinja2) {
  EXPECT_EQ(render("[{{ x }}][{{ x is defined }}][{{ d.y }}]", R"({"d": {}})"), "[][False][]");
  EXPECT_EQ(render("line 1\n{{ d.y.z }}", R"({"d": {}})"),
            "ERROR: [template] line 2: 'dict object' has no attribute 'y'");
  EXPECT_EQ(render("{{ x.y }}"), "ERROR: [template] line 1: 'x' is undefined");
  EXPECT_EQ(render("{{ x + 1 }}"), "ERROR: [template] line 1: 'x' is undefined");
}

TEST(JinjaLimits, InfiniteMacroRecursionIsAnError) {
  std::string r = render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_NE(r.find("maximum recursion depth exceeded"), std::string::npos) << r;
  r = render(
      "{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}{% endmacro %}{{ a() }}");
  EXPECT_NE(r.find("maximum recursion depth exceeded"), std::string::npos) << r;
}

TEST(JinjaLimits, DeepExpressionNestingIsAnError) {
  std::string src = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  EXPECT_NE(parse_error(src).find("template nesting exceeds"), std::string::npos);
  src = "{{ " + std::string(3000, '[') + std::string(3000, ']') + " }}";
  EXPECT_NE(parse_error(src).find("template nesting exceeds"), std::string::npos);
  std::string nested_ifs;
  for (int i = 0; i < 1000; ++i) nested_ifs += "{% if true %}";
  EXPECT_NE(parse_error(nested_ifs).find("template nesting exceeds"), std::string::npos);
  src = "{{ " + std::string(5000, '-') + "1 }}";
  EXPECT_NE(parse_error(src).find("template nesting exceeds"), std::string::npos);
  src = "{{ x" + std::string(5000, '|').insert(0, "") + " }}";
  EXPECT_FALSE(parse_error(src).empty());
}

// Found while fuzzing (tests/fuzz/regressions/jinja/stack-*): chains the parser builds in a
// loop nested the tree without limit, and every later walk (checks, rendering) overflowed the
// stack; they now count towards the nesting limit like parentheses do.
TEST(JinjaLimits, LongOperatorFilterAndAttributeChainsAreErrors) {
  const std::string kMsg = "template nesting exceeds 200 levels";
  std::string plus = "{{ 1", attr = "{{ x", filt = "{{ x", ors = "{{ x", call = "{{ f";
  for (int i = 0; i < 20000; ++i) {
    plus += " + 1";
    attr += ".a";
    filt += "|e";
    ors += " or x";
    call += "()";
  }
  for (const std::string& src : {plus, attr, filt, ors, call})
    EXPECT_NE(parse_error(src + " }}").find(kMsg), std::string::npos) << src.substr(0, 20);
  // Chains within the limit still work.
  std::string ok = "{{ 1";
  for (int i = 0; i < 150; ++i) ok += " + 1";
  EXPECT_EQ(render(ok + " }}"), "151");
}

TEST(JinjaLimits, StackedNestingKindsAreBoundedToo) {
  // Each level: parentheses around a 40-link chain whose first operand is the level inside.
  // The parser sees at most ~160 levels at a time, but the tree is levels x 43 deep.
  auto nested = [](int levels) {
    std::string src = "x";
    for (int i = 0; i < levels; ++i) {
      std::string chain = "(" + src;
      for (int k = 0; k < 40; ++k) chain += " + x";
      src = chain + ")";
    }
    return "{{ " + src + " }}";
  };
  EXPECT_EQ(parse_error(nested(10)), "");
  EXPECT_EQ(parse_error(nested(40)), "[template] template nesting exceeds 800 levels");
}

TEST(JinjaLimits, InfiniteRecursiveLoopIsAnError) {
  // Found while fuzzing (regressions/jinja/stack-recursive-loop): loop() recursed unbounded.
  std::string r = render("{% for x in [1] recursive %}{{ loop([x]) }}{% endfor %}");
  EXPECT_NE(r.find("maximum recursion depth exceeded (200 nested recursive loop calls)"),
            std::string::npos)
      << r;
  EXPECT_EQ(render("{% for x in t recursive %}{{ x.n }}{{ loop(x.c) }}{% endfor %}",
                   R"({"t": [{"n": 1, "c": [{"n": 2, "c": []}]}]})"),
            "12");
}

TEST(JinjaLimits, HugePaddingWidthIsAnError) {
  // Found by fuzz_jinja (regressions/jinja/timeout-ljust-huge-width): a 9e9 width padded one
  // character at a time (a timeout, then 9 GB).
  for (const char* src : {"{{ 'x'.ljust(9292536060, '.') }}", "{{ 'x'.center(9292536060) }}",
                          "{{ 'x'.rjust(9292536060) }}", "{{ '4'.zfill(9292536060) }}",
                          "{{ '{:9292536060}'.format(1) }}"}) {
    std::string r = render(src);
    EXPECT_NE(r.find("padded string too large"), std::string::npos) << src << " -> " << r;
  }
  EXPECT_EQ(render("{{ 'x'.ljust(3, '.') }}|{{ '4'.zfill(3) }}|{{ 'ab'.center(6, '*') }}"),
            "x..|004|**ab**");
}

TEST(JinjaRuntime, SliceInsideATupleSubscriptIsAnError) {
  // Found by fuzz_jinja (regressions/jinja/ubsan-slice-in-tuple-subscript): the slice node of
  // x[1, :] has no object and evaluating it dereferenced null.
  const std::string msg =
      "ERROR: [template] line 1: slice syntax is only supported as the whole subscript";
  EXPECT_EQ(render("{{ 0[{'n': 2}, 1, :]|sort }}"), msg);
  EXPECT_EQ(render("{{ x[1, :] }}", R"({"x": [1, 2]})"), msg);
  EXPECT_EQ(render("{{ x[1:] }}|{{ x[::-1] }}", R"({"x": [1, 2]})"), "[2]|[2, 1]");
}

TEST(JinjaLimits, DeepValuesAndCyclesAreErrors) {
  std::string r = render(
      "{% set ns = namespace(x=[]) %}{% for i in range(2000) %}{% set ns.x = [ns.x] %}"
      "{% endfor %}{{ ns.x|length }}");
  EXPECT_NE(r.find("value nesting exceeds"), std::string::npos) << r;
  r = render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}");
  EXPECT_NE(r.find("maximum recursion depth"), std::string::npos) << r;
  r = render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns|tojson }}");
  EXPECT_EQ(r,
            "ERROR: [template] line 1: Object of type TemplateNamespace is not JSON serializable");
}

TEST(JinjaLimits, HugeOutputAndRunawayLoopsAreErrors) {
  std::string r = render("{{ 'x' * 1000000000 }}");
  EXPECT_NE(r.find("too large"), std::string::npos) << r;
  Result<Template> t = Template::parse(
      "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}");
  ASSERT_TRUE(t.ok());
  Result<std::string> run = t->render_json(nlohmann::ordered_json::object(), 1'000'000);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("execution steps"), std::string::npos)
      << run.status().message();
  r = render("{{ 2 ** 100 }}");
  EXPECT_NE(r.find("integer overflow"), std::string::npos) << r;
}

TEST(JinjaValues, PythonFloatRepr) {
  const std::pair<double, const char*> cases[] = {
      {1.0, "1.0"},
      {0.1, "0.1"},
      {1e-05, "1e-05"},
      {1e16, "1e+16"},
      {1e15, "1000000000000000.0"},
      {0.0001, "0.0001"},
      {-0.0, "-0.0"},
      {1.5e300, "1.5e+300"},
      {0.30000000000000004, "0.30000000000000004"},
      {5e-324, "5e-324"},
      {123.456, "123.456"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {0.99, "0.99"},
      {2.5e-5, "2.5e-05"}};
  for (const auto& [v, want] : cases) EXPECT_EQ(py_float_repr(v), want);
}

TEST(JinjaValues, JsonKeepsIntFloatAndKeyOrder) {
  EXPECT_EQ(render("{{ x|tojson }}", R"({"x": {"b": 1.0, "a": 1, "c": 1e2, "d": -0.0}})"),
            R"({"b": 1.0, "a": 1, "c": 100.0, "d": -0.0})");
  EXPECT_EQ(render("{{ x|tojson }}", R"({"x": [9223372036854775807, -9223372036854775808]})"),
            "[9223372036854775807, -9223372036854775808]");
}

TEST(JinjaValues, StrftimeNow) {
  std::string year = render("{{ strftime_now('%Y') }}");
  ASSERT_EQ(year.size(), 4u);
  EXPECT_TRUE(year[0] == '2');
}

TEST(JinjaRobustness, OddInputsNeverCrash) {
  EXPECT_EQ(render("{{ s }}|{{ s|length }}|{{ s|upper }}", R"({"s": "\u00e9\u00e9"})"), "éé|2|ÉÉ");
  std::string invalid_utf8 = "bad \xff\xfe bytes {{ 1 }}";
  EXPECT_EQ(render(invalid_utf8), "bad \xff\xfe bytes 1");
  Result<Template> t = Template::parse("{{ x }}");
  ASSERT_TRUE(t.ok());
  Result<std::string> r = t->render_json(nlohmann::ordered_json::array());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "[template] variables must be a JSON object");
  EXPECT_EQ(render("{{ ''[0] }}|{{ [][-1] }}|{{ {}[none] }}|{{ 'abc'[1.5] }}"), "|||");
  EXPECT_EQ(render("{{ [1,2,3][-100:100] }}{{ 'abc'[::-100] }}"), "[1, 2, 3]c");
  EXPECT_EQ(render("{% for a, b in x %}{% endfor %}", R"({"x": [1]})"),
            "ERROR: [template] line 1: 'int' object is not iterable");
}

}  // namespace
}  // namespace inkling::jinja

namespace inkling::jinja {
namespace {

// Truncations and byte mutations of the real template: any result is fine, crashing is not.
TEST(JinjaRobustness, MutatedTemplatesNeverCrash) {
  std::ifstream f(INKLING_SOURCE_DIR "/tests/data/inkling/chat_template.jinja");
  ASSERT_TRUE(f);
  std::string src((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto vars = nlohmann::ordered_json::parse(
      R"({"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":{"x":1}}}]},{"role":"tool","tool_call_id":"a","content":"r"}],"tools":[{"function":{"name":"f"}}],"add_generation_prompt":true})");
  std::mt19937 rng(1234);
  const std::string alphabet = "{}%#-+()[]|.,:'\"~=<>! \nabcxyz019_";
  int parsed = 0;
  for (int iter = 0; iter < 600; ++iter) {
    std::string m = src;
    if (iter % 3 == 0) m.resize(rng() % m.size());
    for (int k = 0, n = 1 + static_cast<int>(rng() % 4); k < n; ++k)
      m[rng() % m.size()] = alphabet[rng() % alphabet.size()];
    Result<Template> t = Template::parse(m);
    if (!t.ok()) {
      EXPECT_EQ(t.status().message().rfind("[template] line ", 0), 0u) << t.status().message();
      continue;
    }
    ++parsed;
    (void)t->render_json(vars, 1'000'000);
  }
  EXPECT_GT(parsed, 0);
}

}  // namespace
}  // namespace inkling::jinja
