// Python methods on str/dict/list values (bound on attribute access), %-formatting, str.format,
// and the template globals transformers' environment provides.
#include "text/jinja/methods.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <string_view>
#include <unordered_set>

#include "text/jinja/error.h"
#include "text/jinja/interpreter.h"
#include "text/jinja/strutil.h"

namespace inkling::jinja {
namespace {

using Fn = std::function<Value(Interpreter&, const CallArgs&)>;

const std::string& arg_str(const CallArgs& a, size_t pos, const char* name, const char* method) {
  const Value* v = a.get(pos, name);
  if (!v) throw_type_error(std::string(method) + "() missing required argument '" + name + "'");
  if (!v->is_string())
    throw_type_error(std::string(method) + "() argument must be str, not " + py_type_name(*v));
  return v->str();
}

const std::string* opt_str(const CallArgs& a, size_t pos, const char* name) {
  const Value* v = a.get(pos, name);
  if (!v || v->is_none()) return nullptr;
  if (!v->is_string()) throw_type_error("must be str or None, not " + py_type_name(*v));
  return &v->str();
}

int64_t opt_int(const CallArgs& a, size_t pos, const char* name, int64_t def) {
  const Value* v = a.get(pos, name);
  if (!v || v->is_none()) return def;
  if (!v->is_int() && !v->is_bool())
    throw_type_error("'" + py_type_name(*v) + "' object cannot be interpreted as an integer");
  return v->as_int();
}

Value str_list(const std::vector<std::string>& parts) {
  std::vector<Value> out;
  for (const auto& p : parts) out.push_back(Value::string(p));
  return Value::list(std::move(out));
}

// startswith/endswith accept a str or a tuple of str.
bool affix_match(const Value& arg, const std::string& s, bool prefix) {
  auto one = [&](const Value& p) {
    if (!p.is_string())
      throw_type_error(std::string(prefix ? "startswith" : "endswith") +
                       " first arg must be str or a tuple of str, not " + py_type_name(p));
    return prefix ? starts_with(s, p.str()) : ends_with(s, p.str());
  };
  if (arg.kind() == Kind::kTuple) {
    for (const Value& p : arg.items())
      if (one(p)) return true;
    return false;
  }
  return one(arg);
}

std::string pad(const std::string& s, int64_t width, const std::string& fill, char align) {
  int64_t len = static_cast<int64_t>(utf8_length(s));
  if (width <= len) return s;
  int64_t total = width - len;
  if (uint64_t(total) > kMaxOutputBytes / std::max<size_t>(fill.size(), 1))  // before looping
    throw TemplateError(ErrorKind::kLimit,
                        "padded string too large (width " + std::to_string(width) + ")");
  int64_t left = align == '<' ? 0 : align == '>' ? total : total / 2 + (total & width & 1);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (int64_t i = 0; i < total - left; ++i) out += fill;
  return out;
}

std::string format_field(const Value& v, const std::string& spec);

Value str_method(const Value& self, const std::string& name) {
  const std::string s = self.str();
  auto m = [&](Fn f) { return Value::callable(name, std::move(f)); };
  if (name == "upper")
    return m([s](Interpreter&, const CallArgs&) { return Value::string(str_upper(s)); });
  if (name == "lower" || name == "casefold")
    return m([s](Interpreter&, const CallArgs&) { return Value::string(str_lower(s)); });
  if (name == "title")
    return m([s](Interpreter&, const CallArgs&) { return Value::string(str_title(s)); });
  if (name == "capitalize")
    return m([s](Interpreter&, const CallArgs&) { return Value::string(str_capitalize(s)); });
  if (name == "swapcase")
    return m([s](Interpreter&, const CallArgs&) { return Value::string(str_swapcase(s)); });
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    bool l = name != "rstrip", r = name != "lstrip";
    return m([s, l, r](Interpreter&, const CallArgs& a) {
      return Value::string(str_strip(s, opt_str(a, 0, "chars"), l, r));
    });
  }
  if (name == "split" || name == "rsplit") {
    bool rev = name == "rsplit";
    return m([s, rev](Interpreter&, const CallArgs& a) {
      const std::string* sep = opt_str(a, 0, "sep");
      if (sep && sep->empty()) throw_type_error("empty separator");
      int64_t maxsplit = opt_int(a, 1, "maxsplit", -1);
      return str_list(rev ? str_rsplit(s, sep, maxsplit) : str_split(s, sep, maxsplit));
    });
  }
  if (name == "splitlines")
    return m([s](Interpreter&, const CallArgs& a) {
      const Value* k = a.get(0, "keepends");
      return str_list(str_splitlines(s, k && k->truthy()));
    });
  if (name == "startswith" || name == "endswith") {
    bool prefix = name == "startswith";
    return m([s, prefix](Interpreter&, const CallArgs& a) {
      if (a.args.empty()) throw_type_error("startswith() takes at least 1 argument (0 given)");
      return Value::boolean(affix_match(a.args[0], s, prefix));
    });
  }
  if (name == "replace")
    return m([s](Interpreter& in, const CallArgs& a) {
      std::string r = str_replace(s, arg_str(a, 0, "old", "replace"),
                                  arg_str(a, 1, "new", "replace"), opt_int(a, 2, "count", -1));
      in.check_size(r.size());
      return Value::string(std::move(r));
    });
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    return m([s, name](Interpreter&, const CallArgs& a) {
      const std::string& sub = arg_str(a, 0, "sub", name.c_str());
      if (name == "count") {
        if (sub.empty()) return Value::integer(static_cast<int64_t>(utf8_length(s)) + 1);
        int64_t n = 0;
        for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
        return Value::integer(n);
      }
      size_t p = name[0] == 'r' ? s.rfind(sub) : s.find(sub);
      if (p == std::string::npos) {
        if (name.find("index") != std::string::npos) throw_type_error("substring not found");
        return Value::integer(-1);
      }
      return Value::integer(static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, p))));
    });
  }
  if (name == "join")
    return m([s](Interpreter& in, const CallArgs& a) {
      if (a.args.empty()) throw_type_error("join() takes exactly one argument (0 given)");
      std::string out;
      size_t i = 0;
      for (const Value& v : in.iterate(a.args[0])) {
        if (!v.is_string())
          throw_type_error("sequence item " + std::to_string(i) + ": expected str instance, " +
                           py_type_name(v) + " found");
        if (i++) out += s;
        out += v.str();
      }
      return Value::string(std::move(out));
    });
  if (name == "removeprefix" || name == "removesuffix") {
    bool pre = name == "removeprefix";
    return m([s, pre](Interpreter&, const CallArgs& a) {
      const std::string& x = arg_str(a, 0, "prefix", pre ? "removeprefix" : "removesuffix");
      if (pre && starts_with(s, x)) return Value::string(s.substr(x.size()));
      if (!pre && !x.empty() && ends_with(s, x))
        return Value::string(s.substr(0, s.size() - x.size()));
      return Value::string(s);
    });
  }
  if (name == "partition" || name == "rpartition") {
    bool rev = name == "rpartition";
    return m([s, rev](Interpreter&, const CallArgs& a) {
      const std::string& sep = arg_str(a, 0, "sep", "partition");
      if (sep.empty()) throw_type_error("empty separator");
      size_t p = rev ? s.rfind(sep) : s.find(sep);
      if (p == std::string::npos)
        return rev ? Value::tuple({Value::string(""), Value::string(""), Value::string(s)})
                   : Value::tuple({Value::string(s), Value::string(""), Value::string("")});
      return Value::tuple({Value::string(s.substr(0, p)), Value::string(sep),
                           Value::string(s.substr(p + sep.size()))});
    });
  }
  if (name == "center" || name == "ljust" || name == "rjust") {
    char align = name == "center" ? '^' : name == "ljust" ? '<' : '>';
    return m([s, align](Interpreter&, const CallArgs& a) {
      const std::string* fill = opt_str(a, 1, "fillchar");
      return Value::string(pad(s, opt_int(a, 0, "width", 0), fill ? *fill : " ", align));
    });
  }
  if (name == "zfill")
    return m([s](Interpreter&, const CallArgs& a) {
      int64_t w = opt_int(a, 0, "width", 0);
      int64_t len = static_cast<int64_t>(utf8_length(s));
      if (w <= len) return Value::string(s);
      if (uint64_t(w - len) > kMaxOutputBytes)
        throw TemplateError(ErrorKind::kLimit,
                            "padded string too large (width " + std::to_string(w) + ")");
      size_t sign = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
      return Value::string(s.substr(0, sign) + std::string(static_cast<size_t>(w - len), '0') +
                           s.substr(sign));
    });
  if (name.rfind("is", 0) == 0 &&
      (name == "isalpha" || name == "isdigit" || name == "isalnum" || name == "isspace" ||
       name == "isupper" || name == "islower" || name == "isnumeric" || name == "isdecimal")) {
    return m([s, name](Interpreter&, const CallArgs&) {
      std::vector<char32_t> cps = utf8_decode(s);
      if (cps.empty()) return Value::boolean(false);
      if (name == "isupper" || name == "islower") {
        bool any = false;
        for (char32_t c : cps) {
          if (name == "isupper" ? py_islower(c) : py_isupper(c)) return Value::boolean(false);
          any = any || py_isupper(c) || py_islower(c);
        }
        return Value::boolean(any);
      }
      for (char32_t c : cps) {
        bool ok = name == "isalpha"   ? py_isalpha(c)
                  : name == "isalnum" ? py_isalnum(c)
                  : name == "isspace" ? py_isspace(c)
                                      : py_isdigit(c);
        if (!ok) return Value::boolean(false);
      }
      return Value::boolean(true);
    });
  }
  if (name == "format")
    return m([s](Interpreter&, const CallArgs& a) {
      std::string out;
      size_t auto_idx = 0;
      for (size_t i = 0; i < s.size(); ++i) {
        char c = s[i];
        if (c == '}') {
          if (i + 1 < s.size() && s[i + 1] == '}')
            ++i;
          else
            throw_type_error("Single '}' encountered in format string");
          out += '}';
          continue;
        }
        if (c != '{') {
          out += c;
          continue;
        }
        if (i + 1 < s.size() && s[i + 1] == '{') {
          out += '{';
          ++i;
          continue;
        }
        size_t close = s.find('}', i);
        if (close == std::string::npos) throw_type_error("Single '{' encountered in format string");
        std::string field = s.substr(i + 1, close - i - 1);
        i = close;
        std::string spec, conv;
        if (size_t colon = field.find(':'); colon != std::string::npos) {
          spec = field.substr(colon + 1);
          field = field.substr(0, colon);
        }
        if (size_t bang = field.find('!'); bang != std::string::npos) {
          conv = field.substr(bang + 1);
          field = field.substr(0, bang);
        }
        const Value* v = nullptr;
        if (field.empty()) {
          if (auto_idx >= a.args.size())
            throw_type_error("Replacement index " + std::to_string(auto_idx) +
                             " out of range for positional args tuple");
          v = &a.args[auto_idx++];
        } else if (std::all_of(field.begin(), field.end(),
                               [](char d) { return d >= '0' && d <= '9'; })) {
          size_t idx = std::stoul(field);
          if (idx >= a.args.size())
            throw_type_error("Replacement index " + field +
                             " out of range for positional args tuple");
          v = &a.args[idx];
        } else {
          v = a.get_kw(field);
          if (!v) throw_type_error("'" + field + "'");
        }
        Value shown = conv == "r" ? Value::string(py_repr(*v)) : *v;
        out += format_field(shown, spec);
      }
      return Value::string(std::move(out));
    });
  return Value::undefined("'str object' has no attribute '" + name + "'");
}

