#pragma once

#include <string>

namespace inkling::cli {

// `s` without leading and trailing spaces and tabs.
inline std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

}  // namespace inkling::cli
