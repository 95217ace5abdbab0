// JSON <-> Value: nlohmann JSON (ordered or not) to template values keeping int vs float, and
// json_dumps(), a byte-exact port of Python's json.dumps for the `tojson` filter.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "text/jinja/error.h"
#include "text/jinja/value.h"

namespace inkling::jinja {

struct JsonDumpOptions {
  bool ensure_ascii = false;          // transformers' tojson default (Jinja's own would be True)
  std::optional<std::string> indent;  // None: single line; a string: one level of indentation
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};

// Python json.dumps(value, ...). Throws TemplateError(kType) for values JSON cannot encode.
std::string json_dumps(const Value& v, const JsonDumpOptions& opts);

// JSON text -> Value as Python's json.loads builds it: integers of any size stay exact ints
// (1.0 and 1e2 are floats). Throws TemplateError on invalid JSON or nesting beyond
// kMaxValueDepth.
Value value_from_json_text(std::string_view text);

// Converts parsed JSON into a Value. Integers stay ints (beyond int64: exact big integers), floats
// stay floats. nlohmann has already turned integers beyond uint64 into floats: to keep those
// exact, parse the text with value_from_json_text().
template <typename Json>
Value value_from_json(const Json& j, int depth = 0) {
  if (depth > static_cast<int>(kMaxValueDepth))
    throw TemplateError(ErrorKind::kLimit,
                        "JSON nesting exceeds " + std::to_string(kMaxValueDepth) + " levels");
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return Value::none();
    case nlohmann::json::value_t::boolean:
      return Value::boolean(j.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value::integer(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      uint64_t u = j.template get<uint64_t>();
      if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return Value::integer(static_cast<int64_t>(u));
      return Value::big_integer(std::to_string(u));
    }
    case nlohmann::json::value_t::number_float:
      return Value::number(j.template get<double>());
    case nlohmann::json::value_t::string:
      return Value::string(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(value_from_json(e, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Dict d;
      for (auto it = j.begin(); it != j.end(); ++it)
        d.set(Value::string(it.key()), value_from_json(it.value(), depth + 1));
      return Value::dict(std::move(d));
    }
    default:
      return Value::none();  // binary / discarded: not produced by JSON text
  }
}

}  // namespace inkling::jinja
