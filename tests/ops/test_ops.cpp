// Every op in src/ops against its scalar twin in src/ops/reference on random data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "../common/random.h"
#include "ops/attention.h"
#include "ops/conv.h"
#include "ops/matmul.h"
#include "ops/moe.h"
#include "ops/norm.h"
#include "ops/reference/reference.h"

namespace inkling {
namespace {

using testing::randn;

float max_abs(const std::vector<float>& v) {
  float m = 0;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, float rel) {
  ASSERT_EQ(got.size(), want.size());
  const float tol = rel * std::max(1.f, max_abs(want));
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "at " << i;
}

class MatmulTest : public ::testing::TestWithParam<std::tuple<DType, int, int, int, int>> {};

TEST_P(MatmulTest, MatchesReference) {
  const auto [dt, T, rows, cols, threads] = GetParam();
  // A strided view: every other row of a [2*rows, cols] buffer, like a de-interleaved gate half.
  auto wf = randn(size_t(2 * rows * cols), 7);
  std::vector<uint16_t> wb(wf.size());
  for (size_t i = 0; i < wf.size(); ++i) wb[i] = f32_to_bf16(wf[i]);
  const uint8_t* base = dt == DType::BF16 ? reinterpret_cast<const uint8_t*>(wb.data())
                                          : reinterpret_cast<const uint8_t*>(wf.data());
  MatView w{dt, base + size_t(cols) * dtype_size(dt), rows, cols, 2 * int64_t(cols)};
  auto x = randn(size_t(T * cols), 3);
  std::vector<float> got(size_t(T * rows)), want(size_t(T * rows));
  ThreadPool pool(threads);
  matmul(x.data(), T, cols, w, got.data(), rows, &pool);
  ref::matmul(x.data(), T, cols, w, want.data(), rows);
  expect_close(got, want, 1e-5f);
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatmulTest,
                         ::testing::Values(std::make_tuple(DType::F32, 1, 33, 70, 1),
                                           std::make_tuple(DType::BF16, 1, 300, 257, 2),
                                           std::make_tuple(DType::BF16, 5, 129, 64, 2),
                                           std::make_tuple(DType::F32, 7, 512, 96, 2),
                                           std::make_tuple(DType::BF16, 3, 1, 16, 1)));

TEST(Ops, RmsNormMatchesReference) {
  const int64_t n = 77, rows = 5;
  auto x = randn(size_t(n * rows), 1, 3.f), w = randn(size_t(n), 2);
  std::vector<float> got(x.size()), want(x.size());
  rms_norm_rows(x.data(), w.data(), rows, n, 1e-6, got.data());
  for (int64_t r = 0; r < rows; ++r)
    ref::rms_norm(x.data() + r * n, w.data(), n, 1e-6, want.data() + r * n);
  expect_close(got, want, 1e-6f);
}

TEST(Ops, ShortConvMatchesReferenceAndChunkingIsExact) {
  const int64_t C = 13, K = 4, T = 10;
  auto u = randn(size_t(T * C), 5), w = randn(size_t(C * K), 6);
  std::vector<float> s1(size_t((K - 1) * C), 0.f), s2 = s1;
  std::vector<float> got(u.size()), want(u.size());
  short_conv(u.data(), T, C, w.data(), K, s1.data(), got.data());
  ref::short_conv(u.data(), T, C, w.data(), K, s2.data(), want.data());
  expect_close(got, want, 1e-6f);
  expect_close(s1, s2, 0.f);
  // 7 tokens then 3 single steps == 10 at once, outputs and final state.
  std::vector<float> s3(size_t((K - 1) * C), 0.f), step(u.size());
  short_conv(u.data(), 7, C, w.data(), K, s3.data(), step.data());
  for (int64_t t = 7; t < T; ++t)
    short_conv(u.data() + t * C, 1, C, w.data(), K, s3.data(), step.data() + t * C);
  expect_close(step, got, 0.f);
  expect_close(s3, s1, 0.f);
  // In place (out aliases u) gives the same result.
  std::vector<float> inplace = u, s4(size_t((K - 1) * C), 0.f);
  short_conv(inplace.data(), T, C, w.data(), K, s4.data(), inplace.data());
  expect_close(inplace, got, 0.f);
}

TEST(Ops, ShortConvLastTapIsCurrentToken) {
  // w = [0, 0, 0, 1]: conv(u)_t = u_t, so out = 2u; w = [1, 0, 0, 0]: out_t = u_t + u_{t-3}.
  const int64_t C = 1, K = 4, T = 6;
  std::vector<float> u = {1, 2, 3, 4, 5, 6}, out(6), st(3, 0.f);
  std::vector<float> w_last = {0, 0, 0, 1}, w_first = {1, 0, 0, 0};
  short_conv(u.data(), T, C, w_last.data(), K, st.data(), out.data());
  EXPECT_EQ(out, (std::vector<float>{2, 4, 6, 8, 10, 12}));
  std::fill(st.begin(), st.end(), 0.f);
  short_conv(u.data(), T, C, w_first.data(), K, st.data(), out.data());
  EXPECT_EQ(out, (std::vector<float>{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(st, (std::vector<float>{4, 5, 6}));
}

// Scalar attention straight from the formula with the four-way bias rule.
void attention_ref(const std::vector<float>& q, const std::vector<float>& r, int64_t T,
                   int64_t pos0, const std::vector<float>& K, const std::vector<float>& V,
                   const std::vector<float>& P, const AttentionShape& s, std::vector<float>& out) {
  const int64_t nh = s.n_heads, hd = s.head_dim, d = s.d_rel, R = s.rel_extent,
                G = s.n_heads / s.n_kv_heads;
  const int64_t row = s.n_kv_heads * hd;
  for (int64_t i = 0; i < T; ++i)
    for (int64_t h = 0; h < nh; ++h) {
      const int64_t t = pos0 + i;
      const double tau =
          s.log_floor > 0 ? 1 + s.log_alpha * std::log(std::max((t + 1) / s.log_floor, 1.0)) : 1.0;
      std::vector<double> z(size_t(t + 1), -INFINITY);
      double mx = -INFINITY;
      for (int64_t src = 0; src <= t; ++src) {
        const int64_t dist = t - src;
        if (s.window > 0 && dist >= s.window) continue;
        double dot = 0;
        for (int64_t c = 0; c < hd; ++c)
          dot +=
              tau * q[size_t(i * nh * hd + h * hd + c)] * K[size_t(src * row + (h / G) * hd + c)];
        double bias = 0;
        if (dist < R)
          for (int64_t m = 0; m < d; ++m)
            bias += double(r[size_t(i * nh * d + h * d + m)]) * P[size_t(m * R + dist)];
        z[size_t(src)] = dot / double(hd) + tau * bias;
        mx = std::max(mx, z[size_t(src)]);
      }
      double sum = 0;
      for (auto& v : z) sum += (v = std::isinf(v) ? 0 : std::exp(v - mx));
      for (int64_t c = 0; c < hd; ++c) {
        double acc = 0;
        for (int64_t src = 0; src <= t; ++src)
          acc += z[size_t(src)] / sum * V[size_t(src * row + (h / G) * hd + c)];
        out[size_t(i * nh * hd + h * hd + c)] = float(acc);
      }
    }
}

struct AttnCase {
  int window, R;
  double floor;
  bool ring;
};

class AttentionTest : public ::testing::TestWithParam<AttnCase> {};

TEST_P(AttentionTest, MatchesScalarFormula) {
  const AttnCase c = GetParam();
  AttentionShape s;
  s.n_heads = 4, s.n_kv_heads = 2, s.head_dim = 8, s.d_rel = 3, s.rel_extent = c.R,
  s.window = c.window;
  s.log_floor = c.floor, s.log_alpha = 0.3;
  const int64_t T = 5, pos0 = 4, S = pos0 + T, row = s.n_kv_heads * s.head_dim;
  auto q = randn(size_t(T * s.n_heads * s.head_dim), 11),
       r = randn(size_t(T * s.n_heads * s.d_rel), 12);
  auto K = randn(size_t(S * row), 13), V = randn(size_t(S * row), 14),
       P = randn(size_t(s.d_rel * c.R), 15);
  std::vector<float> want(q.size()), got(q.size());
  attention_ref(q, r, T, pos0, K, V, P, s, want);
  KvView kv{K.data(), V.data(), 0, row, false};
  std::vector<float> ringK, ringV;
  if (c.ring) {  // a ring of capacity window-1+T holding positions mod capacity
    const int64_t cap = c.window - 1 + T;
    ringK.assign(size_t(cap * row), NAN), ringV.assign(size_t(cap * row), NAN);
    for (int64_t p = std::max<int64_t>(0, pos0 - c.window + 1); p < S; ++p)
      for (int64_t j = 0; j < row; ++j) {
        ringK[size_t((p % cap) * row + j)] = K[size_t(p * row + j)];
        ringV[size_t((p % cap) * row + j)] = V[size_t(p * row + j)];
      }
    kv = KvView{ringK.data(), ringV.data(), cap, row, true};
  }
  ThreadPool pool(2);
  attention(q.data(), r.data(), T, pos0, kv, P.data(), s, got.data(), &pool);
  expect_close(got, want, 2e-5f);
}

INSTANTIATE_TEST_SUITE_P(Kinds, AttentionTest,
                         ::testing::Values(AttnCase{4, 4, 0, false},    // sliding, R = W
                                           AttnCase{4, 4, 0, true},     // sliding through a ring
                                           AttnCase{0, 6, 0, false},    // global, bias 0 beyond R
                                           AttnCase{0, 6, 3, false},    // global with tau > 1
                                           AttnCase{0, 12, 100, false}  // tau identity below floor
                                           ));

TEST(Ops, TauIsIdentityBelowFloor) {
  for (int p = 0; p < 8; ++p) EXPECT_EQ(log_position_tau(p, 8, 0.1), 1.f);
  EXPECT_NEAR(log_position_tau(15, 8, 0.1), 1 + 0.1 * std::log(2.0), 1e-6);
  EXPECT_EQ(log_position_tau(1000000, 0, 0.1), 1.f);  // disabled
}

TEST(Ops, RouteHandComputed) {
  // 4 routed + 2 shared. The bias makes expert 0 win although its logit is lowest: selection
  // uses the bias, the weights do not.
  const float logits[6] = {-2.f, 1.f, 0.5f, 0.f, 0.3f, -0.7f};
  const float bias[4] = {10.f, 0.f, 0.f, 0.f};
  RouteParams p{4, 2, 2, 2.5f, 1.5f};
  int32_t idx[2];
  float w[2], gamma[2];
  route(logits, bias, p, idx, w, gamma);
  EXPECT_EQ(idx[0], 0);
  EXPECT_EQ(idx[1], 1);
  auto sig = [](double x) { return 1 / (1 + std::exp(-x)); };
  const double den = sig(-2) + sig(1) + sig(0.3) + sig(-0.7), sc = 2.5 * 1.5;
  EXPECT_NEAR(w[0], sc * sig(-2) / den, 1e-6);
  EXPECT_NEAR(w[1], sc * sig(1) / den, 1e-6);
  EXPECT_NEAR(gamma[0], sc * sig(0.3) / den, 1e-6);
  EXPECT_NEAR(gamma[1], sc * sig(-0.7) / den, 1e-6);
  EXPECT_NEAR(w[0] + w[1] + gamma[0] + gamma[1], sc, 1e-5);
}

TEST(Ops, RouteWithMoreThan512Weights) {
  // Regression: route() staged the k + S log-sigmoids in a fixed float[512] on the stack, so a
  // config with top_k + n_shared > 512 overflowed it (ASan: stack-buffer-overflow). Every
  // weight must now be written, and all of them together still sum to the scale.
  const int E = 1200, S = 40, k = 600;
  std::vector<float> logits(size_t(E + S)), bias(size_t(E), 0.f);
  for (int i = 0; i < E + S; ++i) logits[size_t(i)] = 0.001f * float((i * 37) % 1000) - 0.5f;
  RouteParams p{E, S, k, 2.f, 0.5f};
  std::vector<int32_t> idx(size_t(k), -1);
  std::vector<float> w(size_t(k), -1.f), gamma(size_t(S), -1.f);
  route(logits.data(), bias.data(), p, idx.data(), w.data(), gamma.data());
  EXPECT_TRUE(std::is_sorted(idx.begin(), idx.end()));
  double den = 0, total = 0;
  auto sig = [](double x) { return 1 / (1 + std::exp(-x)); };
  for (int32_t e : idx) den += sig(logits[size_t(e)]);
  for (int s = 0; s < S; ++s) den += sig(logits[size_t(E + s)]);
  for (int j = 0; j < k; ++j) {
    EXPECT_NEAR(w[size_t(j)], 1.0 * sig(logits[size_t(idx[size_t(j)])]) / den, 1e-6) << j;
    total += w[size_t(j)];
  }
  for (int s = 0; s < S; ++s) {
    EXPECT_NEAR(gamma[size_t(s)], 1.0 * sig(logits[size_t(E + s)]) / den, 1e-6) << s;
    total += gamma[size_t(s)];
  }
  EXPECT_NEAR(total, 1.0, 1e-4);
}

}  // namespace
}  // namespace inkling