std::string unsafe_message(const std::string& name, const char* type) {
  return "access to attribute '" + name + "' of '" + type + "' object is unsafe.";
}

Value dict_method(const Value& self, const std::string& name) {
  auto m = [&](Fn f) { return Value::callable(name, std::move(f)); };
  if (name == "items")
    return m([self](Interpreter&, const CallArgs&) {
      std::vector<Value> out;
      for (const auto& [k, v] : self.dict().items()) out.push_back(Value::tuple({k, v}));
      return Value::list(std::move(out));
    });
  if (name == "keys" || name == "values") {
    bool keys = name == "keys";
    return m([self, keys](Interpreter&, const CallArgs&) {
      std::vector<Value> out;
      for (const auto& [k, v] : self.dict().items()) out.push_back(keys ? k : v);
      return Value::list(std::move(out));
    });
  }
  if (name == "get")
    return m([self](Interpreter&, const CallArgs& a) {
      if (a.args.empty()) throw_type_error("get expected at least 1 argument, got 0");
      if (const Value* v = self.dict().find(a.args[0])) return *v;
      return a.args.size() > 1 ? a.args[1] : Value::none();
    });
  if (name == "copy")
    return m([self](Interpreter&, const CallArgs&) { return Value::dict(self.dict()); });
  if (name == "pop" || name == "popitem" || name == "setdefault" || name == "update" ||
      name == "clear")
    return Value::undefined(unsafe_message(name, "dict"), /*security=*/true);
  return Value();
}

