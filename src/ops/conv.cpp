// short_conv: channel-vectorised loop over taps; history comes from the state for the first
// K-1 tokens and from u afterwards. Output is written after the inputs it needs are read.
#include "ops/conv.h"

#include <cstring>
#include <vector>

namespace inkling {

void short_conv(const float* u, int64_t T, int64_t C, const float* w, int64_t K, float* state,
                float* out) {
  // Keep a copy of the last K-1 inputs (the new state) before `out` may overwrite `u`.
  thread_local std::vector<float> hist;
  const int64_t H = K - 1;
  if (hist.size() < size_t((H + T) * C)) hist.resize(size_t((H + T) * C));
  std::memcpy(hist.data(), state, size_t(H * C) * sizeof(float));
  std::memcpy(hist.data() + H * C, u, size_t(T * C) * sizeof(float));
  for (int64_t t = 0; t < T; ++t) {
    float* o = out + t * C;
    const float* cur = hist.data() + (H + t) * C;
    for (int64_t c = 0; c < C; ++c) {
      float acc = 0.f;
      for (int64_t j = 0; j < K; ++j) acc += w[c * K + j] * hist[size_t((t + j) * C + c)];
      o[c] = cur[c] + acc;
    }
  }
  std::memcpy(state, hist.data() + T * C, size_t(H * C) * sizeof(float));
}

void dynamic_short_conv(const float* u, int64_t T, int64_t C, const float* w, const float* dyn,
                        int64_t head, int64_t K, float* state, float* out) {
  thread_local std::vector<float> hist;
  const int64_t H = K - 1, nheads = C / head;
  if (hist.size() < size_t((H + T) * C)) hist.resize(size_t((H + T) * C));
  std::memcpy(hist.data(), state, size_t(H * C) * sizeof(float));
  std::memcpy(hist.data() + H * C, u, size_t(T * C) * sizeof(float));
  for (int64_t t = 0; t < T; ++t) {
    float* o = out + t * C;
    const float* d = dyn + t * nheads * K;
    for (int64_t c = 0; c < C; ++c) {
      const float* dh = d + (c / head) * K;
      float acc = 0.f;
      for (int64_t lag = 0; lag < K; ++lag)
        acc += (w[lag * C + c] + dh[lag]) * hist[size_t((H + t - lag) * C + c)];
      o[c] = hist[size_t((H + t) * C + c)] + acc;
    }
  }
  std::memcpy(state, hist.data() + T * C, size_t(H * C) * sizeof(float));
}

}  // namespace inkling
