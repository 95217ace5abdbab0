// --kv-type f32|bf16: the KV cache element type, the same option on every command that runs
// the model (generate, chat, bench, serve, inspect --ctx). Names are the library's
// (parse_kv_cache_type).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "inkling/engine.h"

namespace inkling::cli {

inline CLI::Option* add_kv_type_option(CLI::App& app, KvCacheType* out) {
  return app
      .add_option_function<std::string>(
          "--kv-type",
          [out](const std::string& name) {
            auto t = parse_kv_cache_type(name);
            if (!t.ok()) throw CLI::ValidationError("--kv-type", t.status().message());
            *out = t.value();
          },
          "KV cache element type: f32 (exact) or bf16 (half the memory; rounds each cached key "
          "and value)")
      ->default_str("f32");
}

}  // namespace inkling::cli
