// Cost model of one token from the config alone: bytes a decode step must read (active weights,
// KV cache and conv states) and FLOPs of a prefill token. Used by `inkling bench` for its
// roofline ratios; pure arithmetic, no weights are touched.
#pragma once

#include <cstdint>
#include <string>

#include "model/config.h"

namespace inkling {

// Bytes per stored weight element by role. Dense checkpoints use one value for both; quantized
// ones (MLX affine experts, NVFP4 experts) have cheaper experts, scales and biases included.
struct WeightBytes {
  double dense = 2.0;   // attention, dense MLP, router, lm_head, embedding (bf16 = 2)
  double expert = 2.0;  // routed and shared expert matrices
};

struct TokenCost {
  // Decode: bytes read per generated token at the given context.
  double attn_weight_bytes = 0;  // q/k/v/r/o projections of every layer
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

// Number of weight elements: everything the expert matrices hold (all E routed + S shared,
// every MoE layer) and everything else that is a matrix (attention, dense MLP, router, embed,
// lm_head at the padded vocabulary). Used to turn checkpoint bytes into WeightBytes.
struct ParamCounts {
  double expert = 0, other = 0;
};
ParamCounts param_counts(const ModelConfig& c);

}  // namespace inkling
