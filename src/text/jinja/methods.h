// Methods and globals: Python str/dict/list methods reachable through attribute access (with the
// immutable sandbox's refusals), %-formatting and str.format, and the globals transformers
// installs (range, dict, namespace, raise_exception, strftime_now, cycler, joiner).
#pragma once

#include <optional>
#include <string>

#include "text/jinja/value.h"

namespace inkling::jinja {

// The bound method `obj.name` if the Python type has such an attribute; an unsafe one (list.append,
// dict.update, ...) yields the sandbox's "unsafe" Undefined. nullopt when there is no attribute.
std::optional<Value> bound_method(const Value& obj, const std::string& name);

// Python `fmt % args`.
std::string percent_format(Interpreter& in, const std::string& fmt, const Value& args);

void install_globals(Dict& globals);

}  // namespace inkling::jinja
