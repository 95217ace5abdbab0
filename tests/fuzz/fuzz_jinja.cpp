// Fuzzes the Jinja engine: parse a template, then render it with arbitrary variables. Input: the
// template, then "\n@@@@\n" and a JSON object of variables (optional). Rendering runs under a
// small step budget so runaway loops end quickly as errors; output size is capped by the engine.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "base/json_limits.h"
#include "fuzz_util.h"
#include "text/jinja/jinja.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inkling;
  const auto parts = fuzz::split(fuzz::as_text(data, size), "\n@@@@\n", 2);
  auto t = jinja::Template::parse(parts[0]);
  if (!t.ok()) return 0;
  nlohmann::ordered_json vars = nlohmann::ordered_json::object();
  if (parts.size() == 2 && check_json_depth(parts[1], "vars").ok()) {
    vars = nlohmann::ordered_json::parse(parts[1], nullptr, false);
    if (!vars.is_object()) vars = nlohmann::ordered_json::object();
  }
  auto out = t.value().render_json(vars, 100'000);
  (void)out;
  return 0;
}
