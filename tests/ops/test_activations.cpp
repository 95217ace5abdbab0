// Inkling 2's tanh-based functions (ops/activations.h): the vector kernels (Highway Tanh and Exp)
// against their scalar twins (std::tanh / std::exp) over every tail length, typical and extreme
// arguments (tiny, saturating, +-inf, NaN), both SwiGLU layouts written in place and elsewhere, and
// the gate mix written over its input; the twins against double precision math.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "ops/activations.h"

namespace inkling {
namespace {

constexpr float kUlp = 1.2e-7f;

std::vector<float> random_values(size_t n, float sd, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, sd);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

// Both NaN, or within `rel` of b's magnitude plus `abs`.
void expect_close(float a, float b, float rel, float abs, const char* what, size_t i) {
  if (std::isnan(b)) {
    EXPECT_TRUE(std::isnan(a)) << what << " " << i;
    return;
  }
  EXPECT_NEAR(a, b, rel * std::fabs(b) + abs) << what << " " << i;
}

TEST(Activations, SoftcapMatchesItsTwinAndTanh) {
  for (int64_t n : {1, 5, 8, 15, 16, 17, 33, 100, 1027}) {
    for (float cap : {30.f, 4.f}) {
      SCOPED_TRACE(::testing::Message() << "n " << n << " cap " << cap);
      std::vector<float> x = random_values(size_t(n), 3 * cap, uint32_t(n));
      const float extremes[] = {0.f,
                                -0.f,
                                1e-30f,
                                -3e-8f,
                                1e30f,
                                -1e30f,
                                std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::quiet_NaN()};
      for (size_t i = 0; i < std::size(extremes) && i < x.size(); ++i)
        x[i * 7 % x.size()] = extremes[i];
      std::vector<float> a = x, b = x;
      softcap(a.data(), n, cap);
      softcap_scalar(b.data(), n, cap);
      for (size_t i = 0; i < x.size(); ++i) {
        expect_close(a[i], b[i], 8 * kUlp, 1e-37f, "kernel", i);
        if (!std::isnan(x[i])) {
          expect_close(b[i], float(std::tanh(double(x[i]) / cap) * cap), 4 * kUlp, 1e-37f, "twin",
                       i);
        }
        if (std::isfinite(x[i])) {
          EXPECT_LE(std::fabs(a[i]), cap) << i;
        }
      }
    }
  }
}

TEST(Activations, SoftcappedSwigluMatchesItsTwinInBothLayoutsAndInPlace) {
  const float gc = 4.f, uc = 25.f;
  for (int64_t W : {1, 3, 16, 17, 31, 48, 1152}) {
    for (bool interleaved : {false, true}) {
      for (float scale : {1.f, 0.37f}) {
        SCOPED_TRACE(::testing::Message()
                     << "W " << W << " interleaved " << interleaved << " scale " << scale);
        std::vector<float> row = random_values(size_t(2 * W), 8.f, uint32_t(W * 3 + interleaved));
        row[0] = -200.f;  // sigmoid underflows to 0
        if (W > 2) row[3] = 1e30f, row[2] = -1e30f;
        std::vector<float> a(static_cast<size_t>(W)), b(static_cast<size_t>(W));
        softcapped_swiglu(row.data(), W, interleaved, gc, uc, scale, a.data());
        softcapped_swiglu_scalar(row.data(), W, interleaved, gc, uc, scale, b.data());
        for (int64_t i = 0; i < W; ++i) {
          expect_close(a[size_t(i)], b[size_t(i)], 24 * kUlp, 1e-30f, "kernel", size_t(i));
          const double g = interleaved ? row[size_t(2 * i)] : row[size_t(i)];
          const double u = interleaved ? row[size_t(2 * i + 1)] : row[size_t(W + i)];
          const double ref =
              std::tanh(g / gc) * gc / (1 + std::exp(-g)) * (std::tanh(u / uc) * uc) * scale;
          expect_close(b[size_t(i)], float(ref), 8 * kUlp, 1e-30f, "twin", size_t(i));
        }
        // Written over its own input (the expert's [T, 2W] rows become [T, W] in place), and
        // from a later row into an earlier place.
        std::vector<float> buf(size_t(4 * W));
        std::copy(row.begin(), row.end(), buf.begin() + 2 * W);
        softcapped_swiglu(buf.data() + 2 * W, W, interleaved, gc, uc, scale, buf.data() + W);
        for (int64_t i = 0; i < W; ++i) EXPECT_EQ(buf[size_t(W + i)], a[size_t(i)]) << i;
        std::vector<float> same = row;
        softcapped_swiglu(same.data(), W, interleaved, gc, uc, scale, same.data());
        for (int64_t i = 0; i < W; ++i) EXPECT_EQ(same[size_t(i)], a[size_t(i)]) << i;
      }
    }
  }
}

TEST(Activations, SigmoidGateMatchesItsTwin) {
  for (int64_t n : {1, 9, 16, 31, 3072}) {
    SCOPED_TRACE(::testing::Message() << "n " << n);
    std::vector<float> g = random_values(size_t(n), 6.f, uint32_t(n + 5));
    const std::vector<float> x = random_values(size_t(n), 2.f, uint32_t(n + 6));
    const float extremes[] = {-200.f, 200.f, -88.9f, 1e30f, -1e30f};
    for (size_t i = 0; i < std::size(extremes) && i < g.size(); ++i)
      g[i * 5 % g.size()] = extremes[i];
    std::vector<float> a = x, b = x;
    sigmoid_gate(a.data(), g.data(), n);
    sigmoid_gate_scalar(b.data(), g.data(), n);
    for (size_t i = 0; i < size_t(n); ++i) {
      expect_close(a[i], b[i], 8 * kUlp, 1e-37f, "kernel", i);
      const double ref = double(x[i]) / (1 + std::exp(-double(g[i])));
      expect_close(b[i], float(ref), 4 * kUlp, 1e-37f, "twin", i);
    }
  }
}

TEST(Activations, TanhGateMixMatchesItsTwinAndMayWriteOverItsInput) {
  for (int64_t n : {1, 7, 16, 23, 64, 2304}) {
    SCOPED_TRACE(::testing::Message() << "n " << n);
    const std::vector<float> f = random_values(size_t(n), 3.f, 1),
                             a = random_values(size_t(n), 3.f, 2),
                             h = random_values(size_t(n), 1.f, 3),
                             m = random_values(size_t(n), 1.f, 4);
    std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
    tanh_gate_mix(f.data(), a.data(), h.data(), m.data(), n, x.data());
    tanh_gate_mix_scalar(f.data(), a.data(), h.data(), m.data(), n, y.data());
    for (size_t i = 0; i < size_t(n); ++i) {
      // 1 - tanh(f) cancels where tanh(f) is near 1: an absolute bound on h's and m's scale.
      const float scale = std::fabs(h[i]) + std::fabs(m[i]);
      expect_close(x[i], y[i], 0, 4 * kUlp * scale + 1e-30f, "kernel", i);
      const double ref = (1 - std::tanh(double(f[i]))) * h[i] + std::tanh(double(a[i])) * m[i];
      expect_close(y[i], float(ref), 0, 4 * kUlp * scale + 1e-30f, "twin", i);
    }
    std::vector<float> inplace = h;
    tanh_gate_mix(f.data(), a.data(), inplace.data(), m.data(), n, inplace.data());
    EXPECT_EQ(inplace, x);
  }
}

}  // namespace
}  // namespace inkling
