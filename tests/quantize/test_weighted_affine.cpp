// The weighted scale/bias search (quantize/weighted_affine.h): never worse than mx.quantize's
// rule, close to a brute-force search over a dense grid of ranges on small groups, weighing the
// columns it is told to, and writing codes the MLX reader decodes to the values it scored.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "ops/affine_quantize.h"
#include "quantize/weighted_affine.h"

namespace inkling {
namespace {

float load_dt(DType t, const uint8_t* p) {
  uint16_t h = 0;
  switch (t) {
    case DType::BF16:
      std::memcpy(&h, p, 2);
      return bf16_to_f32(h);
    case DType::F16:
      std::memcpy(&h, p, 2);
      return f16_to_f32(h);
    default: {
      float f = 0;
      std::memcpy(&f, p, 4);
      return f;
    }
  }
}

// Weighted squared error of a packed row as the reader decodes it (s * q + b in f32).
double row_error(const std::vector<float>& w, const float* imp, int bits, int group, DType dt,
                 const std::vector<uint8_t>& codes, const std::vector<uint8_t>& scales,
                 const std::vector<uint8_t>& biases) {
  const size_t ssz = dtype_size(dt);
  double err = 0;
  for (size_t c = 0; c < w.size(); ++c) {
    const float s = load_dt(dt, scales.data() + (c / size_t(group)) * ssz);
    const float b = load_dt(dt, biases.data() + (c / size_t(group)) * ssz);
    const float d = s * float(affine_code_at(codes.data(), int64_t(c), bits)) + b;
    const double e = double(w[c]) - double(d);
    err += (imp ? imp[c] : 1.0) * e * e;
  }
  return err;
}

struct Row {
  std::vector<float> w, imp;
};

// Gaussian values with a few outliers; importance log-normal (a few columns dominate).
Row random_row(std::mt19937& rng, int64_t cols) {
  std::normal_distribution<float> n(0.f, 1.f);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  Row r;
  for (int64_t c = 0; c < cols; ++c) {
    float v = n(rng) * 0.02f;
    if (u(rng) < 0.03f) v *= 8.f;
    r.w.push_back(v);
    r.imp.push_back(std::exp(2.f * n(rng)));
  }
  return r;
}

TEST(WeightedAffine, NeverWorseThanMlxRuleAtEveryWidthGroupAndDtype) {
  std::mt19937 rng(7);
  double gain[2] = {0, 0};
  int count[2] = {0, 0};
  for (DType dt : {DType::BF16, DType::F16, DType::F32})
    for (int bits : {2, 3, 4, 5, 6, 8})
      for (int group : {32, 64, 128})
        for (bool weighted : {false, true}) {
          const int64_t cols = 2 * group;
          for (int trial = 0; trial < 4; ++trial) {
            const Row r = random_row(rng, cols);
            const float* imp = weighted ? r.imp.data() : nullptr;
            std::vector<uint8_t> c0(size_t(affine_code_bytes(cols, bits))), c1 = c0;
            std::vector<uint8_t> s0(size_t(affine_scale_bytes(cols, group, dt))), s1 = s0, b0 = s0,
                                                                                  b1 = s0;
            ASSERT_TRUE(affine_quantize_row(r.w.data(), cols, bits, group, dt, c0.data(), s0.data(),
                                            b0.data()));
            ASSERT_TRUE(affine_quantize_row_weighted(r.w.data(), imp, cols, bits, group, dt,
                                                     c1.data(), s1.data(), b1.data()));
            const double e0 = row_error(r.w, imp, bits, group, dt, c0, s0, b0);
            const double e1 = row_error(r.w, imp, bits, group, dt, c1, s1, b1);
            EXPECT_LE(e1, e0 * (1 + 1e-9)) << "bits " << bits << " group " << group;
            if (bits <= 3) gain[weighted] += e1 / e0, ++count[weighted];
          }
        }
  // At 2-3 bits the search lowers the error clearly on average, more so when weighted.
  std::printf("error vs mx.quantize at 2-3 bits: %.3f unweighted, %.3f weighted\n",
              gain[0] / count[0], gain[1] / count[1]);
  EXPECT_LT(gain[0] / count[0], 0.9);
  EXPECT_LT(gain[1] / count[1], 0.8);
}

// The brute-force twin: every range [lo, hi] on a dense grid around the group's own, each with
// its nearest codes, scored by the same error. The search looks at far fewer candidates.
double brute_force(const float* w, const float* imp, int n, int bits, DType dt) {
  float lo = w[0], hi = w[0];
  for (int j = 1; j < n; ++j) lo = std::min(lo, w[j]), hi = std::max(hi, w[j]);
  const float r = hi - lo, nmax = float((1 << bits) - 1);
  double best = std::numeric_limits<double>::infinity();
  constexpr int kGrid = 160;
  for (int a = 0; a <= kGrid; ++a)
    for (int b = 0; b <= kGrid; ++b) {
      const float l = lo - 0.1f * r + 0.6f * r * float(a) / kGrid;
      const float h = hi + 0.1f * r - 0.6f * r * float(b) / kGrid;
      if (!(h > l)) continue;
      for (float sign : {1.f, -1.f}) {  // MLX writes scales of either sign
        const float s = sign * (h - l) / nmax, bias = sign > 0 ? l : h;
        best = std::min(best, affine_group_error(w, imp, n, bits, s, bias, dt, nullptr));
      }
    }
  return best;
}

TEST(WeightedAffine, CloseToBruteForceOnSmallGroups) {
  std::mt19937 rng(11);
  double worst = 0, sum = 0;
  int cases = 0;
  for (int bits : {2, 3, 4})
    for (bool weighted : {false, true})
      for (int trial = 0; trial < 12; ++trial) {
        const Row r = random_row(rng, 32);
        const float* imp = weighted ? r.imp.data() : nullptr;
        float s = 0, b = 0;
        ASSERT_TRUE(affine_group_search(r.w.data(), imp, 32, bits, DType::BF16, &s, &b));
        const double ours =
            affine_group_error(r.w.data(), imp, 32, bits, s, b, DType::BF16, nullptr);
        const double brute = brute_force(r.w.data(), imp, 32, bits, DType::BF16);
        worst = std::max(worst, ours / brute);
        sum += ours / brute;
        ++cases;
        EXPECT_LE(ours, brute * 1.12) << "bits " << bits << " trial " << trial;
      }
  std::printf("ratio to brute force: mean %.4f, worst %.4f\n", sum / cases, worst);
  EXPECT_LE(sum / cases, 1.03);
}

TEST(WeightedAffine, HeavyColumnsAreKeptCloser) {
  std::mt19937 rng(3);
  const Row r = random_row(rng, 64);
  std::vector<float> imp(64, 1.f);
  for (int j = 0; j < 64; j += 8) imp[size_t(j)] = 1000.f;  // every 8th column matters
  float s0 = 0, b0 = 0, s1 = 0, b1 = 0;
  ASSERT_TRUE(affine_group_search(r.w.data(), nullptr, 64, 2, DType::F32, &s0, &b0));
  ASSERT_TRUE(affine_group_search(r.w.data(), imp.data(), 64, 2, DType::F32, &s1, &b1));
  std::vector<float> heavy(64, 0.f);
  for (int j = 0; j < 64; j += 8) heavy[size_t(j)] = 1.f;
  const double plain =
      affine_group_error(r.w.data(), heavy.data(), 64, 2, s0, b0, DType::F32, nullptr);
  const double weighed =
      affine_group_error(r.w.data(), heavy.data(), 64, 2, s1, b1, DType::F32, nullptr);
  EXPECT_LT(weighed, 0.8 * plain);
}

TEST(WeightedAffine, ConstantAndZeroImportanceGroups) {
  std::vector<float> w(64, 0.25f), zero(64, 0.f);
  std::vector<uint8_t> c(64), s(4), b(4);
  ASSERT_TRUE(affine_quantize_row_weighted(w.data(), zero.data(), 64, 4, 32, DType::BF16, c.data(),
                                           s.data(), b.data()));
  EXPECT_EQ(row_error(w, nullptr, 4, 32, DType::BF16, {c.begin(), c.begin() + 32}, s, b), 0.0);
  w[5] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(affine_quantize_row_weighted(w.data(), nullptr, 64, 4, 32, DType::BF16, c.data(),
                                            s.data(), b.data()));
}

}  // namespace
}  // namespace inkling