Value list_method(const Value& self, const std::string& name) {
  const char* type = self.kind() == Kind::kTuple ? "tuple" : "list";
  auto m = [&](Fn f) { return Value::callable(name, std::move(f)); };
  if (name == "count")
    return m([self](Interpreter&, const CallArgs& a) {
      if (a.args.empty()) throw_type_error("count() takes exactly one argument (0 given)");
      int64_t n = 0;
      for (const Value& v : self.items()) n += py_equal(v, a.args[0]);
      return Value::integer(n);
    });
  if (name == "index")
    return m([self](Interpreter&, const CallArgs& a) {
      if (a.args.empty()) throw_type_error("index expected at least 1 argument, got 0");
      for (size_t i = 0; i < self.items().size(); ++i)
        if (py_equal(self.items()[i], a.args[0])) return Value::integer(static_cast<int64_t>(i));
      throw_type_error(py_repr(a.args[0]) + " is not in list");
    });
  if (self.kind() == Kind::kList) {
    if (name == "copy")
      return m([self](Interpreter&, const CallArgs&) { return Value::list(self.items()); });
    if (name == "append" || name == "extend" || name == "insert" || name == "pop" ||
        name == "remove" || name == "reverse" || name == "sort" || name == "clear")
      return Value::undefined(unsafe_message(name, type), /*security=*/true);
  }
  return Value();
}

