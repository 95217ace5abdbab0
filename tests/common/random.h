// Deterministic random data for tests: normal-distributed floats from a seeded generator.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace inkling::testing {

inline std::vector<float> randn(size_t n, uint32_t seed, float scale = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace inkling::testing
