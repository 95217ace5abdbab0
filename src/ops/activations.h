// Inkling 2's tanh- and sigmoid-based elementwise functions (spec inkling2.md: the head's logit
// softcap, the softcapped SwiGLU of every expert, the attention output gate, the loop's
// message-gate mix). Each has a vector kernel
// (Highway's Tanh and Exp, as the attention's online softmax uses Exp) and a scalar twin with
// std::tanh / std::exp in the same order of operations; the two agree within a few ulps
// (tests/ops/test_activations.cpp). All are per element, so any split of the rows gives the same
// bits (row-count invariance).
#pragma once

#include <cstdint>

namespace inkling {

// x[i] = tanh(x[i] / cap) * cap for n values, in place.
void softcap(float* x, int64_t n, float cap);
void softcap_scalar(float* x, int64_t n, float cap);

// One token's softcapped SwiGLU: for i < W, with g, u gate and up of column i (interleaved: at
// row[2i], row[2i + 1]; else at row[i], row[W + i]),
//   out[i] = tanh(g / gc) * gc * sigmoid(g) * (tanh(u / uc) * uc) * scale.
// out may be row itself, or any address at or below it (it is written over the pairs already read).
void softcapped_swiglu(const float* row, int64_t W, bool interleaved, float gc, float uc,
                       float scale, float* out);
void softcapped_swiglu_scalar(const float* row, int64_t W, bool interleaved, float gc, float uc,
                              float scale, float* out);

// x[i] *= 1 / (1 + exp(-g[i])) for n values (Inkling 2's attention output gate).
void sigmoid_gate(float* x, const float* g, int64_t n);
void sigmoid_gate_scalar(float* x, const float* g, int64_t n);

// out[i] = (1 - tanh(f[i])) * h[i] + tanh(a[i]) * m[i] for n values; out may alias h or m.
void tanh_gate_mix(const float* f, const float* a, const float* h, const float* m, int64_t n,
                   float* out);
void tanh_gate_mix_scalar(const float* f, const float* a, const float* h, const float* m, int64_t n,
                          float* out);

}  // namespace inkling
