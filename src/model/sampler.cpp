// Sampler: temperature, then top-k, top-p (nucleus) and min-p filters, then a draw from a
// splitmix64/xorshift stream seeded by the caller. Same seed + same logits = same token.
#include "inkling/sampler.h"

#include <algorithm>
#include <cmath>

namespace inkling {

int32_t argmax(std::span<const float> logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[size_t(best)]) best = int32_t(i);
  return best;
}

static uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

Sampler::Sampler(const SamplingParams& p) : p_(p), state_(p.seed) {}

double Sampler::next_uniform() {
  return double(splitmix64(state_) >> 11) * (1.0 / 9007199254740992.0);
}

int32_t Sampler::sample(std::span<const float> logits) {
  if (p_.temperature <= 0.f || p_.top_k == 1) return argmax(logits);
  cand_.clear();
  for (size_t i = 0; i < logits.size(); ++i)
    if (std::isfinite(logits[i])) cand_.emplace_back(logits[i] / p_.temperature, int32_t(i));
  if (cand_.empty()) return argmax(logits);
  auto by_logit = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  size_t n = cand_.size();
  if (p_.top_k > 0 && size_t(p_.top_k) < n) {
    std::partial_sort(cand_.begin(), cand_.begin() + p_.top_k, cand_.end(), by_logit);
    n = size_t(p_.top_k);
  } else {
    std::sort(cand_.begin(), cand_.end(), by_logit);
  }
  // Softmax over the survivors (sorted, largest first).
  const float mx = cand_[0].first;
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    cand_[i].first = std::exp(cand_[i].first - mx);
    sum += cand_[i].first;
  }
  size_t keep = n;
  if (p_.top_p < 1.f) {
    double acc = 0;
    for (size_t i = 0; i < n; ++i) {
      acc += cand_[i].first / sum;
      if (acc >= p_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  if (p_.min_p > 0.f) {
    const float floor = p_.min_p * cand_[0].first;  // relative to the most likely token
    size_t k = 1;
    while (k < keep && cand_[k].first >= floor) ++k;
    keep = k;
  }
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += cand_[i].first;
  double r = next_uniform() * total;
  for (size_t i = 0; i < keep; ++i) {
    r -= cand_[i].first;
    if (r <= 0) return cand_[i].second;
  }
  return cand_[keep - 1].second;
}

}  // namespace inkling
