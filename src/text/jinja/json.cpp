// json_dumps: Python's json.dumps (encoder.py) for template values — escaping, key coercion,
// sort_keys, indent and separators — so `tojson` output is byte-identical to transformers'.
#include "text/jinja/json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "text/jinja/strutil.h"

namespace inkling::jinja {
namespace {

void append_hex4(std::string& out, unsigned v) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "\\u%04x", v & 0xFFFF);
  out += buf;
}

void dump_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  for (char32_t c : utf8_decode(s)) {
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (c < 0x20) {
      append_hex4(out, c);
    } else if (ensure_ascii && c > 0x7E) {
      if (c >= 0x10000) {
        char32_t v = c - 0x10000;
        append_hex4(out, 0xD800 | ((v >> 10) & 0x3FF));
        append_hex4(out, 0xDC00 | (v & 0x3FF));
      } else {
        append_hex4(out, c);
      }
    } else {
      utf8_append(out, c);
    }
  }
  out += '"';
}

std::string float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return py_float_repr(d);
}

// Python coerces dict keys: str stays, float -> repr, True/False -> true/false, None -> null,
// int -> decimal; anything else is a TypeError.
std::string coerce_key(const Value& k) {
  switch (k.kind()) {
    case Kind::kString:
      return k.str();
    case Kind::kFloat:
      return float_json(k.as_double());
    case Kind::kBool:
      return k.as_bool() ? "true" : "false";
    case Kind::kNone:
      return "null";
    case Kind::kInt:
      return k.int_text();
    default:
      throw_type_error("keys must be str, int, float, bool or None, not " + py_type_name(k));
  }
}

class Dumper {
 public:
  explicit Dumper(const JsonDumpOptions& o) : o_(o) {}

  void dump(const Value& v, int level) {
    if (level > static_cast<int>(kMaxValueDepth))
      throw TemplateError(ErrorKind::kLimit, "maximum recursion depth exceeded in tojson");
    switch (v.kind()) {
      case Kind::kNone:
        out += "null";
        return;
      case Kind::kBool:
        out += v.as_bool() ? "true" : "false";
        return;
      case Kind::kInt:
        out += v.int_text();
        return;
      case Kind::kFloat:
        out += float_json(v.as_double());
        return;
      case Kind::kString:
        dump_string(out, v.str(), o_.ensure_ascii);
        return;
      case Kind::kList:
      case Kind::kTuple: {
        const auto& items = v.items();
        if (items.empty()) {
          out += "[]";
          return;
        }
        out += '[';
        newline(level + 1);
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) {
            out += o_.item_separator;
            newline(level + 1);
          }
          dump(items[i], level + 1);
        }
        newline(level);
        out += ']';
        return;
      }
      case Kind::kDict: {
        const auto& d = v.dict();
        if (d.empty()) {
          out += "{}";
          return;
        }
        std::vector<std::pair<std::string, const Value*>> entries;
        entries.reserve(d.size());
        if (o_.sort_keys) {
          // Python sorts the original keys (mixed types raise), then coerces them.
          std::vector<const std::pair<Value, Value>*> raw;
          for (const auto& kv : d.items()) raw.push_back(&kv);
          std::stable_sort(raw.begin(), raw.end(),
                           [](auto* a, auto* b) { return py_less(a->first, b->first); });
          for (auto* kv : raw) entries.emplace_back(coerce_key(kv->first), &kv->second);
        } else {
          for (const auto& [k, val] : d.items()) entries.emplace_back(coerce_key(k), &val);
        }
        out += '{';
        newline(level + 1);
        for (size_t i = 0; i < entries.size(); ++i) {
          if (i) {
            out += o_.item_separator;
            newline(level + 1);
          }
          dump_string(out, entries[i].first, o_.ensure_ascii);
          out += o_.key_separator;
          dump(*entries[i].second, level + 1);
        }
        newline(level);
        out += '}';
        return;
      }
      case Kind::kUndefined:
        throw_type_error("Object of type Undefined is not JSON serializable");
      case Kind::kNamespace:
        throw_type_error("Object of type TemplateNamespace is not JSON serializable");
      case Kind::kCallable:
        throw_type_error("Object of type " + py_type_name(v) + " is not JSON serializable");
    }
  }

  std::string out;

 private:
  void newline(int level) {
    if (!o_.indent) return;
    out += '\n';
    for (int i = 0; i < level; ++i) out += *o_.indent;
  }
  const JsonDumpOptions& o_;
};

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& opts) {
  Dumper d(opts);
  d.dump(v, 0);
  return std::move(d.out);
}

namespace {

// nlohmann SAX events -> Values; number_float also carries the literal's text, which is how an
// integer beyond uint64 (that nlohmann reads as a double) stays exact.
class ValueSax {
 public:
  using J = nlohmann::json;
  bool null() { return put(Value::none()); }
  bool boolean(bool b) { return put(Value::boolean(b)); }
  bool number_integer(J::number_integer_t i) { return put(Value::integer(i)); }
  bool number_unsigned(J::number_unsigned_t u) {
    if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return put(Value::integer(static_cast<int64_t>(u)));
    return put(Value::big_integer(std::to_string(u)));
  }
  bool number_float(J::number_float_t d, const J::string_t& text) {
    const bool integer = !text.empty() && text.find_first_of(".eE") == std::string::npos;
    return put(integer ? Value::big_integer(text) : Value::number(d));
  }
  bool string(J::string_t& s) { return put(Value::string(s)); }
  bool binary(J::binary_t&) { return put(Value::none()); }
  bool start_object(std::size_t) { return open(true); }
  bool key(J::string_t& k) {
    keys_.back() = k;
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(false); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception& e) {
    throw TemplateError(ErrorKind::kType,
                        "invalid JSON at byte " + std::to_string(pos) + ": " + e.what());
  }
  Value result;

 private:
  struct Frame {
    bool object;
    Dict dict;
    std::vector<Value> items;
  };
  bool put(Value v) {
    if (stack_.empty()) {
      result = std::move(v);
    } else if (stack_.back().object) {
      stack_.back().dict.set(Value::string(keys_.back()), std::move(v));
    } else {
      stack_.back().items.push_back(std::move(v));
    }
    return true;
  }
  bool open(bool object) {
    if (stack_.size() >= kMaxValueDepth)
      throw TemplateError(ErrorKind::kLimit,
                          "JSON nesting exceeds " + std::to_string(kMaxValueDepth) + " levels");
    stack_.push_back(Frame{object, {}, {}});
    keys_.emplace_back();
    return true;
  }
  bool close() {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    keys_.pop_back();
    return put(f.object ? Value::dict(std::move(f.dict)) : Value::list(std::move(f.items)));
  }
  std::vector<Frame> stack_;
  std::vector<std::string> keys_;
};

}  // namespace

Value value_from_json_text(std::string_view text) {
  ValueSax sax;
  nlohmann::json::sax_parse(text.begin(), text.end(), &sax);
  return std::move(sax.result);
}

}  // namespace inkling::jinja