std::string format_int_spec(int64_t v, char type) {
  char buf[64];
  if (type == 'x')
    std::snprintf(buf, sizeof(buf), "%llx", static_cast<unsigned long long>(v < 0 ? -v : v));
  else if (type == 'X')
    std::snprintf(buf, sizeof(buf), "%llX", static_cast<unsigned long long>(v < 0 ? -v : v));
  else if (type == 'o')
    std::snprintf(buf, sizeof(buf), "%llo", static_cast<unsigned long long>(v < 0 ? -v : v));
  else
    std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(v < 0 ? -v : v));
  return std::string(v < 0 ? "-" : "") + buf;
}

// A subset of Python's format-spec mini language: [[fill]align][sign][0][width][.prec][type].
std::string format_field(const Value& v, const std::string& spec) {
  if (spec.empty()) return py_str(v);
  size_t i = 0;
  std::string fill = " ";
  char align = 0;
  if (spec.size() >= 2 && (spec[1] == '<' || spec[1] == '>' || spec[1] == '^')) {
    fill = spec.substr(0, 1);
    align = spec[1];
    i = 2;
  } else if (spec[0] == '<' || spec[0] == '>' || spec[0] == '^') {
    align = spec[0];
    i = 1;
  }
  char sign = 0;
  if (i < spec.size() && (spec[i] == '+' || spec[i] == '-' || spec[i] == ' ')) sign = spec[i++];
  if (i < spec.size() && spec[i] == '0' && !align) {
    fill = "0";
    align = '=';
    ++i;
  }
  int64_t width = 0;
  while (i < spec.size() && spec[i] >= '0' && spec[i] <= '9')
    width = width * 10 + (spec[i++] - '0');
  int prec = -1;
  if (i < spec.size() && spec[i] == '.') {
    prec = 0;
    ++i;
    while (i < spec.size() && spec[i] >= '0' && spec[i] <= '9')
      prec = prec * 10 + (spec[i++] - '0');
  }
  char type = i < spec.size() ? spec[i] : 0;
  std::string body;
  bool numeric = v.is_number();
  if (type == 's' || (!type && v.is_string())) {
    body = py_str(v);
    if (prec >= 0)
      body = utf8_encode(utf8_decode(body), 0, std::min<size_t>(prec, utf8_length(body)));
    if (!align) align = '<';
  } else if (numeric && (type == 'd' || type == 'x' || type == 'X' || type == 'o')) {
    if (v.is_float()) throw_type_error("Unknown format code 'd' for object of type 'float'");
    body = format_int_spec(v.as_int(), type);
  } else if (numeric && (type == 'f' || type == 'F' || type == 'e' || type == 'E' || type == 'g' ||
                         type == 'G' || type == '%')) {
    double d = v.as_double() * (type == '%' ? 100.0 : 1.0);
    char fmt[16], buf[512];
    std::snprintf(fmt, sizeof(fmt), "%%.%d%c", prec < 0 ? 6 : prec, type == '%' ? 'f' : type);
    std::snprintf(buf, sizeof(buf), fmt, d);
    body = buf;
    if (type == '%') body += '%';
  } else if (numeric && !type) {
    body = prec >= 0 && v.is_float() ? format_field(v, spec + "g") : py_str(v);
  } else {
    throw_type_error("Unknown format code '" + std::string(1, type) + "' for object of type '" +
                     py_type_name(v) + "'");
  }
  if (numeric && sign && (sign == '+' || sign == ' ') && !body.empty() && body[0] != '-')
    body = std::string(1, sign) + body;
  if (!align) align = numeric ? '>' : '<';
  if (align == '=') {
    int64_t len = static_cast<int64_t>(utf8_length(body));
    if (width <= len) return body;
    size_t s = (!body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) ? 1 : 0;
    return body.substr(0, s) + std::string(static_cast<size_t>(width - len), fill[0]) +
           body.substr(s);
  }
  return pad(body, width, fill, align);
}

}  // namespace

