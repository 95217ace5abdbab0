// jinja::Template — the engine's entry point: parse once (syntax errors carry line and column),
// render many times against JSON variables. Renders like transformers' chat-template environment
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, generation blocks).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "inkling/status.h"
#include "text/jinja/ast.h"
#include "text/jinja/json.h"
#include "text/jinja/value.h"

namespace inkling::jinja {

class Template {
 public:
  // Errors: "[template] line L, column C: <message>".
  static Result<Template> parse(std::string_view source);

  // Renders with `vars` as the template's variables. Errors: raise_exception(msg) gives exactly
  // msg; every other failure "[template] line L: <Jinja2's message>".
  // `max_steps` bounds statements + loop iterations (runaway templates become errors).
  Result<std::string> render(const Dict& vars, int64_t max_steps = 100'000'000) const;

  template <typename Json>
  Result<std::string> render_json(const Json& vars, int64_t max_steps = 100'000'000) const {
    Dict d;
    if (!vars.is_object()) return Status::error("[template] variables must be a JSON object");
    try {
      for (auto it = vars.begin(); it != vars.end(); ++it)
        d.set(Value::string(it.key()), value_from_json(it.value()));
    } catch (const TemplateError& e) {
      return Status::error("[template] " + e.message());
    }
    return render(d, max_steps);
  }

 private:
  std::shared_ptr<const Body> body_;
};

}  // namespace inkling::jinja
