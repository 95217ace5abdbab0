// Value: the dynamic value of the Jinja engine, modelled on the Python objects Jinja2 sees
// (None, bool, int, float, str, list, tuple, dict, Namespace, callables, Undefined), plus the
// Python-exact printing (str/repr), equality, ordering and truthiness the templates rely on.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace inkling::jinja {

class Value;
class Interpreter;

enum class Kind : uint8_t {
  kUndefined,
  kNone,
  kBool,
  kInt,
  kFloat,
  kString,
  kList,
  kTuple,
  kDict,
  kNamespace,
  kCallable,
};

// Insertion-ordered mapping with Python key semantics (1 == 1.0 == True as keys).
class Dict {
 public:
  const Value* find(const Value& key) const;
  Value* find(const Value& key);
  const Value* find(std::string_view key) const;
  void set(const Value& key, Value value);
  size_t size() const;  // defined below Value: clang needs Value complete here
  bool empty() const;
  const std::vector<std::pair<Value, Value>>& items() const { return items_; }
  void clear();

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::vector<std::pair<Value, Value>> items_;
  // string keys -> position in items_ (used once the dict outgrows a linear scan)
  std::unordered_map<std::string, size_t, Hash, std::equal_to<>> string_index_;
};

// Positional and keyword arguments of a call, already evaluated.
struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;

  // Takes the argument at `pos` or named `name` (removing a keyword); nullptr when absent.
  const Value* get(size_t pos, std::string_view name) const;
  const Value* get_kw(std::string_view name) const;
};

// A builtin function, bound method, macro or loop helper.
struct Callable {
  std::string name;
  bool is_macro = false;
  std::function<Value(Interpreter&, const CallArgs&)> fn;
};

struct ListData {
  std::vector<Value> items;
  uint32_t depth = 1;  // nesting depth of lists/dicts inside, bounded to keep recursion safe
};

class Value {
 public:
  Value() = default;  // Undefined with no hint: "'?' is undefined"

  static Value undefined(std::string message, bool security = false);
  static Value none() { return Value(Kind::kNone, std::monostate{}); }
  static Value boolean(bool b) { return Value(Kind::kBool, b); }
  static Value integer(int64_t i) { return Value(Kind::kInt, i); }
  // An integer outside int64 (JSON input; Python keeps it exact): `digits` is its decimal text
  // ("-"? digits, no leading zeros). Printing (str, repr, tojson) is exact; arithmetic and
  // comparisons see it saturated to int64 (as_int) or rounded (as_double).
  static Value big_integer(std::string digits);
  static Value number(double f) { return Value(Kind::kFloat, f); }
  static Value string(std::string s);
  static Value list(std::vector<Value> items);
  static Value tuple(std::vector<Value> items);
  static Value dict(Dict d);
  static Value ns(Dict d);
  static Value callable(std::string name, std::function<Value(Interpreter&, const CallArgs&)> fn,
                        bool is_macro = false);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_number() const {
    return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool;
  }
  bool is_sequence() const { return kind_ == Kind::kList || kind_ == Kind::kTuple; }
  bool is_mapping() const { return kind_ == Kind::kDict; }
  bool is_dictlike() const { return kind_ == Kind::kDict || kind_ == Kind::kNamespace; }
  bool is_callable() const { return kind_ == Kind::kCallable; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const;  // int or bool
  bool is_big_int() const {
    return kind_ == Kind::kInt && std::holds_alternative<std::shared_ptr<const std::string>>(v_);
  }
  std::string int_text() const;  // an int's exact decimal text
  double as_double() const;      // int, bool or float
  const std::string& str() const { return *std::get<std::shared_ptr<const std::string>>(v_); }
  const std::vector<Value>& items() const { return std::get<std::shared_ptr<ListData>>(v_)->items; }
  uint32_t depth() const;
  const Dict& dict() const { return *std::get<std::shared_ptr<Dict>>(v_); }
  Dict& mutable_dict() const { return *std::get<std::shared_ptr<Dict>>(v_); }
  const Callable& fn() const { return *std::get<std::shared_ptr<const Callable>>(v_); }
  // Undefined: the message Jinja2 raises when it is used ("'x' is undefined").
  const std::string& undefined_message() const;
  bool undefined_is_security() const { return kind_ == Kind::kUndefined && security_; }

  bool truthy() const;
  const void* identity() const;  // pointer identity of containers/callables ("is sameas")

 private:
  using Storage = std::variant<std::monostate, bool, int64_t, double,
                               std::shared_ptr<const std::string>, std::shared_ptr<ListData>,
                               std::shared_ptr<Dict>, std::shared_ptr<const Callable>>;
  template <typename T>
  Value(Kind k, T v) : kind_(k), v_(std::move(v)) {}

  Kind kind_ = Kind::kUndefined;
  bool security_ = false;
  Storage v_;
};

// Maximum nesting of lists/dicts a template may build or print (keeps recursion bounded).
inline constexpr uint32_t kMaxValueDepth = 512;

inline size_t Dict::size() const {
  return items_.size();
}
inline bool Dict::empty() const {
  return items_.empty();
}

// Python names for error messages: 'int', 'str', 'dict', 'NoneType', ...
std::string py_type_name(const Value& v);
// Jinja2's object_type_repr: "dict object", "None", ...
std::string object_type_repr(const Value& v);

// str(v) as Python prints it (Undefined prints ""); repr(v) likewise.
std::string py_str(const Value& v);
std::string py_repr(const Value& v);
std::string py_float_repr(double d);
std::string py_str_repr(std::string_view s);

// Python ==, and < (throws a TypeError-style TemplateError for unorderable types).
bool py_equal(const Value& a, const Value& b);
bool py_less(const Value& a, const Value& b);
// Python's hash-compatible key for numbers: 1, 1.0 and True are the same dict key.
bool py_key_equal(const Value& a, const Value& b);

// Python `x in container` (str substring, list/tuple element, dict key).
bool py_contains(const Value& container, const Value& item);

}  // namespace inkling::jinja
