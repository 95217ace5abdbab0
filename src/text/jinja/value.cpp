// Value construction, Dict, Python printing (str/repr/float repr), equality, ordering and `in`.
#include "text/jinja/value.h"

#include <cstdlib>
#include <limits>

#include <charconv>
#include <cmath>
#include <cstdio>

#include "text/jinja/error.h"
#include "text/jinja/strutil.h"

namespace inkling::jinja {

// ---- Dict -------------------------------------------------------------------------------

const Value* Dict::find(std::string_view key) const {
  if (items_.size() <= 8) {
    for (const auto& [k, v] : items_)
      if (k.is_string() && k.str() == key) return &v;
    return nullptr;
  }
  auto it = string_index_.find(key);
  return it == string_index_.end() ? nullptr : &items_[it->second].second;
}

const Value* Dict::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.str()));
  for (const auto& [k, v] : items_)
    if (!k.is_string() && py_key_equal(k, key)) return &v;
  return nullptr;
}

Value* Dict::find(const Value& key) {
  return const_cast<Value*>(std::as_const(*this).find(key));
}

void Dict::set(const Value& key, Value value) {
  if (Value* existing = find(key)) {
    *existing = std::move(value);
    return;
  }
  if (key.is_string()) string_index_.emplace(key.str(), items_.size());
  items_.emplace_back(key, std::move(value));
}

void Dict::clear() {
  items_.clear();
  string_index_.clear();
}

const Value* CallArgs::get_kw(std::string_view name) const {
  for (const auto& [k, v] : kwargs)
    if (k == name) return &v;
  return nullptr;
}

const Value* CallArgs::get(size_t pos, std::string_view name) const {
  if (pos < args.size()) return &args[pos];
  return get_kw(name);
}

// ---- Value ------------------------------------------------------------------------------

Value Value::undefined(std::string message, bool security) {
  Value v(Kind::kUndefined, std::make_shared<const std::string>(std::move(message)));
  v.security_ = security;
  return v;
}

Value Value::string(std::string s) {
  return Value(Kind::kString, std::make_shared<const std::string>(std::move(s)));
}

namespace {

uint32_t child_depth(const Value& v) {
  return (v.is_sequence() || v.is_mapping()) ? v.depth() : 0;
}

std::shared_ptr<ListData> make_list_data(std::vector<Value> items) {
  auto data = std::make_shared<ListData>();
  uint32_t d = 0;
  for (const Value& v : items) d = std::max(d, child_depth(v));
  if (d + 1 > kMaxValueDepth)
    throw TemplateError(ErrorKind::kLimit,
                        "value nesting exceeds " + std::to_string(kMaxValueDepth) + " levels");
  data->depth = d + 1;
  data->items = std::move(items);
  return data;
}

}  // namespace

Value Value::list(std::vector<Value> items) {
  return Value(Kind::kList, make_list_data(std::move(items)));
}

Value Value::tuple(std::vector<Value> items) {
  return Value(Kind::kTuple, make_list_data(std::move(items)));
}

Value Value::dict(Dict d) {
  uint32_t depth = 0;
  for (const auto& [k, v] : d.items()) depth = std::max(depth, child_depth(v));
  if (depth + 1 > kMaxValueDepth)
    throw TemplateError(ErrorKind::kLimit,
                        "value nesting exceeds " + std::to_string(kMaxValueDepth) + " levels");
  return Value(Kind::kDict, std::make_shared<Dict>(std::move(d)));
}

Value Value::ns(Dict d) {
  return Value(Kind::kNamespace, std::make_shared<Dict>(std::move(d)));
}

Value Value::callable(std::string name, std::function<Value(Interpreter&, const CallArgs&)> fn,
                      bool is_macro) {
  auto c = std::make_shared<Callable>();
  c->name = std::move(name);
  c->fn = std::move(fn);
  c->is_macro = is_macro;
  return Value(Kind::kCallable, std::shared_ptr<const Callable>(std::move(c)));
}

Value Value::big_integer(std::string digits) {
  return Value(Kind::kInt, std::make_shared<const std::string>(std::move(digits)));
}

int64_t Value::as_int() const {
  if (kind_ == Kind::kBool) return std::get<bool>(v_) ? 1 : 0;
  if (is_big_int())
    return std::get<std::shared_ptr<const std::string>>(v_)->front() == '-'
               ? std::numeric_limits<int64_t>::min()
               : std::numeric_limits<int64_t>::max();
  return std::get<int64_t>(v_);
}

