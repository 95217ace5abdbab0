// --kv-type f32|bf16: the KV cache element type, the same option on every command that runs
// the model (generate, chat, bench, serve, inspect --ctx).
#pragma once

#include <map>
#include <string>

#include <CLI/CLI.hpp>

#include "inkling/engine.h"

namespace inkling::cli {

inline CLI::Option* add_kv_type_option(CLI::App& app, KvCacheType* out) {
  static const std::map<std::string, KvCacheType> kNames = {{"f32", KvCacheType::kF32},
                                                            {"bf16", KvCacheType::kBF16}};
  return app
      .add_option("--kv-type", *out,
                  "KV cache element type: f32 (exact) or bf16 (half the memory; rounds each "
                  "cached key and value)")
      ->transform(CLI::CheckedTransformer(kNames))
      ->default_str("f32");
}

}  // namespace inkling::cli
