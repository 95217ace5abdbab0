// Filters: Jinja2's builtin filters with their Python semantics, plus transformers' tojson
// (json.dumps with ensure_ascii/indent/separators/sort_keys). Tests are in tests.cpp.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <unordered_map>

#include "text/jinja/error.h"
#include "text/jinja/interpreter.h"
#include "text/jinja/json.h"
#include "text/jinja/methods.h"
#include "text/jinja/strutil.h"

namespace inkling::jinja {
namespace {

using Filter = Value (*)(Interpreter&, const Value&, const CallArgs&);

bool arg_bool(const CallArgs& a, size_t pos, const char* name, bool def) {
  const Value* v = a.get(pos, name);
  return v ? v->truthy() : def;
}

// Python float(str): strips whitespace, allows '_' between digits, inf/nan spellings.
std::optional<double> parse_py_float(const std::string& raw) {
  std::string s = str_strip(raw, nullptr, true, true);
  std::string t;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      bool ok = i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
                std::isdigit(static_cast<unsigned char>(s[i + 1]));
      if (!ok) return std::nullopt;
      continue;
    }
    t += s[i];
  }
  if (t.empty()) return std::nullopt;
  std::string low = str_lower(t);
  size_t sgn = (low[0] == '+' || low[0] == '-') ? 1 : 0;
  std::string body = low.substr(sgn);
  if (body == "inf" || body == "infinity" || body == "nan") {
    double v = body == "nan" ? NAN : INFINITY;
    return low[0] == '-' ? -v : v;
  }
  // digits [. digits] [e [sign] digits], at least one digit in the mantissa
  size_t i = 0, digits = 0;
  while (i < body.size() && std::isdigit(static_cast<unsigned char>(body[i]))) ++i, ++digits;
  if (i < body.size() && body[i] == '.') {
    ++i;
    while (i < body.size() && std::isdigit(static_cast<unsigned char>(body[i]))) ++i, ++digits;
  }
  if (!digits) return std::nullopt;
  if (i < body.size() && body[i] == 'e') {
    ++i;
    if (i < body.size() && (body[i] == '+' || body[i] == '-')) ++i;
    size_t ed = 0;
    while (i < body.size() && std::isdigit(static_cast<unsigned char>(body[i]))) ++i, ++ed;
    if (!ed) return std::nullopt;
  }
  if (i != body.size()) return std::nullopt;
  return std::strtod(t.c_str(), nullptr);
}

std::optional<int64_t> parse_py_int(const std::string& raw, int base) {
  std::string s = str_strip(raw, nullptr, true, true);
  std::string t;
  for (char c : s)
    if (c != '_') t += c;
  if (t.empty() || s.find("__") != std::string::npos || s.front() == '_' || s.back() == '_')
    return std::nullopt;
  size_t start = (t[0] == '+' || t[0] == '-') ? 1 : 0;
  if (start == t.size()) return std::nullopt;
  for (size_t i = start; i < t.size(); ++i) {
    char c = static_cast<char>(std::tolower(static_cast<unsigned char>(t[i])));
    int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
            : (c >= 'a' && c <= 'z')                    ? c - 'a' + 10
                                                        : 99;
    if (d >= base) return std::nullopt;
  }
  errno = 0;
  long long v = std::strtoll(t.c_str(), nullptr, base);
  if (errno == ERANGE) return std::nullopt;
  return v;
}

std::optional<double> to_float(const Value& v) {
  if (v.is_number()) return v.as_double();
  if (v.is_string()) return parse_py_float(v.str());
  return std::nullopt;
}

