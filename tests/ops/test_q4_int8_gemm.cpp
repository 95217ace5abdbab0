// The int8 prefill gemm (ops/quant_q4_int8_gemm.h): the kernel against its scalar twin bitwise
// (affine 4-bit groups 32/64/128 with bf16/f16/f32 scales, NVFP4, 1 and 2 parts, token counts
// across the 8/4/2/1 token blocks, partial 16-row tiles and row ranges, odd span counts,
// outliers, zero blocks, non-finite x), the twin against the f64 product of the dequantized
// weights within the split's error bound, and the registry binding it for 17+ tokens in fast
// numerics only.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ops/formats.h"
#include "ops/quant.h"
#include "ops/quant_q4_int8_gemm.h"
#include "quant_test_util.h"

namespace inkling {
namespace {

using testing::QMat;

TEST(Q4Int8Gemm, KernelIsBitwiseItsTwin) {
  if (!q4_int8_gemm_available()) GTEST_SKIP() << "no AVX512-VNNI + F16C";
  std::mt19937 rng(21);
  for (int parts : {1, 2})
    for (int64_t cols : {64, 192, 448}) {
      std::vector<QMat> mats;
      for (int group : {32, 64, 128})
        if (cols % group == 0)
          for (DType sdt : {DType::BF16, DType::F16, DType::F32})
            mats.push_back(testing::make_affine(37, cols, 4, group, sdt, 2, rng));
      mats.push_back(testing::make_nvfp4(37, cols, 2, rng));
      for (const QMat& q : mats)
        for (int64_t n_tok : {1, 3, 8, 15, 17, 30}) {
          const int64_t ldx = cols + 3;
          auto x = testing::randn_from(size_t(n_tok * ldx), rng);
          x[1] = 250.f;                                                             // an outlier
          for (int64_t i = 0; i < 32; ++i) x[size_t((n_tok - 1) * ldx + i)] = 0.f;  // a zero block
          const std::string what = format_label(q.view) + " " + dtype_name(q.view.scale_dtype) +
                                   " cols " + std::to_string(cols) + " parts " +
                                   std::to_string(parts) + " tokens " + std::to_string(n_tok);
          testing::expect_gemm_twin(q.view, n_tok, 0, 37, parts, x, ldx,
                                    what);  // tiles of 16, 16 and 5
          testing::expect_gemm_twin(q.view, n_tok, 5, 22, parts, x, ldx, what + " rows 5-22");
        }
    }
  auto x = testing::randn_from(size_t(17 * 448), rng);
  x[900] = std::numeric_limits<float>::quiet_NaN();
  QMat nv = testing::make_nvfp4(9, 448, 1, rng);
  QMat af = testing::make_affine(9, 448, 4, 64, DType::BF16, 1, rng);
  testing::expect_gemm_twin(nv.view, 17, 0, 9, 2, x, 448, "nvfp4 nan");
  testing::expect_gemm_twin(af.view, 17, 0, 9, 2, x, 448, "affine nan");
}

// The twin against the exact product of the dequantized weights: within the error of x's parts
// (half a step of d per element with one part, d / 256 with two) plus f32 rounding.
TEST(Q4Int8Gemm, TwinIsWithinTheSplitBound) {
  std::mt19937 rng(22);
  for (int parts : {1, 2})
    for (QMat q : {testing::make_affine(11, 256, 4, 64, DType::BF16, 1, rng),
                   testing::make_nvfp4(11, 256, 1, rng)}) {
      const MatView& w = q.view;
      const int64_t n_tok = 19;
      auto x = testing::randn_from(size_t(n_tok * 256), rng);
      std::vector<float> y(size_t(n_tok * 11)), row(256);
      q4_int8_gemm_rows_ref(x.data(), n_tok, 256, w, 0, 11, y.data(), 11, parts);
      for (int64_t r = 0; r < 11; ++r) {
        dequant_row(w, r, row.data());
        for (int64_t t = 0; t < n_tok; ++t) {
          double exact = 0, bound = 0;
          for (int64_t b = 0; b < 8; ++b) {
            double m = 0, wsum = 0;
            for (int64_t i = 0; i < 32; ++i) {
              m = std::max(m, double(std::fabs(x[size_t(t * 256 + b * 32 + i)])));
              wsum += std::fabs(row[size_t(b * 32 + i)]);
            }
            for (int64_t i = 0; i < 32; ++i)
              exact += double(x[size_t(t * 256 + b * 32 + i)]) * row[size_t(b * 32 + i)];
            const double step = m / 127.0;
            bound += wsum * (parts == 2 ? step / 256 * (1 + 1.0 / 256) : step / 2);
          }
          EXPECT_NEAR(y[size_t(t * 11 + r)], exact, bound * 1.01 + 1e-4 * std::fabs(exact) + 1e-5)
              << format_label(w) << " parts " << parts << " row " << r << " token " << t;
        }
      }
    }
}

// Fast numerics bind it for 17+ tokens, exact never: affine 4-bit on the VNNI lane-set kernel
// with one part for kFast and two for kFastFine; affine on the 512-bit int8 kernel (CPUs without
// VBMI, or that kernel off) and NVFP4 with two in both grades.
TEST(Q4Int8Gemm, BoundForPrefillInFastNumericsOnly) {
  if (!q4_int8_gemm_available()) GTEST_SKIP() << "no AVX512-VNNI + F16C";
  std::mt19937 rng(23);
  auto check = [](MatView w, bool one_part_for_fast, const std::string& what) {
    ASSERT_TRUE(bind_kernels(w, KernelMode::kFast));
    EXPECT_EQ(w.kernels->for_tokens(17).rows,
              one_part_for_fast ? &q4_int8_gemm_rows : &q4_int8_gemm_fine_rows)
        << what;
    ASSERT_TRUE(bind_kernels(w, KernelMode::kFastFine));
    EXPECT_EQ(w.kernels->for_tokens(64).rows, &q4_int8_gemm_fine_rows) << what;
    ASSERT_TRUE(bind_kernels(w, KernelMode::kExact));
    EXPECT_NE(w.kernels->for_tokens(64).rows, &q4_int8_gemm_rows) << what;
    EXPECT_NE(w.kernels->for_tokens(64).rows, &q4_int8_gemm_fine_rows) << what;
  };
  QMat af = testing::make_affine(4, 256, 4, 64, DType::BF16, 1, rng);
  QMat nv = testing::make_nvfp4(4, 256, 1, rng);
  check(nv.view, false, "nvfp4");
  if (affine_vnni_enabled()) check(af.view, true, "affine, VNNI lane-set kernel");
  testing::NoVnniKernel no_vnni;  // the 512-bit int8 kernel takes affine 4-bit (without bf16 dot)
  if (!q4_bf16dot_enabled()) check(af.view, false, "affine, 512-bit int8 kernel");
}

}  // namespace
}  // namespace inkling
