// The memory a run of a quantized model needs besides its weights, from the config alone: the KV
// cache at a context length (global layers keep every position, sliding layers a ring of
// W - 1 + chunk rows; one cache per layer visit, so Inkling 2 Mini's looped core counts each
// pass), the conv states and the session scratch of the engine's default prefill chunk. What the
// quantize report prints and the `auto` recipe's memory budget subtracts.
#pragma once

#include <cstdint>

#include "model/config.h"

namespace inkling::quant {

inline constexpr int64_t kRunPrefillChunk = 256;  // the engine's default chunk (EngineOptions)

struct RunMemory {
  int64_t context = 0;
  double global_per_token = 0;  // f32 k and v bytes per token over the global layers
  double sliding = 0;           // f32 ring bytes of the sliding layers
  int n_global = 0, n_sliding = 0;
  int64_t ring = 0;  // rows of a sliding ring
  double conv = 0, scratch = 0;

  double kv_f32() const { return global_per_token * double(context) + sliding; }
  double kv_bf16() const { return kv_f32() / 2; }
  // Everything but the weights, with an f32 KV cache (the engine's default).
  double besides_weights() const { return kv_f32() + conv + scratch; }
};

RunMemory run_memory(const ModelConfig& c, int64_t context);

}  // namespace inkling::quant
