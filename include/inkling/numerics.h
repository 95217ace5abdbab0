// The two numerics modes of an engine (DESIGN rule 12), chosen once when it loads and bound into
// every weight's kernels: exact (f32 activations in every product) or fast (activations rounded
// for the product as the peers do: bf16 against bf16 weights, int8 with an f32 scale per small
// block against quantized ones). Norms, softmax, the router, the relative-bias logits, conv states
// and the KV cache are the same in both.
#pragma once

#include <cstdint>
#include <string_view>

#include "inkling/status.h"

namespace inkling {

enum class Numerics : uint8_t {
  kExact,  // every product takes f32 activations: parity with transformers f32 at 1e-4
  kFast,   // activations rounded once per product (bf16 / int8 per block); f32 accumulation
};

// "exact" / "fast" (the spelling of --numerics and the server's reports).
const char* numerics_name(Numerics n);
Result<Numerics> parse_numerics(std::string_view name);

}  // namespace inkling
