// Test helper: `--test-script` files for `inkling serve` (the model's output chosen by a substring
// of the rendered prompt), and the scripted outputs several server tests share.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "server_process.h"

namespace inkling::testing {

// A reasoning block, then a get_weather call for Paris. The space after "args":{ keeps the tokens
// of a forced named-call prefix aligned with these.
inline const char* const kScriptWeatherCall =
    "<|content_thinking|>Let me check.<|end_message|><|message_model|>get_weather"
    "<|content_invoke_tool_json|>{\"name\":\"get_weather\",\"args\":{ \"city\": "
    "\"Paris\"}}<|end_message|><|content_model_end_sampling|>";
// A reasoning block, then a text answer.
inline const char* const kScriptPoem =
    "<|content_thinking|>Rhyme.<|end_message|><|message_model|><|content_text|>"
    "Roses are red<|end_message|><|content_model_end_sampling|>";
// The answer after the get_weather result ("sunny-21C").
inline const char* const kScriptSunny =
    "<|content_text|>It is sunny.<|end_message|><|content_model_end_sampling|>";

// Writes INKLING_BINARY_DIR/`name` with the (when, output) pairs, first match wins; returns its
// path.
inline std::string write_test_script(
    const std::string& name, const std::vector<std::pair<std::string, std::string>>& rules) {
  const std::string path = std::string(INKLING_BINARY_DIR) + "/" + name;
  nlohmann::json s = nlohmann::json::array();
  for (const auto& [when, output] : rules) s.push_back({{"when", when}, {"output", output}});
  write_file_atomically(path, s.dump());
  return path;
}

// The script of the Messages and Responses tests: the tool result first (the follow-up turn's
// prompt also contains "Paris"), then the call, then a plain answer.
inline std::string write_weather_script(const std::string& name) {
  return write_test_script(name, {{"sunny-21C", kScriptSunny},
                                  {"weather in Paris", kScriptWeatherCall},
                                  {"poem", kScriptPoem}});
}

}  // namespace inkling::testing