std::string Value::int_text() const {
  if (is_big_int()) return *std::get<std::shared_ptr<const std::string>>(v_);
  return std::to_string(as_int());
}

double Value::as_double() const {
  if (kind_ == Kind::kFloat) return std::get<double>(v_);
  if (is_big_int())
    return std::strtod(std::get<std::shared_ptr<const std::string>>(v_)->c_str(), nullptr);
  return static_cast<double>(as_int());
}

uint32_t Value::depth() const {
  if (is_sequence()) return std::get<std::shared_ptr<ListData>>(v_)->depth;
  if (is_mapping()) {
    uint32_t d = 0;
    for (const auto& [k, v] : dict().items()) d = std::max(d, child_depth(v));
    return d + 1;
  }
  return 0;
}

const std::string& Value::undefined_message() const {
  static const std::string kDefault = "'?' is undefined";
  if (auto* p = std::get_if<std::shared_ptr<const std::string>>(&v_)) return **p;
  return kDefault;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return std::get<bool>(v_);
    case Kind::kInt:
      return is_big_int() || std::get<int64_t>(v_) != 0;
    case Kind::kFloat:
      return std::get<double>(v_) != 0.0;
    case Kind::kString:
      return !str().empty();
    case Kind::kList:
    case Kind::kTuple:
      return !items().empty();
    case Kind::kDict:
      return !dict().empty();
    case Kind::kNamespace:
    case Kind::kCallable:
      return true;
  }
  return false;
}

const void* Value::identity() const {
  switch (kind_) {
    case Kind::kString:
      return std::get<std::shared_ptr<const std::string>>(v_).get();
    case Kind::kList:
    case Kind::kTuple:
      return std::get<std::shared_ptr<ListData>>(v_).get();
    case Kind::kDict:
    case Kind::kNamespace:
      return std::get<std::shared_ptr<Dict>>(v_).get();
    case Kind::kCallable:
      return std::get<std::shared_ptr<const Callable>>(v_).get();
    default:
      return nullptr;
  }
}

// ---- names ------------------------------------------------------------------------------

std::string py_type_name(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return "list";
    case Kind::kTuple:
      return "tuple";
    case Kind::kDict:
      return "dict";
    case Kind::kNamespace:
      return "TemplateNamespace";
    case Kind::kCallable:
      return v.fn().is_macro ? "Macro" : "function";
  }
  return "object";
}

std::string object_type_repr(const Value& v) {
  if (v.is_none()) return "None";
  if (v.kind() == Kind::kNamespace) return "jinja2.utils.TemplateNamespace object";
  if (v.kind() == Kind::kCallable && v.fn().is_macro) return "jinja2.runtime.Macro object";
  return py_type_name(v) + " object";
}

// ---- printing ---------------------------------------------------------------------------

std::string py_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  // sci = [-]D[.DDD]e[+-]XX
  std::string out;
  size_t i = 0;
  if (sci[0] == '-') {
    out += '-';
    i = 1;
  }
  size_t epos = sci.find('e');
  std::string digits;
  for (size_t k = i; k < epos; ++k)
    if (sci[k] != '.') digits += sci[k];
  int exp = std::stoi(sci.substr(epos + 1));
  int decpt = exp + 1;
  int nd = static_cast<int>(digits.size());
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0.";
      out.append(static_cast<size_t>(-decpt), '0');
      out += digits;
    } else if (decpt >= nd) {
      out += digits;
      out.append(static_cast<size_t>(decpt - nd), '0');
      out += ".0";
    } else {
      out += digits.substr(0, decpt);
      out += '.';
      out += digits.substr(decpt);
    }
    return out;
  }
  out += digits[0];
  if (nd > 1) {
    out += '.';
    out += digits.substr(1);
  }
  char ebuf[16];
  std::snprintf(ebuf, sizeof(ebuf), "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  out += ebuf;
  return out;
}

std::string py_str_repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char q = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, q);
  for (char32_t c : utf8_decode(s)) {
    if (c == static_cast<char32_t>(q) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (!py_isprintable(c)) {
      char buf[16];
      if (c < 0x100)
        std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(c));
      else if (c < 0x10000)
        std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
      else
        std::snprintf(buf, sizeof(buf), "\\U%08x", static_cast<unsigned>(c));
      out += buf;
    } else {
      utf8_append(out, c);
    }
  }
  out += q;
  return out;
}

