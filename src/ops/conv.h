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

}  // namespace inkling