namespace inkling {
namespace {

// The search's candidate ranges evaluated kLanes at a time give bitwise its scalar twin's scale
// and bias: every width, group, scale dtype; no, random, sparse and zero importance; outliers,
// tiny and constant groups.
TEST(WeightedAffine, SearchIsBitwiseItsScalarTwin) {
  std::mt19937 rng(71);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::uniform_real_distribution<float> ud(0.f, 2.f);
  int checked = 0;
  for (int bits : {2, 3, 4, 5, 6, 8})
    for (int n : {32, 64, 128})
      for (DType dt : {DType::BF16, DType::F16, DType::F32})
        for (int trial = 0; trial < 12; ++trial) {
          std::vector<float> w(static_cast<size_t>(n)), imp(static_cast<size_t>(n));
          const float scale = trial % 4 == 3 ? 1e-3f : trial % 4 == 2 ? 50.f : 0.05f;
          for (auto& v : w) v = nd(rng) * scale;
          if (trial % 3 == 1) w[size_t(rng() % unsigned(n))] *= 40.f;  // an outlier
          if (trial == 11) std::fill(w.begin(), w.end(), 0.25f);       // constant
          for (auto& v : imp) v = trial % 5 == 4 ? (rng() % 4 ? 0.f : ud(rng)) : ud(rng);
          if (trial == 7) std::fill(imp.begin(), imp.end(), 0.f);
          const float* ip = trial % 2 ? imp.data() : nullptr;
          float s0 = -1, b0 = -1, s1 = -2, b1 = -2;
          const bool ok0 = affine_group_search(w.data(), ip, n, bits, dt, &s0, &b0);
          const bool ok1 = affine_group_search_scalar(w.data(), ip, n, bits, dt, &s1, &b1);
          ASSERT_EQ(ok0, ok1);
          ASSERT_EQ(f32_to_bits(s0), f32_to_bits(s1))
              << "bits " << bits << " n " << n << " dtype " << int(dt) << " trial " << trial;
          ASSERT_EQ(f32_to_bits(b0), f32_to_bits(b1))
              << "bits " << bits << " n " << n << " dtype " << int(dt) << " trial " << trial;
          ++checked;
        }
  EXPECT_EQ(checked, 6 * 3 * 3 * 12);
}

}  // namespace
}  // namespace inkling
