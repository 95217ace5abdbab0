// Cost model of one token from the config alone: bytes a decode step must read (active weights,
// KV cache and conv states) and FLOPs of a prefill token. Used by `inkling bench` for its
// roofline ratios; pure arithmetic, no weights are touched.
#pragma once

#include <cstdint>
#include <string>

#include "model/config.h"

namespace inkling {

// Bytes per stored weight element by role (bf16 = 2; quantized formats count their scales and
// biases too), as bound from the checkpoint: ModelInfo::storage gives bytes and elements per
// module group, so a checkpoint that quantizes some roles and not others is costed exactly.
struct WeightBytes {
  double attention = 2.0;  // q/k/v/r/o projections
  double dense_mlp = 2.0;  // dense SwiGLU layers
  double router = 2.0;
  double expert = 2.0;  // routed experts
  double shared = 2.0;  // shared experts
  double head = 2.0;    // lm_head
  double embed = 2.0;   // one embedding row per token
  double gates = 2.0;   // Inkling 2's message gates (down, forget, gain)
  double kv = 4.0;      // one cached key or value element (f32; 2 for a bf16 KV cache)
};

struct TokenCost {
  // Decode: bytes read per generated token at the given context.
  double attn_weight_bytes = 0;  // q/k/v/r/o projections of every layer (and message gates)
  double mlp_weight_bytes = 0;   // dense MLPs + router + top-k and shared experts
  double head_bytes = 0;         // lm_head rows of the unpadded vocabulary + one embedding row
  double small_bytes = 0;        // norms, conv weights, relative-position tables (f32)
  double kv_bytes = 0;           // cached keys and values attended to (f32)
  double state_bytes = 0;        // conv states read and written (f32)
  double bytes_per_token() const {
    return attn_weight_bytes + mlp_weight_bytes + head_bytes + small_bytes + kv_bytes + state_bytes;
  }
  // Prefill: FLOPs per prompt token (2 per multiply-add), averaged over a prompt.
  double matmul_flops = 0;     // projections, MLP/experts, router, lm_head (once per prompt)
  double attention_flops = 0;  // q.k, p.v and the relative bias over the attended keys
  double flops_per_token() const { return matmul_flops + attention_flops; }
  std::string describe() const;  // one line per term, for humans
};

// Cost of decoding one token with `context` tokens already cached.
TokenCost decode_cost(const ModelConfig& c, const WeightBytes& wb, int64_t context);

// FLOPs per token of prefilling a fresh prompt of `prompt` tokens (logits of the last only).
TokenCost prefill_cost(const ModelConfig& c, int64_t prompt);

}  // namespace inkling
