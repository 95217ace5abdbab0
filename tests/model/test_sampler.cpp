// Sampler: greedy, determinism per seed, each filter's support against a full-sort reference,
// and the empirical distribution against softmax(logits / temperature).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "../common/random.h"
#include "inkling/sampler.h"

namespace inkling {
namespace {

std::vector<float> random_logits(size_t n, uint32_t seed) {
  return testing::randn(n, seed, 3.f);
}

// The allowed set by definition: sort everything, apply top-k, top-p (on the top-k mass), min-p.
std::set<int32_t> reference_support(const std::vector<float>& logits, const SamplingParams& p) {
  std::vector<int32_t> idx(logits.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) {
    return logits[size_t(a)] > logits[size_t(b)] ||
           (logits[size_t(a)] == logits[size_t(b)] && a < b);
  });
  size_t n = p.top_k > 0 ? std::min(idx.size(), size_t(p.top_k)) : idx.size();
  const double mx = logits[size_t(idx[0])] / p.temperature;
  std::vector<double> w(n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i)
    sum += (w[i] = std::exp(logits[size_t(idx[i])] / p.temperature - mx));
  size_t keep = n;
  if (p.top_p < 1.f) {
    double acc = 0;
    for (size_t i = 0; i < n; ++i) {
      acc += w[i];
      if (acc >= p.top_p * sum) {
        keep = i + 1;
        break;
      }
    }
  }
  if (p.min_p > 0.f) {
    size_t k = 1;
    while (k < keep && w[k] >= p.min_p) ++k;
    keep = k;
  }
  return std::set<int32_t>(idx.begin(), idx.begin() + long(keep));
}

TEST(Sampler, GreedyIsArgmaxWithLowestIdOnTies) {
  std::vector<float> l = {0.f, 3.f, 1.f, 3.f};
  EXPECT_EQ(argmax(l), 1);
  SamplingParams p;
  p.temperature = 0.f;
  EXPECT_EQ(Sampler(p).sample(l), 1);
  p.temperature = 1.f;
  p.top_k = 1;
  EXPECT_EQ(Sampler(p).sample(l), 1);
}

TEST(Sampler, SameSeedSameDraws) {
  auto l = random_logits(1000, 1);
  SamplingParams p;
  p.seed = 42;
  Sampler a(p), b(p);
  p.seed = 43;
  Sampler c(p);
  int differ = 0;
  for (int i = 0; i < 200; ++i) {
    const int32_t x = a.sample(l);
    EXPECT_EQ(x, b.sample(l));
    differ += x != c.sample(l);
  }
  EXPECT_GT(differ, 20);
}

TEST(Sampler, FiltersMatchReferenceSupport) {
  const auto l = random_logits(200058, 7);  // Inkling's vocabulary size
  struct Case {
    float t, top_p, min_p;
    int top_k;
  };
  for (const Case c :
       {Case{1.f, 0.9f, 0.f, 0}, Case{0.7f, 0.5f, 0.f, 0}, Case{1.f, 1.f, 0.05f, 0},
        Case{1.f, 0.95f, 0.02f, 40}, Case{1.3f, 1.f, 0.f, 20}, Case{2.f, 0.99f, 0.f, 0}}) {
    SamplingParams p;
    p.temperature = c.t, p.top_p = c.top_p, p.min_p = c.min_p, p.top_k = c.top_k, p.seed = 5;
    const auto allowed = reference_support(l, p);
    Sampler s(p);
    for (int i = 0; i < 100; ++i) {
      const int32_t x = s.sample(l);
      ASSERT_TRUE(allowed.count(x))
          << "token " << x << " outside the support (t=" << c.t << " top_p=" << c.top_p
          << " min_p=" << c.min_p << " top_k=" << c.top_k << ", support " << allowed.size() << ")";
    }
  }
}

TEST(Sampler, DistributionFollowsSoftmax) {
  const std::vector<float> l = {1.f, 0.f, -1.f, 2.f, 0.5f};
  SamplingParams p;
  p.temperature = 0.8f;
  p.seed = 9;
  Sampler s(p);
  const int draws = 40000;
  std::map<int32_t, int> count;
  for (int i = 0; i < draws; ++i) ++count[s.sample(l)];
  double z = 0;
  for (float x : l) z += std::exp(x / 0.8);
  for (size_t i = 0; i < l.size(); ++i) {
    const double want = std::exp(l[i] / 0.8) / z;
    const double got = double(count[int32_t(i)]) / draws;
    EXPECT_NEAR(got, want, 5 * std::sqrt(want * (1 - want) / draws) + 1e-3) << "token " << i;
  }
}

TEST(Sampler, NonFiniteLogitsAreNeverDrawn) {
  std::vector<float> l = {-INFINITY, 0.f, NAN, 0.f};
  SamplingParams p;
  p.seed = 1;
  Sampler s(p);
  for (int i = 0; i < 100; ++i) {
    const int32_t x = s.sample(l);
    EXPECT_TRUE(x == 1 || x == 3);
  }
}

}  // namespace
}  // namespace inkling
