// Shared helpers for the tokenizer tests (declared in tokenizer_test_util.h):
// the real Inkling vocabulary loaded once per process, from tokenizer.json and from
// tiktoken/tokenizer.model, paths into tests/data, and temporary folders.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "inkling/tokenizer.h"
#include "tokenizer_test_util.h"

namespace inkling::testing {

std::string shared_data(const std::string& rel) {
  return std::string(INKLING_SOURCE_DIR) + "/tests/data/" + rel;
}

// Loaded once, shared by every test (also exercises sharing one Tokenizer).
std::shared_ptr<const Tokenizer> hf_tokenizer() {
  static const auto tok = [] {
    auto r = Tokenizer::load_hf_json(shared_data("inkling/tokenizer.json"));
    if (!r.ok()) ADD_FAILURE() << r.status().message();
    return r.ok() ? r.value() : nullptr;
  }();
  return tok;
}

// A fresh temporary folder (removed by the caller if it cares; lives under the temp dir).
std::filesystem::path temp_dir(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path p =
      fs::temp_directory_path() / ("inkling_tok_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

// A model folder of symlinks: tiktoken/tokenizer.model + tokenizer_config.json, no
// tokenizer.json, so Tokenizer::load takes the tiktoken path (as for the real HF repo layout).
std::shared_ptr<const Tokenizer> tiktoken_tokenizer() {
  static const auto tok = []() -> std::shared_ptr<const Tokenizer> {
    namespace fs = std::filesystem;
    const fs::path dir = temp_dir("tiktoken_model");
    fs::create_directories(dir / "tiktoken");
    fs::create_symlink(fs::absolute(shared_data("inkling/tiktoken/tokenizer.model")),
                       dir / "tiktoken" / "tokenizer.model");
    fs::create_symlink(fs::absolute(shared_data("inkling/tokenizer_config.json")),
                       dir / "tokenizer_config.json");
    auto r = Tokenizer::load(dir.string());
    fs::remove_all(dir);
    if (!r.ok()) {
      ADD_FAILURE() << r.status().message();
      return nullptr;
    }
    return r.value();
  }();
  return tok;
}

}  // namespace inkling::testing
