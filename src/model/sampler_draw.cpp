// The sampler's last stage, the draw (see sampler.h): temperature, then top-k, top-p (nucleus)
// and min-p filters, then a draw from a splitmix64 stream seeded by the caller. Same seed + same
// logits = same token. Work is O(vocab) except for top-p, which sorts only as many of the most
// likely tokens as the nucleus needs.
#include "inkling/sampler.h"

#include <algorithm>
#include <cmath>

#include "inkling/status.h"

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

double Sampler::next_uniform() {
  return double(splitmix64(state_) >> 11) * (1.0 / 9007199254740992.0);
}

int32_t Sampler::sample(std::span<const float> logits) {
  if (p_.temperature <= 0.f || p_.top_k == 1) return argmax(logits);
  const size_t keep = candidates(logits);
  if (keep == 0) return argmax(logits);
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += cand_[i].first;
  double r = next_uniform() * total;
  for (size_t i = 0; i < keep; ++i) {
    r -= cand_[i].first;
    if (r <= 0) return cand_[i].second;
  }
  return cand_[keep - 1].second;
}

void Sampler::filtered(std::span<const float> logits, std::vector<float>* probs) {
  probs->assign(logits.size(), 0.f);
  const size_t keep = p_.temperature <= 0.f || p_.top_k == 1 ? 0 : candidates(logits);
  if (keep == 0) {
    (*probs)[size_t(argmax(logits))] = 1.f;
    return;
  }
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += cand_[i].first;
  for (size_t i = 0; i < keep; ++i)
    (*probs)[size_t(cand_[i].second)] = float(cand_[i].first / total);
}

std::optional<int32_t> Sampler::distribution(std::span<const float> logits,
                                             std::vector<float>* probs) {
  INK_CHECK(!logits.empty());
  work_.assign(logits.begin(), logits.end());
  std::span<float> w(work_);
  apply_penalties(w);
  if (std::optional<int32_t> forced = apply_constraints(w)) return forced;
  filtered(w, probs);
  return std::nullopt;
}

double Sampler::uniform() {
  return next_uniform();
}

// Fills cand_ with (unnormalised weight, id) of the tokens the draw may pick, best first where
// a filter sorted them, and returns how many (0: no finite logit).
size_t Sampler::candidates(std::span<const float> logits) {
  cand_.clear();
  float mx = -INFINITY;
  for (size_t i = 0; i < logits.size(); ++i)
    if (std::isfinite(logits[i])) {
      cand_.emplace_back(logits[i] / p_.temperature, int32_t(i));
      mx = std::max(mx, cand_.back().first);
    }
  if (cand_.empty()) return 0;
  // Larger first; ties by lower id, so the order (and thus the draw) is fully determined.
  auto before = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  size_t n = cand_.size();
  if (p_.top_k > 0 && size_t(p_.top_k) < n) {
    std::nth_element(cand_.begin(), cand_.begin() + p_.top_k, cand_.end(), before);
    n = size_t(p_.top_k);
  }
  // Unnormalised probabilities of the survivors.
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    cand_[i].first = std::exp(cand_[i].first - mx);
    sum += cand_[i].first;
  }
  size_t keep = n;
  bool sorted = false;
  if (p_.top_p < 1.f) {
    // The nucleus is a prefix of the sorted order. Find a k whose top-k mass reaches top_p with
    // O(n) selections (k grows 4x), then sort only those k.
    const double target = double(p_.top_p) * sum;
    size_t k = std::min<size_t>(n, 64);
    for (;;) {
      if (k < n) std::nth_element(cand_.begin(), cand_.begin() + k, cand_.begin() + n, before);
      double mass = 0;
      for (size_t i = 0; i < k; ++i) mass += cand_[i].first;
      if (mass >= target || k == n) break;
      k = std::min(n, k * 4);
    }
    std::sort(cand_.begin(), cand_.begin() + k, before);
    double acc = 0;
    size_t i = 0;
    while (i < k && acc < target) acc += cand_[i++].first;
    keep = std::max<size_t>(i, 1);
    sorted = true;
  }
  if (p_.min_p > 0.f) {
    // Tokens at least min_p x the most likely one; also a prefix of the sorted order.
    const float floor = p_.min_p;  // relative to the most likely token, whose weight is exp(0) = 1
    if (sorted) {
      size_t k = 1;
      while (k < keep && cand_[k].first >= floor) ++k;
      keep = k;
    } else {
      keep = size_t(std::partition(cand_.begin(), cand_.begin() + n,
                                   [&](const auto& c) { return c.first >= floor; }) -
                    cand_.begin());
    }
  }
  return keep;
}

}  // namespace inkling