std::optional<Value> bound_method(const Value& obj, const std::string& name) {
  // Cheap rejection first: attribute access on dicts is the hot path of chat templates.
  static const std::unordered_set<std::string_view> kStr = {
      "upper",      "lower",    "casefold", "title",        "capitalize",   "swapcase",
      "strip",      "lstrip",   "rstrip",   "split",        "rsplit",       "splitlines",
      "startswith", "endswith", "replace",  "find",         "rfind",        "index",
      "rindex",     "count",    "join",     "removeprefix", "removesuffix", "partition",
      "rpartition", "center",   "ljust",    "rjust",        "zfill",        "isalpha",
      "isdigit",    "isalnum",  "isspace",  "isupper",      "islower",      "isnumeric",
      "isdecimal",  "format"};
  static const std::unordered_set<std::string_view> kDict = {
      "items", "keys", "values", "get", "copy", "pop", "popitem", "setdefault", "update", "clear"};
  static const std::unordered_set<std::string_view> kList = {"count",   "index",  "copy", "append",
                                                             "extend",  "insert", "pop",  "remove",
                                                             "reverse", "sort",   "clear"};
  Value m;
  switch (obj.kind()) {
    case Kind::kString:
      if (!kStr.count(name)) return std::nullopt;
      m = str_method(obj, name);
      break;
    case Kind::kDict:
      if (!kDict.count(name)) return std::nullopt;
      m = dict_method(obj, name);
      break;
    case Kind::kList:
    case Kind::kTuple:
      if (!kList.count(name)) return std::nullopt;
      m = list_method(obj, name);
      break;
    default:
      return std::nullopt;
  }
  if (m.is_undefined() && !m.undefined_is_security()) return std::nullopt;
  return m;
}

