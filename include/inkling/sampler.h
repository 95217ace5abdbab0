// Token sampling: a pure function of (logits, params, rng state). Temperature 0 = greedy
// (argmax, lowest id on ties).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace inkling {

struct SamplingParams {
  float temperature = 1.0f;
  int top_k = 0;       // 0 = off
  float top_p = 1.0f;  // 1 = off
  float min_p = 0.0f;  // 0 = off
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& p);
  int32_t sample(std::span<const float> logits);
  const SamplingParams& params() const { return p_; }

 private:
  SamplingParams p_;
  uint64_t state_;
  std::vector<std::pair<float, int32_t>> cand_;  // reused across calls
  double next_uniform();
};

int32_t argmax(std::span<const float> logits);

}  // namespace inkling
