// One decoder layer as a function of its own weights, geometry and caches: nothing in it knows
// where the layer sits in a model. The trunk runs it once per layer; a multi-token-prediction
// depth is the same kind of layer with its own LayerWeights and LayerCaches, run the same way.
#pragma once

#include <cstdint>
#include <span>

#include "base/thread_pool.h"
#include "model/cache.h"
#include "model/config.h"
#include "model/observe.h"
#include "model/weights.h"

namespace inkling {

struct Scratch;

// One sequence's rows in a layer call: rows [pos, pos + n) of that sequence, and its cache for
// this layer (KV rows, four conv states).
struct LayerSegment {
  LayerCache* cache = nullptr;
  int64_t pos = 0;
  int64_t n = 0;
  ConvTrace* trace = nullptr;  // optional: receives the four convs' inputs (model/cache.h)
};

// x [T, H] in place, T = the segments' rows in order:
//   x += SC_attn(Attention(RMSNorm(x)));  x += SC_mlp(MLP_or_MoE(RMSNorm(x)))
// `c` gives the model-wide constants (hidden, eps, conv width, relative-position and MoE
// parameters); `spec` this layer's geometry (heads, head_dim, sliding or global, dense or MoE).
// Appends each segment's rows to its cache; does not advance any position.
void forward_layer(const ModelConfig& c, const LayerSpec& spec, const LayerWeights& w, float* x,
                   std::span<const LayerSegment> segs, Scratch& s, ThreadPool* pool,
                   const Tap& tap = {});

}  // namespace inkling
