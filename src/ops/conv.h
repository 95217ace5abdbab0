// Depthwise causal short convolution with its own residual (Inkling "sconv"):
//   out[t, c] = u[t, c] + sum_{j<K} w[c, j] * u[t-(K-1)+j, c]
// The last tap multiplies the current token. `state` [K-1, C] holds the previous K-1 inputs
// (zeros at the start of a sequence) and is advanced past the T new tokens.
#pragma once

#include <cstdint>

namespace inkling {

// u, out: [T, C] (may alias); w: [C, K]; state: [K-1, C] f32.
void short_conv(const float* u, int64_t T, int64_t C, const float* w, int64_t K, float* state,
                float* out);

// Inkling 2's dynamic short convolution (full-attention K and V): per-token taps shared within
// each head of `head` channels,
//   out[t, c] = u[t, c] + sum_{lag<K} (w[lag, c] + dyn[t, (c / head) * K + lag]) * u[t - lag, c]
// (lag 0 = the current token; the caller applies Inkling 2's 1/sqrt(2K+1)). w: [K, C] static taps;
// dyn: [T, (C / head) * K]; state as for short_conv.
void dynamic_short_conv(const float* u, int64_t T, int64_t C, const float* w, const float* dyn,
                        int64_t head, int64_t K, float* state, float* out);

}  // namespace inkling
