// SwiGLU blocks and the MoE branch as three named steps: route() (ops/moe), experts() (routed
// SwiGLUs over tokens grouped by expert, weighted after the down projection), combine() (routed
// sum + shared experts weighted before their down projection).
#pragma once

#include "model/model.h"
#include "model/observe.h"

namespace inkling {

// out[T, H] = down( silu(gate x) * (up x) * row_scale[t] ); gu: scratch [T, 2W]. Gate and up
// halves of one fused tensor run as one product over the whole tensor (one read stream, one
// dispatch). row_scale may be null (no scaling) and is read with stride `scale_stride`.
void swiglu(const SwiGluWeights& w, const float* x, int64_t T, int64_t H, int64_t W, float* gu,
            const float* row_scale, int64_t scale_stride, float* out, ThreadPool* pool);

// out [T, H] = routed experts' weighted sum + shared experts'. `tap` (prefix "layers.N.") sees
// router_logits, router_topk_ids / _weights, router_shared_gammas, mlp.experts and
// mlp.shared_experts.
void moe_block(const ModelConfig& c, const MoeWeights& w, const float* m, int64_t T, Scratch& s,
               float* out, ThreadPool* pool, const Tap& tap = {});

}  // namespace inkling
