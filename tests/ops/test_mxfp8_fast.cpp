// The fast-numerics MXFP8 kernels (each block made bf16 in registers, its power of two in the
// exponents; then VDPBF16PS against bf16(x), ops/dense_bf16dot.h, or widened against f32 x,
// ops/dense_widen_fast.h): the conversion against the true values for every code and exponent,
// each kernel bitwise against its scalar twin (1..16 tokens, strided rows, row ranges, exponents
// at both ends), the widening one bitwise the bf16 kernel on the converted rows, the twin within
// bf16(x)'s rounding of the exact product, and the registry binding the kernel fast bf16 takes.
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
#include "ops/mxfp8_via_bf16.h"
#include "ops/quant.h"
#include "ops/quant_q4_bf16dot.h"
#include "quant_test_util.h"

namespace inkling {
namespace {

using testing::make_mxfp8;
using testing::QMat;

// Every code under every exponent: exact where the product is a normal bf16; below that zero or a
// bf16 denormal (which VDPBF16PS reads as zero); beyond bf16's range inf or NaN.
TEST(Mxfp8Bf16Dot, BitsAreTheStoredValues) {
  for (int e = 0; e < 256; ++e)
    for (int code = 0; code < 256; ++code) {
      if ((code & 0x7f) == 0x7f) continue;  // NaN codes (read as 480, as the exact SIMD kernel)
      const double want = double(e4m3_to_f32(uint8_t(code))) * std::ldexp(1.0, e - 127);
      const uint16_t bits = mxfp8_bf16_bits(uint8_t(code), uint8_t(e));
      const float got = bf16_to_f32(bits);
      const std::string what = "code " + std::to_string(code) + " e " + std::to_string(e);
      if (std::fabs(want) >= std::ldexp(1.0, 128)) {
        EXPECT_FALSE(std::isfinite(got)) << what;
      } else if (want != 0 && std::fabs(want) < std::ldexp(1.0, -126)) {
        EXPECT_EQ(bits & 0x7f80, 0) << what;  // zero or denormal: no exponent
      } else {
        EXPECT_EQ(double(got), want) << what;
        EXPECT_EQ(std::signbit(got), (code & 0x80) != 0) << what;
      }
      if (e >= 10 && e <= 246) {
        EXPECT_EQ(double(got), want) << what;
      }
    }
  EXPECT_EQ(bf16_to_f32(mxfp8_bf16_bits(0x7f, 127)), 480.f);
}

void expect_twin(const MatView& w, int64_t n_tok, int64_t r0, int64_t r1, std::mt19937& rng,
                 const std::string& what) {
  testing::expect_rows_twin(mxfp8_bf16dot_rows, mxfp8_bf16dot_rows_ref, w, n_tok, r0, r1, rng,
                            what);
}

TEST(Mxfp8Bf16Dot, KernelEqualsScalarTwinBitwise) {
  if (!dense_bf16dot_available()) GTEST_SKIP() << "CPU without AVX512-BF16";
  std::mt19937 rng(41);
  for (int64_t cols : {32, 96, 256, 1152, 2304})
    for (int spread : {1, 2}) {
      QMat q = make_mxfp8(11, cols, spread, rng);
      const std::string what = "cols " + std::to_string(cols) + " spread " + std::to_string(spread);
      for (int64_t n_tok = 1; n_tok <= kFewMaxTokens; ++n_tok)
        expect_twin(q.view, n_tok, 0, 11, rng, what);
      expect_twin(q.view, 5, 3, 8, rng, what + " rows 3..8");
      if (::testing::Test::HasFatalFailure()) return;
    }
  // Exponents at both ends: flushed, exact and overflowing blocks; NaN codes included.
  for (auto [lo, hi] : {std::pair{0, 12}, std::pair{240, 255}, std::pair{0, 255}}) {
    QMat q = make_mxfp8(9, 512, 1, rng, lo, hi);
    q.codes[5] = 0x7f, q.codes[600] = 0xff;
    for (int64_t n_tok : {1, 3, 8, 16})
      expect_twin(q.view, n_tok, 0, 9, rng,
                  "exponents " + std::to_string(lo) + ".." + std::to_string(hi));
  }
}

// An MXFP8 matrix converted to bf16 as the fast kernels convert it (bf16_row_bits).
testing::Bf16Mat as_bf16(const MatView& w) {
  testing::Bf16Mat b;
  b.bits.resize(size_t(w.rows * w.cols));
  for (int64_t r = 0; r < w.rows; ++r) bf16_row_bits(w, r, b.bits.data() + r * w.cols);
  b.view = testing::bf16_view(b.bits, w.rows, w.cols, w.cols);
  return b;
}

TEST(Mxfp8Widen, KernelEqualsScalarTwinAndTheBf16KernelBitwise) {
  if (!dense_widen_fast_available()) GTEST_SKIP() << "CPU without AVX-512 (or switched off)";
  std::mt19937 rng(44);
  for (int64_t cols : {32, 96, 1152})
    for (int spread : {1, 2}) {
      QMat q = make_mxfp8(11, cols, spread, rng);
      const std::string what = "cols " + std::to_string(cols) + " spread " + std::to_string(spread);
      for (int64_t n_tok = 1; n_tok <= kFewMaxTokens; ++n_tok)
        testing::expect_rows_twin(mxfp8_widen_fast_rows, mxfp8_widen_fast_rows_ref, q.view, n_tok,
                                  0, 11, rng, what);
      testing::expect_rows_twin(mxfp8_widen_fast_rows, mxfp8_widen_fast_rows_ref, q.view, 5, 3, 8,
                                rng, what + " rows 3..8");
      if (::testing::Test::HasFatalFailure()) return;
    }
  for (auto [lo, hi] : {std::pair{0, 12}, std::pair{240, 255}}) {
    QMat q = make_mxfp8(9, 512, 1, rng, lo, hi);
    for (int64_t n_tok : {1, 4, 9, 16})
      testing::expect_rows_twin(mxfp8_widen_fast_rows, mxfp8_widen_fast_rows_ref, q.view, n_tok, 0,
                                9, rng, "exponents " + std::to_string(lo));
  }
  // The same rows converted to bf16 through the bf16 kernel: the same bits.
  QMat q = make_mxfp8(7, 256, 1, rng);
  const testing::Bf16Mat b = as_bf16(q.view);
  for (int64_t n_tok : {1, 3, 16}) {
    const auto x = testing::make_dense_x(n_tok, 256, rng);
    std::vector<float> a(size_t(n_tok * 7)), c(a.size());
    mxfp8_widen_fast_rows(x.data(), n_tok, 256, q.view, 0, 7, a.data(), 7);
    dense_widen_fast_rows(x.data(), n_tok, 256, b.view, 0, 7, c.data(), 7);
    for (size_t i = 0; i < a.size(); ++i)
      if (!(std::isnan(a[i]) && std::isnan(c[i]))) {
        ASSERT_EQ(a[i], c[i]) << n_tok << " " << i;
      }
  }
}

// 17+ tokens: blocks of rows made bf16, then the bf16 view's fast gemm: bitwise that gemm on the
// converted matrix, for row ranges across the conversion's blocks (16 rows at 65536 columns).
TEST(Mxfp8ViaBf16, BitwiseTheBf16GemmOnTheConvertedRows) {
  std::mt19937 rng(45);
  const int64_t rows = 40, cols = 65536;
  QMat q = make_mxfp8(rows, cols, 1, rng);
  testing::Bf16Mat b = as_bf16(q.view);
  ASSERT_TRUE(bind_kernels(b.view, KernelMode::kFast));
  for (int64_t n_tok : {17, 24})
    for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, rows}, {5, 37}}) {
      auto x = testing::make_dense_x(n_tok, cols, rng);
      for (auto& v : x)
        if (!std::isfinite(v) || std::fabs(v) > 1e20f) v = 1.f;  // the gemm's own NaN order aside
      std::vector<float> a(size_t(n_tok * rows), -7.f), c(a);
      mxfp8_via_bf16_rows(x.data(), n_tok, cols, q.view, r0, r1, a.data(), rows);
      b.view.kernels->for_tokens(n_tok).rows(x.data(), n_tok, cols, b.view, r0, r1, c.data(), rows);
      ASSERT_EQ(std::memcmp(a.data(), c.data(), a.size() * 4), 0) << n_tok << " rows " << r0;
    }
}

