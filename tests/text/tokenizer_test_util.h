// Helpers shared by the tokenizer tests, defined in test_tokenizer_util.cpp.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "inkling/tokenizer.h"

namespace inkling::testing {

std::string shared_data(const std::string& rel);          // tests/data/<rel>
std::shared_ptr<const Tokenizer> hf_tokenizer();          // inkling/tokenizer.json, once
std::shared_ptr<const Tokenizer> tiktoken_tokenizer();    // tiktoken/tokenizer.model, once
std::filesystem::path temp_dir(const std::string& name);  // fresh, under the temp dir

}  // namespace inkling::testing