namespace {

void repr_into(std::string& out, const Value& v, int depth);

void str_into(std::string& out, const Value& v, int depth) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return;
    case Kind::kString:
      out += v.str();
      return;
    default:
      repr_into(out, v, depth);
  }
}

void repr_into(std::string& out, const Value& v, int depth) {
  if (depth > static_cast<int>(kMaxValueDepth))
    throw TemplateError(ErrorKind::kLimit, "maximum recursion depth exceeded while printing");
  switch (v.kind()) {
    case Kind::kUndefined:
      out += "Undefined";
      return;
    case Kind::kNone:
      out += "None";
      return;
    case Kind::kBool:
      out += v.as_bool() ? "True" : "False";
      return;
    case Kind::kInt:
      out += v.int_text();
      return;
    case Kind::kFloat:
      out += py_float_repr(v.as_double());
      return;
    case Kind::kString:
      out += py_str_repr(v.str());
      return;
    case Kind::kList:
    case Kind::kTuple: {
      bool tuple = v.kind() == Kind::kTuple;
      out += tuple ? '(' : '[';
      const auto& items = v.items();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        repr_into(out, items[i], depth + 1);
      }
      if (tuple && items.size() == 1) out += ',';
      out += tuple ? ')' : ']';
      return;
    }
    case Kind::kDict:
    case Kind::kNamespace: {
      bool ns = v.kind() == Kind::kNamespace;
      if (ns) out += "<Namespace ";
      out += '{';
      bool first = true;
      for (const auto& [k, val] : v.dict().items()) {
        if (!first) out += ", ";
        first = false;
        repr_into(out, k, depth + 1);
        out += ": ";
        repr_into(out, val, depth + 1);
      }
      out += '}';
      if (ns) out += '>';
      return;
    }
    case Kind::kCallable:
      out += v.fn().is_macro ? "<Macro '" + v.fn().name + "'>"
                             : "<built-in function " + v.fn().name + ">";
      return;
  }
}

}  // namespace

std::string py_str(const Value& v) {
  if (v.is_string()) return v.str();
  std::string out;
  str_into(out, v, 0);
  return out;
}

std::string py_repr(const Value& v) {
  std::string out;
  repr_into(out, v, 0);
  return out;
}

// ---- comparison -------------------------------------------------------------------------

namespace {

bool equal_impl(const Value& a, const Value& b, int depth) {
  if (depth > static_cast<int>(kMaxValueDepth))
    throw TemplateError(ErrorKind::kLimit, "maximum recursion depth exceeded in comparison");
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      return a.str() == b.str();
    case Kind::kList:
    case Kind::kTuple: {
      const auto& x = a.items();
      const auto& y = b.items();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!equal_impl(x[i], y[i], depth + 1)) return false;
      return true;
    }
    case Kind::kDict: {
      if (a.dict().size() != b.dict().size()) return false;
      for (const auto& [k, v] : a.dict().items()) {
        const Value* other = b.dict().find(k);
        if (!other || !equal_impl(v, *other, depth + 1)) return false;
      }
      return true;
    }
    default:
      return a.identity() == b.identity();
  }
}

}  // namespace

bool py_equal(const Value& a, const Value& b) {
  return equal_impl(a, b, 0);
}

bool py_key_equal(const Value& a, const Value& b) {
  return equal_impl(a, b, 0);
}

bool py_less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 order == code points
  if ((a.kind() == Kind::kList && b.kind() == Kind::kList) ||
      (a.kind() == Kind::kTuple && b.kind() == Kind::kTuple)) {
    const auto& x = a.items();
    const auto& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (py_equal(x[i], y[i])) continue;
      return py_less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  throw_type_error("'<' not supported between instances of '" + py_type_name(a) + "' and '" +
                   py_type_name(b) + "'");
}

bool py_contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::kString:
      if (!item.is_string())
        throw_type_error("'in <string>' requires string as left operand, not " +
                         py_type_name(item));
      return container.str().find(item.str()) != std::string::npos;
    case Kind::kList:
    case Kind::kTuple:
      for (const Value& v : container.items())
        if (py_equal(v, item)) return true;
      return false;
    case Kind::kDict:
      if (item.is_sequence() && item.kind() == Kind::kList)
        throw_type_error("unhashable type: 'list'");
      return container.dict().find(item) != nullptr;
    case Kind::kUndefined:
      return false;
    default:
      throw_type_error("argument of type '" + py_type_name(container) + "' is not iterable");
  }
}

}  // namespace inkling::jinja
