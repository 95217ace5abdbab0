// The fast-numerics kernel for bf16 weights (ops/dense_bf16dot.h): bitwise against its scalar twin
// (1..16 tokens, row ranges, columns that are not whole chunks, strided rows, denormal / huge /
// non-finite x), the twin within the bf16 rounding of x of the exact product, and the registry
// binding it in fast numerics only.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
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

void expect_dense_twin(const MatView& w, int64_t n_tok, int64_t r0, int64_t r1, std::mt19937& rng,
                       const std::string& what) {
  testing::expect_rows_twin(dense_bf16dot_rows, dense_bf16dot_rows_ref, w, n_tok, r0, r1, rng,
                            what);
}

TEST(DenseBf16Dot, KernelEqualsScalarTwinBitwise) {
  if (!dense_bf16dot_available()) GTEST_SKIP() << "CPU without AVX512-BF16";
  std::mt19937 rng(31);
  for (int64_t cols : {int64_t(1), int64_t(31), int64_t(32), int64_t(130), int64_t(256),
                       int64_t(1000), int64_t(4096)}) {
    const Bf16Mat m = make_bf16(11, cols, cols + (cols % 2), rng);
    const std::string what = "cols " + std::to_string(cols);
    for (int64_t n_tok = 1; n_tok <= kFewMaxTokens; ++n_tok)
      expect_dense_twin(m.view, n_tok, 0, 11, rng, what);
    expect_dense_twin(m.view, 5, 3, 8, rng, what + " rows 3..8");
  }
  // A view starting at an odd element (rows not 4-byte aligned), as a de-interleaved half.
  Bf16Mat m = make_bf16(6, 96, 200, rng);
  m.view.data += 2;
  expect_dense_twin(m.view, 3, 0, 6, rng, "misaligned rows");
}

// The twin against the double product of bf16(x) and W (the only rounding beyond f32 sums is
// x's to bf16: within 2^-9 of |x| per element).
TEST(DenseBf16Dot, TwinWithinBf16RoundingOfExact) {
  std::mt19937 rng(32);
  const Bf16Mat m = make_bf16(9, 700, 700, rng);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(700), y(9);
  for (auto& v : x) v = nd(rng);
  dense_bf16dot_rows_ref(x.data(), 1, 700, m.view, 0, 9, y.data(), 9);
  for (int64_t r = 0; r < 9; ++r) {
    double exact = 0, rounded = 0, mag = 0;
    for (int64_t c = 0; c < 700; ++c) {
      const double wv = bf16_to_f32(m.bits[size_t(r * 700 + c)]);
      exact += double(x[size_t(c)]) * wv;
      rounded += double(bf16_to_f32(f32_to_bf16(x[size_t(c)]))) * wv;
      mag += std::fabs(double(x[size_t(c)]) * wv);
    }
    EXPECT_NEAR(y[size_t(r)], rounded, 1e-5 * mag) << "row " << r;
    EXPECT_NEAR(y[size_t(r)], exact, mag / 512 + 1e-5 * mag) << "row " << r;
  }
}

TEST(DenseBf16Dot, BoundInFastNumericsOnly) {
  std::mt19937 rng(33);
  Bf16Mat m = make_bf16(4, 64, 64, rng);
  MatView exact = m.view, fast = m.view;
  ASSERT_TRUE(bind_kernels(exact, Numerics::kExact));
  ASSERT_TRUE(bind_kernels(fast, Numerics::kFast));
  EXPECT_NE(exact.kernels->for_tokens(1).rows, dense_bf16dot_rows);
  if (dense_bf16dot_available() && (bf16dot_preferred() || !dense_widen_fast_available())) {
    EXPECT_EQ(fast.kernels->for_tokens(1).rows, dense_bf16dot_rows);
    EXPECT_EQ(fast.kernels->for_tokens(kFewMaxTokens).rows, dense_bf16dot_rows);
  } else if (dense_widen_fast_available()) {
    EXPECT_EQ(fast.kernels->for_tokens(1).rows, dense_widen_fast_rows);  // Intel's VDPBF16PS
  } else {
    EXPECT_EQ(fast.kernels, exact.kernels);  // no fast kernel here: fast runs exact
  }
  // f32 weights keep f32 products in both modes.
  std::vector<float> f(64 * 4, 1.f);
  MatView f32v;
  f32v.dtype = DType::F32;
  f32v.data = reinterpret_cast<const uint8_t*>(f.data());
  f32v.rows = 4, f32v.cols = 64, f32v.row_stride = 64;
  MatView a = f32v, b = f32v;
  ASSERT_TRUE(bind_kernels(a, Numerics::kExact));
  ASSERT_TRUE(bind_kernels(b, Numerics::kFast));
  EXPECT_EQ(a.kernels, b.kernels);
}

}  // namespace
}  // namespace inkling
