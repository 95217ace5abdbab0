// Helpers shared by the fuzz targets: the fuzz input as text and split into parts, a per-process
// scratch folder for targets whose API reads files, and where the real tokenizer/template live.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace inkling::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Splits at each occurrence of `sep` (at most max_parts parts; the last keeps the rest).
inline std::vector<std::string_view> split(std::string_view s, std::string_view sep,
                                           size_t max_parts) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < max_parts) {
    const size_t at = s.find(sep);
    if (at == std::string_view::npos) break;
    parts.push_back(s.substr(0, at));
    s.remove_prefix(at + sep.size());
  }
  parts.push_back(s);
  return parts;
}

// The folder holding tokenizer.json / chat_template.jinja: $INKLING_DATA_DIR, else the checkout's
// tests/data/inkling (as the tests use).
inline std::string inkling_data_dir() {
  if (const char* d = std::getenv("INKLING_DATA_DIR")) return d;
  return std::string(INKLING_SOURCE_DIR) + "/tests/data/inkling";
}

// A fresh folder under $TMPDIR for this process, removed at exit.
inline const std::filesystem::path& scratch_dir() {
  struct Dir {
    std::filesystem::path path;
    Dir() {
      std::string t = (std::filesystem::temp_directory_path() / "inkling-fuzz-XXXXXX").string();
      if (!::mkdtemp(t.data())) std::abort();
      path = t;
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static Dir dir;
  return dir.path;
}

// Empties `dir` (a sub-folder of scratch_dir()) and returns its path.
inline std::filesystem::path fresh_subdir(const std::string& name) {
  const auto p = scratch_dir() / name;
  std::error_code ec;
  std::filesystem::remove_all(p, ec);
  std::filesystem::create_directories(p);
  return p;
}

inline void write_file(const std::filesystem::path& p, std::string_view bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) std::abort();
}

}  // namespace inkling::fuzz
