// The fast-numerics kernel for bf16 weights on AVX-512 without AVX512-BF16
// (ops/dense_widen_fast.h): bitwise against its scalar twin (1..16 tokens, row ranges and blocks
// of every size, columns that are not whole chunks, strided and misaligned rows, denormal / huge /
// non-finite x), a token's bits independent of the tokens beside it, the twin within f32
// rounding of the double product, and the registry binding it in fast numerics only.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "bf16_test_util.h"
#include "ops/dense_bf16dot.h"
#include "ops/dense_widen_fast.h"
#include "ops/formats.h"
#include "ops/quant_q4_bf16dot.h"

namespace inkling {
namespace {

using testing::Bf16Mat;
using testing::make_bf16;

void expect_widen_twin(const MatView& w, int64_t n_tok, int64_t r0, int64_t r1, std::mt19937& rng,
                       const std::string& what) {
  testing::expect_rows_twin(dense_widen_fast_rows, dense_widen_fast_rows_ref, w, n_tok, r0, r1, rng,
                            what);
}

TEST(DenseWidenFast, KernelEqualsScalarTwinBitwise) {
  if (!dense_widen_fast_available()) GTEST_SKIP() << "CPU without AVX-512";
  std::mt19937 rng(41);
  for (int64_t cols : {int64_t(1), int64_t(17), int64_t(32), int64_t(33), int64_t(130),
                       int64_t(1000), int64_t(2304)}) {
    const Bf16Mat m = make_bf16(13, cols, cols + (cols % 2), rng);
    const std::string what = "cols " + std::to_string(cols);
    for (int64_t n_tok = 1; n_tok <= kFewMaxTokens; ++n_tok)
      expect_widen_twin(m.view, n_tok, 0, 13, rng, what);
    for (auto [r0, r1] : {std::pair<int64_t, int64_t>{3, 8}, {1, 2}, {5, 13}})
      for (int64_t n_tok : {int64_t(1), int64_t(3), int64_t(9)})
        expect_widen_twin(m.view, n_tok, r0, r1, rng, what + " rows " + std::to_string(r0));
  }
  // Several blocks of 32 rows, each ending in quads, a pair and one row, past a column block.
  const Bf16Mat big = make_bf16(71, 600, 600, rng);
  for (int64_t n_tok = 5; n_tok <= kFewMaxTokens; ++n_tok)
    expect_widen_twin(big.view, n_tok, 0, 71, rng, "71 rows");
  Bf16Mat m = make_bf16(6, 96, 200, rng);  // rows starting at an odd element
  m.view.data += 2;
  expect_widen_twin(m.view, 4, 0, 6, rng, "misaligned rows");
}

// Each (row, token) has the one-token bits whatever the tokens and rows beside it.
TEST(DenseWidenFast, TokenBitsIndependentOfTheBatch) {
  if (!dense_widen_fast_available()) GTEST_SKIP() << "CPU without AVX-512";
  std::mt19937 rng(42);
  const Bf16Mat m = make_bf16(23, 515, 515, rng);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(size_t(kFewMaxTokens * 515));
  for (auto& v : x) v = nd(rng);
  std::vector<float> alone(size_t(kFewMaxTokens * 23));
  for (int64_t t = 0; t < kFewMaxTokens; ++t)
    dense_widen_fast_rows(x.data() + t * 515, 1, 515, m.view, 0, 23, alone.data() + t * 23, 23);
  for (int64_t n_tok = 2; n_tok <= kFewMaxTokens; ++n_tok) {
    std::vector<float> y(size_t(n_tok * 23));
    dense_widen_fast_rows(x.data(), n_tok, 515, m.view, 0, 23, y.data(), 23);
    for (int64_t t = 0; t < n_tok; ++t)
      for (int64_t r = 0; r < 23; ++r)
        ASSERT_EQ(std::memcmp(&y[size_t(t * 23 + r)], &alone[size_t(t * 23 + r)], 4), 0)
            << n_tok << " tokens, token " << t << " row " << r;
  }
}

// The twin sums the exact f32 products of x and the bf16 weights: within f32 rounding of the
// double sum.
TEST(DenseWidenFast, TwinWithinF32RoundingOfExact) {
  std::mt19937 rng(43);
  const Bf16Mat m = make_bf16(9, 700, 700, rng);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(700), y(9);
  for (auto& v : x) v = nd(rng);
  dense_widen_fast_rows_ref(x.data(), 1, 700, m.view, 0, 9, y.data(), 9);
  for (int64_t r = 0; r < 9; ++r) {
    double exact = 0, mag = 0;
    for (int64_t c = 0; c < 700; ++c) {
      const double p = double(x[size_t(c)]) * bf16_to_f32(m.bits[size_t(r * 700 + c)]);
      exact += p, mag += std::fabs(p);
    }
    EXPECT_NEAR(y[size_t(r)], exact, 1e-6 * mag) << "row " << r;
  }
}

// Bound in fast numerics where the CPU has no AVX512-BF16, or where it does but its VDPBF16PS is
// the slower choice (Intel's: bf16dot_preferred() false).
TEST(DenseWidenFast, BoundInFastNumericsUnlessVdpbf16psIsPreferred) {
  std::mt19937 rng(44);
  Bf16Mat m = make_bf16(4, 64, 64, rng);
  MatView exact = m.view, fast = m.view;
  ASSERT_TRUE(bind_kernels(exact, Numerics::kExact));
  ASSERT_TRUE(bind_kernels(fast, Numerics::kFast));
  EXPECT_NE(exact.kernels->for_tokens(1).rows, dense_widen_fast_rows);
  if (dense_bf16dot_available() && (bf16dot_preferred() || !dense_widen_fast_available())) {
    EXPECT_EQ(fast.kernels->for_tokens(1).rows, dense_bf16dot_rows);  // VDPBF16PS wins
  } else if (dense_widen_fast_available()) {
    EXPECT_EQ(fast.kernels->for_tokens(1).rows, dense_widen_fast_rows);
    EXPECT_EQ(fast.kernels->for_tokens(kFewMaxTokens).rows, dense_widen_fast_rows);
    EXPECT_NE(fast.kernels->for_tokens(kFewMaxTokens + 1).rows, dense_widen_fast_rows);
    set_dense_widen_fast_enabled(false);  // switched off: VDPBF16PS, else the exact kernels
    MatView off = m.view;
    ASSERT_TRUE(bind_kernels(off, Numerics::kFast));
    if (dense_bf16dot_available())
      EXPECT_EQ(off.kernels->for_tokens(1).rows, dense_bf16dot_rows);
    else
      EXPECT_EQ(off.kernels, exact.kernels);
    set_dense_widen_fast_enabled(true);
  } else {
    EXPECT_EQ(fast.kernels, exact.kernels);
  }
}

}  // namespace
}  // namespace inkling