// The twin against the double product of bf16(x) and the dequantized weights: the only rounding
// beyond the f32 sums is x's to bf16 (within 2^-9 of |x| per element).
TEST(Mxfp8Bf16Dot, TwinWithinBf16RoundingOfExact) {
  std::mt19937 rng(42);
  QMat q = make_mxfp8(9, 1152, 1, rng);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(1152), y(9), wrow(1152);
  for (auto& v : x) v = nd(rng);
  mxfp8_bf16dot_rows_ref(x.data(), 1, 1152, q.view, 0, 9, y.data(), 9);
  for (int64_t r = 0; r < 9; ++r) {
    mxfp8_dequant_row(q.view, r, wrow.data());
    double exact = 0, rounded = 0, mag = 0;
    for (size_t c = 0; c < 1152; ++c) {
      exact += double(x[c]) * wrow[c];
      rounded += double(bf16_to_f32(f32_to_bf16(x[c]))) * wrow[c];
      mag += std::fabs(double(x[c]) * wrow[c]);
    }
    EXPECT_NEAR(y[size_t(r)], rounded, 1e-5 * mag) << "row " << r;
    EXPECT_NEAR(y[size_t(r)], exact, mag / 512 + 1e-5 * mag) << "row " << r;
  }
}

// Fast MXFP8 binds the kernel family fast bf16 binds on this CPU; exact binds neither.
TEST(Mxfp8Bf16Dot, BoundInFastNumericsAsBf16Is) {
  std::mt19937 rng(43);
  QMat q = make_mxfp8(4, 64, 1, rng);
  testing::Bf16Mat b = testing::make_bf16(4, 64, 64, rng);
  MatView exact = q.view, fast = q.view, bf = b.view;
  ASSERT_TRUE(bind_kernels(exact, Numerics::kExact));
  ASSERT_TRUE(bind_kernels(fast, Numerics::kFast));
  ASSERT_TRUE(bind_kernels(bf, Numerics::kFast));
  EXPECT_NE(exact.kernels->for_tokens(1).rows, mxfp8_bf16dot_rows);
  EXPECT_NE(exact.kernels->for_tokens(1).rows, mxfp8_widen_fast_rows);
  const RowsKernel k = fast.kernels->for_tokens(1).rows;
  if (k != exact.kernels->for_tokens(1).rows) {
    EXPECT_EQ(fast.kernels->for_tokens(kGemmMinTokens).rows, mxfp8_via_bf16_rows);
  }
  EXPECT_EQ(fast.kernels->for_tokens(kFewMaxTokens).rows, k);
  if (bf.kernels->for_tokens(1).rows == dense_bf16dot_rows) {
    EXPECT_EQ(k, mxfp8_bf16dot_rows);
  } else if (bf.kernels->for_tokens(1).rows == dense_widen_fast_rows) {
    EXPECT_EQ(k, mxfp8_widen_fast_rows);
  } else {
    EXPECT_EQ(fast.kernels, exact.kernels);  // no fast kernel here: fast runs exact
  }
}

}  // namespace
}  // namespace inkling