// environment.getitem over a dotted path ("a.b.0"), as Jinja's make_attrgetter does.
Value attr_path(Interpreter& in, const Value& item, const std::string& path) {
  Value cur = item;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    cur = in.getitem(cur, numeric ? Value::integer(std::stoll(part)) : Value::string(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

Value lower_if_str(const Value& v, bool case_sensitive) {
  return (!case_sensitive && v.is_string()) ? Value::string(str_lower(v.str())) : v;
}

std::vector<Value> sorted_values(std::vector<Value> items, const std::vector<Value>& keys,
                                 bool reverse) {
  std::vector<size_t> idx(items.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) {
    return reverse ? py_less(keys[y], keys[x]) : py_less(keys[x], keys[y]);
  });
  std::vector<Value> out;
  for (size_t i : idx) out.push_back(items[i]);
  return out;
}

// Runs a test by name with extra arguments (select/reject/selectattr/rejectattr).
bool run_test(Interpreter& in, const Value& v, const CallArgs& a, size_t first) {
  if (a.args.size() <= first) return v.truthy();
  if (!a.args[first].is_string()) throw_type_error("test name must be a string");
  CallArgs rest;
  rest.args.assign(a.args.begin() + static_cast<long>(first) + 1, a.args.end());
  rest.kwargs = a.kwargs;
  return in.apply_test(a.args[first].str(), v, rest);
}

Value f_select(Interpreter& in, const Value& v, const CallArgs& a, bool attr, bool keep) {
  std::vector<Value> out;
  for (const Value& item : in.iterate(v)) {
    Value probe = item;
    size_t first = 0;
    if (attr) {
      if (a.args.empty() || !a.args[0].is_string())
        throw_type_error("Missing parameter for attribute name");
      probe = attr_path(in, item, a.args[0].str());
      first = 1;
    }
    if (run_test(in, probe, a, first) == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

#define FILTER(name) Value name(Interpreter& in, const Value& v, const CallArgs& a)
#define UNUSED_IN (void)in

FILTER(f_abs) {
  UNUSED_IN;
  (void)a;
  if (v.is_float()) return Value::number(std::fabs(v.as_double()));
  if (v.is_int() || v.is_bool()) return Value::integer(std::llabs(v.as_int()));
  if (v.is_undefined()) fail_undefined(v);
  throw_type_error("bad operand type for abs(): '" + py_type_name(v) + "'");
}
FILTER(f_attr) {
  const Value* name = a.get(0, "name");
  if (!name || !name->is_string()) throw_type_error("attr() requires an attribute name");
  if (v.is_mapping()) {  // attr() never falls back to item lookup
    Value m = in.getattr(Value::dict(Dict()), name->str());
    return m.is_callable()
               ? in.getattr(v, name->str())
               : Value::undefined("'dict object' has no attribute '" + name->str() + "'");
  }
  return in.getattr(v, name->str());
}
FILTER(f_batch) {
  const Value* n = a.get(0, "linecount");
  if (!n || !n->is_int() || n->as_int() <= 0)
    throw_type_error("batch() needs a positive linecount");
  const Value* fill = a.get(1, "fill_with");
  std::vector<Value> out, cur;
  for (const Value& item : in.iterate(v)) {
    cur.push_back(item);
    if (static_cast<int64_t>(cur.size()) == n->as_int()) {
      out.push_back(Value::list(std::move(cur)));
      cur.clear();
    }
  }
  if (!cur.empty()) {
    if (fill && !fill->is_none())
      while (static_cast<int64_t>(cur.size()) < n->as_int()) cur.push_back(*fill);
    out.push_back(Value::list(std::move(cur)));
  }
  return Value::list(std::move(out));
}
FILTER(f_capitalize) {
  UNUSED_IN;
  (void)a;
  return Value::string(str_capitalize(py_str(v)));
}
FILTER(f_center) {
  UNUSED_IN;
  const Value* w = a.get(0, "width");
  int64_t width = w ? w->as_int() : 80;
  std::string s = py_str(v);
  int64_t len = static_cast<int64_t>(utf8_length(s));
  if (width <= len) return Value::string(s);
  int64_t total = width - len, left = total / 2 + (total & width & 1);
  return Value::string(std::string(static_cast<size_t>(left), ' ') + s +
                       std::string(static_cast<size_t>(total - left), ' '));
}
FILTER(f_default) {
  UNUSED_IN;
  const Value* d = a.get(0, "default_value");
  bool boolean = arg_bool(a, 1, "boolean", false);
  if (v.is_undefined() || (boolean && !v.truthy())) return d ? *d : Value::string("");
  return v;
}
FILTER(f_dictsort) {
  if (!v.is_mapping()) throw_type_error("dictsort requires a mapping");
  bool cs = arg_bool(a, 0, "case_sensitive", false);
  const Value* by = a.get(1, "by");
  bool by_value = false;
  if (by) {
    if (!by->is_string() || (by->str() != "key" && by->str() != "value"))
      throw_type_error("You can only sort by either \"key\" or \"value\"");
    by_value = by->str() == "value";
  }
  bool reverse = arg_bool(a, 2, "reverse", false);
  (void)in;
  std::vector<Value> items, keys;
  for (const auto& [k, val] : v.dict().items()) {
    items.push_back(Value::tuple({k, val}));
    keys.push_back(lower_if_str(by_value ? val : k, cs));
  }
  return Value::list(sorted_values(std::move(items), keys, reverse));
}
FILTER(f_escape) {
  UNUSED_IN;
  (void)a;
  std::string out;
  for (char c : py_str(v)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return Value::string(std::move(out));
}
FILTER(f_first) {
  (void)a;
  std::vector<Value> items = in.iterate(v);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}
FILTER(f_last) {
  (void)a;
  std::vector<Value> items = in.iterate(v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}
FILTER(f_float) {
  UNUSED_IN;
  const Value* d = a.get(0, "default");
  if (auto f = to_float(v)) return Value::number(*f);
  return d ? *d : Value::number(0.0);
}
FILTER(f_int) {
  UNUSED_IN;
  const Value* d = a.get(0, "default");
  const Value* b = a.get(1, "base");
  int base = b ? static_cast<int>(b->as_int()) : 10;
  Value def = d ? *d : Value::integer(0);
  if (v.is_int() || v.is_bool()) return Value::integer(v.as_int());
  if (v.is_string())
    if (auto i = parse_py_int(v.str(), base)) return Value::integer(*i);
  if (auto f = to_float(v)) {
    if (std::isnan(*f)) return def;
    if (std::isinf(*f) || std::fabs(*f) > 9.2e18)
      throw TemplateError(ErrorKind::kLimit, "cannot convert float infinity to integer");
    return Value::integer(static_cast<int64_t>(*f));
  }
  return def;
}
FILTER(f_format) {
  (void)in;
  std::string fmt = py_str(v);
  if (!a.kwargs.empty()) {
    Dict d;
    for (const auto& [k, val] : a.kwargs) d.set(Value::string(k), val);
    return Value::string(percent_format(in, fmt, Value::dict(std::move(d))));
  }
  return Value::string(percent_format(in, fmt, Value::tuple(a.args)));
}
FILTER(f_indent) {
  UNUSED_IN;
  const Value* w = a.get(0, "width");
  std::string ind = !w ? "    "
                    : w->is_string()
                        ? w->str()
                        : std::string(static_cast<size_t>(std::max<int64_t>(0, w->as_int())), ' ');
  bool first = arg_bool(a, 1, "first", false), blank = arg_bool(a, 2, "blank", false);
  std::string s = py_str(v) + "\n";
  std::vector<std::string> lines = str_splitlines(s, false);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\n";
    bool add = (i > 0 || first) && (blank || !str_strip(lines[i], nullptr, true, true).empty());
    out += (add ? ind : "") + lines[i];
  }
  return Value::string(std::move(out));
}
FILTER(f_items) {
  (void)a;
  (void)in;
  if (v.is_undefined()) return Value::list({});
  if (!v.is_mapping()) throw_type_error("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, val] : v.dict().items()) out.push_back(Value::tuple({k, val}));
  return Value::list(std::move(out));
}
FILTER(f_join) {
  const Value* d = a.get(0, "d");
  const Value* attr = a.get(1, "attribute");
  std::string sep = d ? py_str(*d) : "";
  std::string out;
  bool firstv = true;
  for (const Value& item : in.iterate(v)) {
    if (!firstv) out += sep;
    firstv = false;
    out += py_str(attr && !attr->is_none() ? attr_path(in, item, py_str(*attr)) : item);
  }
  in.check_size(out.size());
  return Value::string(std::move(out));
}
FILTER(f_length) {
  (void)a;
  (void)in;
  switch (v.kind()) {
    case Kind::kString:
      return Value::integer(static_cast<int64_t>(utf8_length(v.str())));
    case Kind::kList:
    case Kind::kTuple:
      return Value::integer(static_cast<int64_t>(v.items().size()));
    case Kind::kDict:
      return Value::integer(static_cast<int64_t>(v.dict().size()));
    case Kind::kUndefined:
      return Value::integer(0);
    default:
      throw_type_error("object of type '" + py_type_name(v) + "' has no len()");
  }
}
FILTER(f_list) {
  (void)a;
  return Value::list(in.iterate(v));
}
FILTER(f_lower) {
  UNUSED_IN;
  (void)a;
  return Value::string(str_lower(py_str(v)));
}
FILTER(f_upper) {
  UNUSED_IN;
  (void)a;
  return Value::string(str_upper(py_str(v)));
}
FILTER(f_map) {
  std::vector<Value> out;
  const Value* attr = a.get_kw("attribute");
  if (attr) {
    const Value* def = a.get_kw("default");
    for (const Value& item : in.iterate(v)) {
      Value r = attr_path(in, item, py_str(*attr));
      out.push_back(r.is_undefined() && def ? *def : r);
    }
    return Value::list(std::move(out));
  }
  if (a.args.empty() || !a.args[0].is_string()) throw_type_error("map() requires a filter name");
  CallArgs rest;
  rest.args.assign(a.args.begin() + 1, a.args.end());
  rest.kwargs = a.kwargs;
  for (const Value& item : in.iterate(v))
    out.push_back(in.apply_filter(a.args[0].str(), item, rest));
  return Value::list(std::move(out));
}
Value min_max(Interpreter& in, const Value& v, const CallArgs& a, bool want_max) {
  bool cs = arg_bool(a, 0, "case_sensitive", false);
  const Value* attr = a.get(1, "attribute");
  std::vector<Value> items = in.iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  auto key = [&](const Value& x) {
    return lower_if_str(attr && !attr->is_none() ? attr_path(in, x, py_str(*attr)) : x, cs);
  };
  for (size_t i = 1; i < items.size(); ++i) {
    bool better = want_max ? py_less(key(items[best]), key(items[i]))
                           : py_less(key(items[i]), key(items[best]));
    if (better) best = i;
  }
  return items[best];
}
FILTER(f_max) {
  return min_max(in, v, a, true);
}
FILTER(f_min) {
  return min_max(in, v, a, false);
}
FILTER(f_reject) {
  return f_select(in, v, a, false, false);
}
FILTER(f_rejectattr) {
  return f_select(in, v, a, true, false);
}
FILTER(f_select_) {
  return f_select(in, v, a, false, true);
}
FILTER(f_selectattr) {
  return f_select(in, v, a, true, true);
}
FILTER(f_replace) {
  const Value* old = a.get(0, "old");
  const Value* nw = a.get(1, "new");
  const Value* count = a.get(2, "count");
  if (!old || !nw) throw_type_error("replace() missing required arguments");
  std::string r = str_replace(py_str(v), py_str(*old), py_str(*nw),
                              count && !count->is_none() ? count->as_int() : -1);
  in.check_size(r.size());
  return Value::string(std::move(r));
}
FILTER(f_reverse) {
  (void)a;
  if (v.is_string()) {
    std::vector<char32_t> cps = utf8_decode(v.str());
    std::reverse(cps.begin(), cps.end());
    return Value::string(utf8_encode(cps, 0, cps.size()));
  }
  std::vector<Value> items = in.iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}
FILTER(f_round) {
  UNUSED_IN;
  const Value* p = a.get(0, "precision");
  const Value* m = a.get(1, "method");
  int64_t prec = p ? p->as_int() : 0;
  std::string method = m ? py_str(*m) : "common";
  if (method != "common" && method != "ceil" && method != "floor")
    throw_type_error("method must be common, ceil or floor");
  if (!v.is_number())
    throw_type_error("type " + py_type_name(v) + " doesn't define __round__ method");
  if (method == "common") {
    if (!v.is_float()) return Value::integer(v.as_int());
    double x = v.as_double();
    if (!std::isfinite(x)) return v;
    if (prec >= 0 && prec < 300) {
      char buf[512];
      std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(prec), x);
      return Value::number(std::strtod(buf, nullptr));
    }
    double f = std::pow(10.0, static_cast<double>(-prec));
    return Value::number(std::nearbyint(x / f) * f);
  }
  double f = std::pow(10.0, static_cast<double>(prec));
  double x = v.as_double() * f;
  return Value::number((method == "ceil" ? std::ceil(x) : std::floor(x)) / f);
}
FILTER(f_safe) {
  UNUSED_IN;
  (void)a;
  return Value::string(py_str(v));
}
FILTER(f_sort) {
  bool reverse = arg_bool(a, 0, "reverse", false);
  bool cs = arg_bool(a, 1, "case_sensitive", false);
  const Value* attr = a.get(2, "attribute");
  std::vector<Value> items = in.iterate(v), keys;
  for (const Value& x : items)
    keys.push_back(
        lower_if_str(attr && !attr->is_none() ? attr_path(in, x, py_str(*attr)) : x, cs));
  return Value::list(sorted_values(std::move(items), keys, reverse));
}
FILTER(f_string) {
  UNUSED_IN;
  (void)a;
  return Value::string(py_str(v));
}
FILTER(f_sum) {
  const Value* attr = a.get(0, "attribute");
  const Value* start = a.get(1, "start");
  Value total = start ? *start : Value::integer(0);
  for (const Value& x : in.iterate(v))
    total = binary_op("+", total, attr && !attr->is_none() ? attr_path(in, x, py_str(*attr)) : x);
  return total;
}
FILTER(f_title) {
  UNUSED_IN;
  (void)a;
  // Jinja's do_title: capitalize each run that follows [-\s({[<].
  std::string out;
  bool start = true;
  for (char32_t c : utf8_decode(py_str(v))) {
    bool boundary = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py_isspace(c);
    if (boundary) {
      utf8_append(out, c);
      start = true;
      continue;
    }
    utf8_append(out, start ? py_upper(c) : py_lower(c));
    start = false;
  }
  return Value::string(std::move(out));
}
FILTER(f_tojson) {
  UNUSED_IN;
  JsonDumpOptions o;
  o.ensure_ascii = arg_bool(a, 0, "ensure_ascii", false);
  const Value* indent = a.get(1, "indent");
  if (indent && !indent->is_none()) {
    if (indent->is_string())
      o.indent = indent->str();
    else if (indent->is_int() || indent->is_bool())
      o.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, indent->as_int())), ' ');
    else
      throw_type_error("indent must be an int or a string");
    o.item_separator = ",";
  }
  const Value* seps = a.get(2, "separators");
  if (seps && !seps->is_none()) {
    std::vector<Value> parts = in.iterate(*seps);
    if (parts.size() != 2 || !parts[0].is_string() || !parts[1].is_string())
      throw_type_error("separators must be a (item_separator, key_separator) pair of strings");
    o.item_separator = parts[0].str();
    o.key_separator = parts[1].str();
  }
  o.sort_keys = arg_bool(a, 3, "sort_keys", false);
  return Value::string(json_dumps(v, o));
}
FILTER(f_trim) {
  UNUSED_IN;
  const Value* chars = a.get(0, "chars");
  std::string cs = chars && !chars->is_none() ? py_str(*chars) : "";
  return Value::string(
      str_strip(py_str(v), chars && !chars->is_none() ? &cs : nullptr, true, true));
}
FILTER(f_unique) {
  bool cs = arg_bool(a, 0, "case_sensitive", false);
  const Value* attr = a.get(1, "attribute");
  std::vector<Value> out, seen;
  for (const Value& x : in.iterate(v)) {
    Value key = lower_if_str(attr && !attr->is_none() ? attr_path(in, x, py_str(*attr)) : x, cs);
    if (key.kind() == Kind::kList || key.kind() == Kind::kDict)
      throw_type_error("unhashable type: '" + py_type_name(key) + "'");
    bool dup = false;
    for (const Value& s : seen) dup = dup || py_equal(s, key);
    if (dup) continue;
    seen.push_back(key);
    out.push_back(x);
  }
  return Value::list(std::move(out));
}
FILTER(f_wordcount) {
  UNUSED_IN;
  (void)a;
  int64_t n = 0;
  bool in_word = false;
  for (char32_t c : utf8_decode(py_str(v))) {
    bool w = py_isalnum(c) || c == '_';
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value::integer(n);
}

const std::unordered_map<std::string, Filter>& filters() {
  static const std::unordered_map<std::string, Filter> kFilters = {
      {"abs", f_abs},
      {"attr", f_attr},
      {"batch", f_batch},
      {"capitalize", f_capitalize},
      {"center", f_center},
      {"count", f_length},
      {"d", f_default},
      {"default", f_default},
      {"dictsort", f_dictsort},
      {"e", f_escape},
      {"escape", f_escape},
      {"first", f_first},
      {"float", f_float},
      {"forceescape", f_escape},
      {"format", f_format},
      {"indent", f_indent},
      {"int", f_int},
      {"items", f_items},
      {"join", f_join},
      {"last", f_last},
      {"length", f_length},
      {"list", f_list},
      {"lower", f_lower},
      {"map", f_map},
      {"max", f_max},
      {"min", f_min},
      {"reject", f_reject},
      {"rejectattr", f_rejectattr},
      {"replace", f_replace},
      {"reverse", f_reverse},
      {"round", f_round},
      {"safe", f_safe},
      {"select", f_select_},
      {"selectattr", f_selectattr},
      {"sort", f_sort},
      {"string", f_string},
      {"sum", f_sum},
      {"title", f_title},
      {"tojson", f_tojson},
      {"trim", f_trim},
      {"unique", f_unique},
      {"upper", f_upper},
      {"wordcount", f_wordcount},
  };
  return kFilters;
}

}  // namespace

bool has_filter(const std::string& name) {
  return filters().count(name) != 0;
}

Value Interpreter::apply_filter(const std::string& name, const Value& v, const CallArgs& args) {
  auto it = filters().find(name);
  if (it == filters().end())
    throw TemplateError(ErrorKind::kRuntime, "No filter named '" + name + "' found.");
  return it->second(*this, v, args);
}

}  // namespace inkling::jinja
