// The Highway kernels (dense matvec/gemm, machine probes) against their scalar twins in
// src/ops/reference on random data: odd sizes, strided rows, f32 and bf16, with and without a pool.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <hwy/targets.h>

#include "../common/random.h"
#include "base/dtype.h"
#include "ops/machine_hwy.h"
#include "ops/matmul.h"
#include "ops/matmul_hwy.h"
#include "ops/reference/reference.h"
#include "quant_test_util.h"

namespace inkling {
namespace {

using testing::randn;

using testing::Dense;
using testing::make_dense;

void expect_close_cols(const std::vector<float>& got, const std::vector<float>& want,
                       int64_t cols) {
  ASSERT_EQ(got.size(), want.size());
  // f32 sums of `cols` unit-variance products in another order: error grows like sqrt(cols).
  const float tol = 2e-5f * std::sqrt(float(cols)) * 4.f;
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "at " << i;
}

// (dtype, tokens, rows, cols, extra row stride, threads)
using Shape = std::tuple<DType, int, int, int, int, int>;
class DenseKernelTest : public ::testing::TestWithParam<Shape> {};

TEST_P(DenseKernelTest, MatmulMatchesReference) {
  const auto [dt, T, rows, cols, pad, threads] = GetParam();
  const Dense w = make_dense(dt, rows, cols, 11u + uint32_t(T * rows), cols + pad);
  const int64_t ldx = cols + 3, ldy = rows + 5;  // strided activations and outputs too
  const auto x = randn(size_t(T * ldx), 7u + uint32_t(cols));
  std::vector<float> got(size_t(T * ldy), -1.f), want(size_t(T * ldy), -1.f);
  ThreadPool pool(threads);
  matmul(x.data(), T, ldx, w.view, got.data(), ldy, threads > 1 ? &pool : nullptr);
  ref::matmul(x.data(), T, ldx, w.view, want.data(), ldy);
  expect_close_cols(got, want, cols);
}

TEST_P(DenseKernelTest, MatvecAndGemmAgreeOnRowRanges) {
  const auto [dt, T, rows, cols, pad, threads] = GetParam();
  (void)threads;
  const Dense w = make_dense(dt, rows, cols, 5u + uint32_t(rows), cols + pad);
  const auto x = randn(size_t(T * cols), 3u + uint32_t(T));
  const int64_t r0 = rows / 3, r1 = rows - rows / 5;
  std::vector<float> a(size_t(T * rows), 0.f), b(size_t(T * rows), 0.f), want(a.size(), 0.f);
  hwy_matvec_rows(x.data(), T, cols, w.view, r0, r1, a.data(), rows);
  hwy_gemm_rows(x.data(), T, cols, w.view, r0, r1, b.data(), rows);
  ref::matmul(x.data(), T, cols, w.view, want.data(), rows);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t r = 0; r < rows; ++r) {
      const size_t i = size_t(t * rows + r);
      if (r < r0 || r >= r1) {
        want[i] = 0.f;  // rows outside the range are left alone
      }
    }
  expect_close_cols(a, want, cols);
  expect_close_cols(b, want, cols);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, DenseKernelTest,
    ::testing::Values(Shape{DType::F32, 1, 37, 53, 0, 1}, Shape{DType::BF16, 1, 37, 53, 3, 2},
                      Shape{DType::BF16, 1, 64, 256, 0, 2}, Shape{DType::BF16, 3, 29, 100, 7, 2},
                      Shape{DType::F32, 5, 41, 96, 1, 2}, Shape{DType::BF16, 8, 19, 300, 4, 1},
                      Shape{DType::F32, 9, 45, 257, 0, 2}, Shape{DType::BF16, 17, 67, 515, 9, 2},
                      Shape{DType::BF16, 33, 130, 600, 0, 2}, Shape{DType::F32, 40, 23, 31, 2, 1},
                      Shape{DType::BF16, 100, 50, 777, 0, 2}, Shape{DType::F32, 64, 96, 1024, 0, 2},
                      // several column blocks of the few-token kernel, single chunks, a tail
                      Shape{DType::BF16, 16, 23, 2532, 5, 2}, Shape{DType::F32, 11, 10, 2100, 0, 1},
                      // the gemm's row chunks: several, the last partial, a range across them
                      Shape{DType::BF16, 40, 300, 520, 0, 2},
                      Shape{DType::F32, 24, 260, 264, 0, 1}));

// The dense matvec and gemm on every compiled target this CPU runs (the dispatcher picks one),
// with token counts whose padded width is not a multiple of 8 on 4-lane targets (a gemm packing
// loop once wrote past its panel there).
// safetensors does not align tensor data, so a mapped weight may start at an odd address. Every
// path (matvec, gemm, their scalar tails) must read it without misaligned loads (UBSan reported
// one in MatvecT's tail before) and give bit-identical results to the aligned copy.
TEST(DenseKernel, MisalignedWeightsGiveIdenticalResults) {
  for (DType dt : {DType::F32, DType::BF16})
    for (int T : {1, 3, 9}) {
      const int64_t rows = 21, cols = 37;  // odd widths: every scalar tail runs
      const Dense w = make_dense(dt, rows, cols, 17u + uint32_t(T), cols);
      std::vector<uint8_t> shifted(w.bytes.size() + 8);
      size_t off = 0;
      while ((reinterpret_cast<uintptr_t>(shifted.data()) + off) % 4 != 1) ++off;
      std::memcpy(shifted.data() + off, w.bytes.data(), w.bytes.size());
      MatView odd = w.view;
      odd.data = shifted.data() + off;
      const auto x = randn(size_t(T * cols), 29u);
      std::vector<float> a(size_t(T * rows)), b(a.size()), c(a.size()), d(a.size());
      matmul(x.data(), T, cols, w.view, a.data(), rows, nullptr);
      matmul(x.data(), T, cols, odd, b.data(), rows, nullptr);
      hwy_gemm_rows(x.data(), T, cols, odd, 0, rows, c.data(), rows);
      hwy_gemm_rows(x.data(), T, cols, w.view, 0, rows, d.data(), rows);
      EXPECT_EQ(a, b) << dtype_name(dt) << " T=" << T;
      EXPECT_EQ(c, d) << dtype_name(dt) << " T=" << T;
    }
}

TEST(DenseKernel, EveryCompiledTarget) {
  const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  for (int64_t target : targets) {
    hwy::SetSupportedTargetsForTest(target);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    for (DType dt : {DType::BF16, DType::F32})
      for (int T : {1, 3, 9, 12, 33}) {
        const int64_t K = 1300;  // two column blocks of the few-token kernel
        const Dense w = make_dense(dt, 21, K, 17u + uint32_t(T), K + 5);
        const auto x = randn(size_t(T * K), 19u + uint32_t(T));
        std::vector<float> got(size_t(T * 21) + 64, -1.f), want(got);
        matmul_rows(x.data(), T, K, w.view, 0, 21, got.data(), 21);
        ref::matmul(x.data(), T, K, w.view, want.data(), 21);
        expect_close_cols(got, want, K);
        if (::testing::Test::HasFatalFailure()) {
          ADD_FAILURE() << hwy::TargetName(target) << " T " << T;
          break;
        }
      }
  }
  hwy::SetSupportedTargetsForTest(0);
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
  EXPECT_FALSE(targets.empty());
}

TEST(DenseKernel, ReportsATarget) {
  EXPECT_NE(simd_target_name(), "");
}

}  // namespace
}  // namespace inkling
