// route(): top-k selection by sigmoid(logit) + bias (ties -> lower id), then the log-sigmoid
// softmax over selected + shared logits exactly as transformers computes it in f32.
#include "ops/moe.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace inkling {

namespace {
inline float log_sigmoid(float x) {
  return std::min(x, 0.f) - std::log1p(std::exp(-std::fabs(x)));
}
inline float sigmoid(float x) {
  return 1.f / (1.f + std::exp(-x));
}
}  // namespace

void route(const float* logits, const float* bias, const RouteParams& p, int32_t* idx,
           float* weight, float* gamma) {
  const int E = p.n_routed, S = p.n_shared, k = p.top_k;
  thread_local std::vector<std::pair<float, int32_t>> score;
  score.resize(size_t(E));
  for (int e = 0; e < E; ++e) score[size_t(e)] = {sigmoid(logits[e]) + bias[e], e};
  std::partial_sort(score.begin(), score.begin() + k, score.end(),
                    [](const auto& a, const auto& b) {
                      return a.first > b.first || (a.first == b.first && a.second < b.second);
                    });
  for (int j = 0; j < k; ++j) idx[j] = score[size_t(j)].second;
  std::sort(idx, idx + k);

  if (p.sum_normalize) {
    float sum = 0.f;
    for (int j = 0; j < k; ++j) sum += (weight[j] = sigmoid(logits[idx[j]]));
    for (int j = 0; j < k; ++j) weight[j] = weight[j] / (sum + 1e-20f) * p.route_scale;
    return;
  }
  // log-sigmoid softmax over the k routed and S shared raw logits. The log-sigmoids are staged
  // in the outputs themselves (weight[k], then gamma[S]), so no buffer of the kernel's own bounds
  // k + S: any validated config fits, and the hot path stays allocation-free.
  auto lam = [&](int j) -> float& { return j < k ? weight[j] : gamma[j - k]; };
  const int n = k + S;
  for (int j = 0; j < k; ++j) weight[j] = log_sigmoid(logits[idx[j]]);
  for (int s = 0; s < S; ++s) gamma[s] = log_sigmoid(logits[E + s]);
  float mx = -INFINITY;
  for (int j = 0; j < n; ++j) mx = std::max(mx, lam(j));
  float sum = 0.f;
  for (int j = 0; j < n; ++j) sum += std::exp(lam(j) - mx);
  const float lse = mx + std::log(sum);
  for (int j = 0; j < n; ++j) lam(j) = std::exp(lam(j) - lse) * p.route_scale * p.global_scale;
}

}  // namespace inkling
