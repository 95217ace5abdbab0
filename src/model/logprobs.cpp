// The sampler's logprobs stage (see sampler.h): log-softmax of the processed logits at the chosen
// token, and the most likely alternatives, best first with ties broken by the lower id.
#include <algorithm>
#include <cmath>
#include <limits>

#include "inkling/sampler.h"

namespace inkling {

SampledToken token_logprobs(std::span<const float> logits, int32_t id, int top_n) {
  SampledToken out;
  out.id = id;
  float mx = -std::numeric_limits<float>::infinity();
  for (float x : logits) mx = std::max(mx, x);
  double sum = 0;
  for (float x : logits) sum += std::exp(double(x - mx));
  const float lse = mx + float(std::log(sum));
  out.logprob = logits[size_t(id)] - lse;
  if (top_n <= 0) return out;
  // A sorted list of at most top_n (logit, id): a token enters only above the current last
  // (so of equal logits the lower id stays) and after every entry it does not beat.
  std::vector<std::pair<float, int32_t>> top;
  top.reserve(size_t(top_n) + 1);
  for (size_t i = 0; i < logits.size(); ++i) {
    if (top.size() == size_t(top_n) && logits[i] <= top.back().first) continue;
    auto pos =
        std::find_if(top.begin(), top.end(), [&](const auto& e) { return logits[i] > e.first; });
    top.insert(pos, {logits[i], int32_t(i)});
    if (top.size() > size_t(top_n)) top.pop_back();
  }
  out.top.reserve(top.size());
  for (auto [x, i] : top) out.top.push_back({i, x - lse});
  return out;
}

}  // namespace inkling
