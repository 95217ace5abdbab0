// --numerics fast|exact: the arithmetic of the products (DESIGN rule 12), the same option on
// every command that loads the model (generate, chat, bench, serve, inspect). Names are the
// library's (parse_numerics). The name is checked by the command's runner first thing, before
// any model is touched, so a bad value fails with one `error: --numerics: ...` line (exit 2) as
// the other flags checked after parsing do.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "inkling/numerics.h"
#include "inkling/status.h"

namespace inkling::cli {

inline CLI::Option* add_numerics_option(CLI::App& app, std::string* name) {
  return app.add_option(
      "--numerics", *name,
      "arithmetic of the products: fast (activations rounded as llama.cpp and transformers bf16 "
      "do: bf16 against bf16 (kept f32 where VDPBF16PS is missing or slow), NVFP4 and MXFP8 "
      "weights, int8 per small block against MLX affine "
      "ones; int8 per block of 32 against 4-bit affine and NVFP4 on AVX2 CPUs without AVX-512 and "
      "against NVFP4 on Intel's, whose VDPBF16PS is slow) or "
      "exact (f32 activations; parity with transformers f32)");
}

// The mode --numerics names, or the one-line error for it ("--numerics: numerics 'x': ...").
inline Result<Numerics> numerics_option(const std::string& name) {
  auto n = parse_numerics(name);
  if (!n.ok()) return Status::error("--numerics: " + n.status().message());
  return n.value();
}

}  // namespace inkling::cli