std::string percent_format(Interpreter&, const std::string& fmt, const Value& args) {
  std::vector<Value> pos;
  const Dict* mapping = nullptr;
  if (args.kind() == Kind::kTuple)
    pos = args.items();
  else if (args.is_mapping())
    mapping = &args.dict();
  else
    pos.push_back(args);
  size_t next_arg = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) throw_type_error("incomplete format");
    const Value* v = nullptr;
    if (fmt[i] == '(') {
      size_t close = fmt.find(')', i);
      if (close == std::string::npos || !mapping) throw_type_error("format requires a mapping");
      std::string key = fmt.substr(i + 1, close - i - 1);
      v = mapping->find(std::string_view(key));
      if (!v) throw_type_error("'" + key + "'");
      i = close + 1;
    }
    std::string spec;
    while (i < fmt.size() && std::string("-+ #0123456789.").find(fmt[i]) != std::string::npos)
      spec += fmt[i++];
    if (i >= fmt.size()) throw_type_error("incomplete format");
    char conv = fmt[i];
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (!v) {
      if (mapping && pos.empty()) throw_type_error("format requires a mapping");
      if (next_arg >= pos.size()) throw_type_error("not enough arguments for format string");
      v = &pos[next_arg++];
    }
    char buf[512];
    std::string cfmt = "%" + spec;
    if (conv == 's' || conv == 'r' || conv == 'a') {
      std::string s = conv == 's' ? py_str(*v) : py_repr(*v);
      // Width/precision apply to code points; handle the common no-spec case exactly.
      if (spec.empty())
        out += s;
      else {
        int width = std::atoi(spec.c_str() + (spec[0] == '-' ? 1 : 0));
        std::string fill(
            static_cast<size_t>(std::max<int64_t>(0, width - static_cast<int64_t>(utf8_length(s)))),
            ' ');
        out += spec[0] == '-' ? s + fill : fill + s;
      }
      continue;
    }
    if (!v->is_number())
      throw_type_error("%" + std::string(1, conv) + " format: a real number is required, not " +
                       py_type_name(*v));
    if (conv == 'd' || conv == 'i' || conv == 'u') {
      std::snprintf(buf, sizeof(buf), (cfmt + "lld").c_str(),
                    static_cast<long long>(v->is_float() ? static_cast<int64_t>(v->as_double())
                                                         : v->as_int()));
    } else if (conv == 'x' || conv == 'X' || conv == 'o') {
      std::snprintf(buf, sizeof(buf), (cfmt + "ll" + std::string(1, conv)).c_str(),
                    static_cast<long long>(v->as_int()));
    } else if (std::string("eEfFgG").find(conv) != std::string::npos) {
      std::snprintf(buf, sizeof(buf), (cfmt + std::string(1, conv)).c_str(), v->as_double());
    } else {
      throw_type_error("unsupported format character '" + std::string(1, conv) + "'");
    }
    out += buf;
  }
  if (!mapping && next_arg < pos.size())
    throw_type_error("not all arguments converted during string formatting");
  return out;
}

