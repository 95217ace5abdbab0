// Helpers for tests that read the committed reference fixtures (tests/fixtures/<name>/...).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "base/npy.h"

namespace inkling::testing {

inline std::string fixture_dir(const std::string& name) {
  return std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/" + name;
}

inline bool fixture_exists(const std::string& name) {
  return std::filesystem::exists(fixture_dir(name) + "/ref/logits.npy");
}

inline nlohmann::json read_json(const std::string& path) {
  auto text = read_text_file(path);
  if (!text.ok()) return nlohmann::json();
  return nlohmann::json::parse(text.value(), nullptr, false);
}

inline std::vector<int32_t> json_ids(const nlohmann::json& j, const char* key) {
  std::vector<int32_t> ids;
  if (j.is_object() && j.contains(key))
    for (const auto& v : j[key]) ids.push_back(v.get<int32_t>());
  return ids;
}

}  // namespace inkling::testing
