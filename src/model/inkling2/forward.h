// Inkling 2's trunk (spec/inkling2.md sections 2-5): block attention residuals over per-token
// block states, the attention with clipped q/k, normalised v, sink logits and a gated output,
// static and dynamic short convs, the softcapped MoE, and Mini's looped core with its message
// gates. The embedding before it and the head after it are model/forward.cpp's, shared with
// Inkling.
#pragma once

#include "model/model.h"

namespace inkling {

// x [T, H]: the normed embeddings of every segment's rows in order (in), the final attention
// residual's output (out: what the final norm reads). Appends every segment's rows to its cache
// slots (one per layer visit); does not advance positions.
void inkling2_trunk(const Model& m, const Segment* segs, size_t n_segs, float* x, Scratch& s,
                    ThreadPool* pool, const Tap& tap);

}  // namespace inkling