void install_globals(Dict& g) {
  auto def = [&g](const char* name, Fn f) {
    g.set(Value::string(name), Value::callable(name, std::move(f)));
  };
  def("raise_exception", [](Interpreter&, const CallArgs& a) -> Value {
    std::string msg = a.args.empty() ? "" : py_str(a.args[0]);
    throw TemplateError(ErrorKind::kRaise, msg);
  });
  def("strftime_now", [](Interpreter&, const CallArgs& a) {
    std::string fmt = a.args.empty() ? "" : py_str(a.args[0]);
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char buf[512];
    size_t n = fmt.empty() ? 0 : std::strftime(buf, sizeof(buf), fmt.c_str(), &tm);
    return Value::string(std::string(buf, n));
  });
  def("range", [](Interpreter&, const CallArgs& a) {
    auto num = [](const Value& v) {
      if (!v.is_int() && !v.is_bool())
        throw_type_error("'" + py_type_name(v) + "' object cannot be interpreted as an integer");
      return v.as_int();
    };
    if (a.args.empty() || a.args.size() > 3) throw_type_error("range expected 1 to 3 arguments");
    int64_t start = 0, stop, step = 1;
    if (a.args.size() == 1)
      stop = num(a.args[0]);
    else {
      start = num(a.args[0]);
      stop = num(a.args[1]);
      if (a.args.size() == 3) step = num(a.args[2]);
    }
    if (step == 0) throw_type_error("range() arg 3 must not be zero");
    int64_t n = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                         : (start > stop ? (start - stop - step - 1) / -step : 0);
    if (n > 100000)
      throw TemplateError(
          ErrorKind::kSecurity,
          "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    std::vector<Value> out;
    for (int64_t i = 0; i < n; ++i) out.push_back(Value::integer(start + i * step));
    return Value::list(std::move(out));
  });
  auto build_dict = [](Interpreter& in, const CallArgs& a) {
    Dict d;
    if (!a.args.empty()) {
      const Value& src = a.args[0];
      if (src.is_dictlike())
        d = src.dict();
      else
        for (const Value& pair : in.iterate(src)) {
          std::vector<Value> kv = in.iterate(pair);
          if (kv.size() != 2)
            throw_type_error("dictionary update sequence element has wrong length");
          d.set(kv[0], kv[1]);
        }
    }
    for (const auto& [k, v] : a.kwargs) d.set(Value::string(k), v);
    return d;
  };
  def("dict",
      [build_dict](Interpreter& in, const CallArgs& a) { return Value::dict(build_dict(in, a)); });
  def("namespace", [build_dict](Interpreter& in, const CallArgs& a) {
    Dict d = build_dict(in, a);
    for (const auto& [k, v] : d.items())
      if (k.is_string() && !k.str().empty() && k.str()[0] == '_')
        throw TemplateError(ErrorKind::kSecurity,
                            "Chat templates cannot store underscore-prefixed attributes on a "
                            "namespace, but got '" +
                                k.str() + "'. Please rename the attribute.");
    Value ns = Value::ns(std::move(d));
    in.register_namespace(ns);
    return ns;
  });
  def("joiner", [](Interpreter&, const CallArgs& a) {
    std::string sep = a.args.empty() ? ", " : py_str(a.args[0]);
    auto used = std::make_shared<bool>(false);
    return Value::callable("joiner", [sep, used](Interpreter&, const CallArgs&) {
      if (!*used) {
        *used = true;
        return Value::string("");
      }
      return Value::string(sep);
    });
  });
  def("cycler", [](Interpreter& in, const CallArgs& a) {
    auto items = std::make_shared<std::vector<Value>>(a.args);
    auto pos = std::make_shared<size_t>(0);
    if (items->empty()) throw_type_error("at least one item has to be provided");
    Dict d;
    d.set(Value::string("next"),
          Value::callable("next", [items, pos](Interpreter&, const CallArgs&) {
            Value v = (*items)[*pos];
            *pos = (*pos + 1) % items->size();
            return v;
          }));
    d.set(Value::string("reset"), Value::callable("reset", [pos](Interpreter&, const CallArgs&) {
            *pos = 0;
            return Value::none();
          }));
    d.set(Value::string("current"), (*items)[0]);
    Value ns = Value::ns(std::move(d));
    in.register_namespace(ns);
    return ns;
  });
}

}  // namespace inkling::jinja
