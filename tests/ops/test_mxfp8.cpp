// MXFP8 (E4M3 values, one E8M0 power of two per 32 columns; Inkling 2's experts): the scalar
// dequantizer against values worked out by hand, and every kernel the registry binds (1..16
// tokens, the gemm for 17+, every compiled Highway target) against the scalar twin, including
// exponents at both ends of the range, strided rows, row and column slices, joined halves and the
// row-count invariance speculative decoding and batching rely on.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <hwy/targets.h>

#include "ops/formats.h"
#include "ops/machine_hwy.h"
#include "ops/matmul.h"
#include "ops/matmul_hwy.h"
#include "ops/quant.h"
#include "ops/quant_matmul.h"
#include "quant_test_util.h"

namespace inkling {
namespace {

using testing::compare;
using testing::make_mxfp8;
using testing::QMat;

TEST(Mxfp8, DequantByHand) {
  // Row 0: 1.0 (e 7, m 0), -1.5, the smallest subnormal 2^-9, max 448, -0, 2^-6 (e 1, m 0).
  std::vector<uint8_t> codes(64, 0), scales = {127, 130};
  const uint8_t row0[] = {0x38, 0xbc, 0x01, 0x7e, 0x80, 0x08};
  std::memcpy(codes.data(), row0, sizeof row0);
  codes[32] = 0x38;  // the second block: 1.0 * 2^3
  codes[33] = 0x07;  // 7 * 2^-9 * 2^3
  MatView v;
  v.format = WeightFormat::kMxfp8, v.dtype = DType::F8_E4M3;
  v.data = codes.data(), v.scales = scales.data(), v.scale_dtype = DType::U8;
  v.rows = 1, v.cols = 64, v.row_stride = 64, v.scale_stride = 2, v.bits = 8, v.group = 32;
  ASSERT_TRUE(bind_kernels(v));
  std::vector<float> out(64);
  dequant_row(v, 0, out.data());
  EXPECT_EQ(out[0], 1.f);
  EXPECT_EQ(out[1], -1.5f);
  EXPECT_EQ(out[2], std::ldexp(1.f, -9));
  EXPECT_EQ(out[3], 448.f);
  EXPECT_EQ(out[4], 0.f);
  EXPECT_TRUE(std::signbit(out[4]));
  EXPECT_EQ(out[5], std::ldexp(1.f, -6));
  EXPECT_EQ(out[32], 8.f);
  EXPECT_EQ(out[33], 7.f * std::ldexp(1.f, -6));
  EXPECT_EQ(e8m0_to_f32(0), std::ldexp(1.f, -127));  // transformers: exp2(-127), a subnormal
  EXPECT_EQ(e8m0_to_f32(254), std::ldexp(1.f, 127));
  EXPECT_TRUE(std::isinf(e8m0_to_f32(255)));
  EXPECT_EQ(format_label(v), "mxfp8");
  EXPECT_EQ(bytes_per_element(v), 1.0 + 1.0 / 32);
  // x = e_0 and e_32 pick out columns 0 and 32 through the fused kernel.
  std::vector<float> x(2 * 64, 0.f), y(2);
  x[0] = 1.f, x[64 + 32] = 1.f;
  matmul_rows(x.data(), 2, 64, v, 0, 1, y.data(), 1);
  EXPECT_EQ(y[0], 1.f);
  EXPECT_EQ(y[1], 8.f);
}

TEST(Mxfp8, KernelsMatchScalarTwin) {
  std::mt19937 rng(31);
  for (int64_t rows : {1, 5, 33})
    for (int64_t cols : {32, 96, 256, 512 + 32})
      for (int spread : {1, 2}) {
        QMat q = make_mxfp8(rows, cols, spread, rng);
        ASSERT_TRUE(bind_kernels(q.view));
        for (int64_t n_tok : {1, 2, 3, 4, 5, 9, 16, 17, 24, 40}) {
          const std::string what = "mxfp8 rows " + std::to_string(rows) + " cols " +
                                   std::to_string(cols) + " tokens " + std::to_string(n_tok);
          compare(q.view, n_tok, rng, what, 0.f, 1.f, matmul_rows);
          if (n_tok <= 4) compare(q.view, n_tok, rng, what + " (hwy)");
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
}

TEST(Mxfp8, ExtremeExponentsMatchScalarTwin) {
  std::mt19937 rng(32);
  // Tiny (results in the subnormal range are compared with an absolute floor) and huge factors
  // (e >= 247 takes the two-factor path; 254 is 2^127, the largest finite). Values stay within
  // f32 (beyond it the scalar twin's f32 row is inf, as transformers' dequantized weight would
  // be): below 2^-4 where e >= 246.
  for (auto [lo, hi] :
       {std::pair{1, 12}, std::pair{238, 245}, std::pair{246, 254}, std::pair{0, 254}}) {
    QMat q = make_mxfp8(7, 256, 1, rng, lo, hi);
    if (hi >= 246)
      for (auto& b : q.codes) b &= 0x97;  // sign, mantissa and exponent field 0 or 2
    ASSERT_TRUE(bind_kernels(q.view));
    for (int64_t n_tok : {1, 3, 20}) {
      // x small enough that the sums stay finite, large enough that x * e4m3 / 256 stays normal.
      compare(q.view, n_tok, rng, "exponents " + std::to_string(lo) + ".." + std::to_string(hi),
              0.f, hi > 200 ? 1e-6f : 1.f, matmul_rows);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// A token's result is bitwise the same alone, in a batch of 2..16 (kOne / kFew) and in any row
// band; slices and joined halves give the rows of the whole.
TEST(Mxfp8, RowCountInvarianceSlicesAndHalves) {
  std::mt19937 rng(33);
  QMat q = make_mxfp8(12, 256, 1, rng);
  ASSERT_TRUE(bind_kernels(q.view));
  const MatView& w = q.view;
  std::vector<float> x(size_t(16 * 256));
  for (auto& v : x) v = std::normal_distribution<float>(0.f, 1.f)(rng);
  std::vector<float> alone(size_t(16 * 12)), batch(size_t(16 * 12));
  for (int64_t t = 0; t < 16; ++t)
    matmul_rows(x.data() + t * 256, 1, 256, w, 0, 12, alone.data() + t * 12, 12);
  for (int64_t n : {2, 5, 16}) {
    matmul_rows(x.data(), n, 256, w, 0, 12, batch.data(), 12);
    ASSERT_EQ(std::memcmp(batch.data(), alone.data(), size_t(n * 12) * 4), 0) << n;
  }
  std::vector<float> band(12);
  matmul_rows(x.data(), 1, 256, w, 0, 5, band.data(), 12);
  matmul_rows(x.data(), 1, 256, w, 5, 12, band.data(), 12);
  EXPECT_EQ(std::memcmp(band.data(), alone.data(), 12 * 4), 0);
  // Column slice [64, 160) and row slice [3, 8).
  const MatView s = slice_cols(w, 64, 96);
  std::vector<float> full(256), part(96);
  for (int64_t r = 0; r < 12; ++r) {
    dequant_row(w, r, full.data());
    dequant_row(s, r, part.data());
    ASSERT_EQ(std::memcmp(full.data() + 64, part.data(), 96 * 4), 0) << r;
  }
  compare(s, 3, rng, "column slice");
  compare(w.slice_rows(3, 5), 2, rng, "row slice");
  // Interleaved halves (gate rows even, up rows odd, as Inkling 2's w13) join into the whole.
  MatView a = w, b = w.slice_rows(1, 11), whole;
  a.rows = b.rows = 6;
  a.row_stride = b.row_stride = 2 * w.row_stride;
  a.scale_stride = b.scale_stride = 2 * w.scale_stride;
  bool inter = false;
  ASSERT_TRUE(join_halves(a, b, &whole, &inter));
  EXPECT_TRUE(inter);
  EXPECT_EQ(whole.rows, 12);
  EXPECT_EQ(whole.row_stride, w.row_stride);
  compare(a, 4, rng, "even rows");
}

TEST(Mxfp8, RegistryRefusesViewsItCannotRun) {
  std::mt19937 rng(34);
  QMat q = make_mxfp8(3, 64, 1, rng);
  MatView bad = q.view;
  bad.cols = 48;  // not a whole number of blocks
  EXPECT_FALSE(bind_kernels(bad));
  bad = q.view;
  bad.scale_dtype = DType::BF16;
  EXPECT_FALSE(bind_kernels(bad));
  MatView ok = q.view;
  EXPECT_TRUE(bind_kernels(ok, KernelMode::kFast));  // fast mode: the exact kernels for now
  MatView e8 = q.view;  // scales stored as F8_E8M0 (torch's float8_e8m0fnu): the same bytes
  e8.scale_dtype = DType::F8_E8M0;
  EXPECT_TRUE(bind_kernels(e8));
  EXPECT_EQ(load_as_f32(DType::F8_E8M0, q.scales.data(), 0), e8m0_to_f32(q.scales[0]));
  EXPECT_EQ(*parse_dtype("F8_E8M0"), DType::F8_E8M0);
  EXPECT_EQ(dtype_size(DType::F8_E8M0), 1u);
  EXPECT_TRUE(bind_kernels(ok, KernelMode::kFastFine));
}

// Every compiled Highway target this CPU supports, 1..4 tokens and the gemm.
TEST(Mxfp8, EveryCompiledTarget) {
  std::mt19937 rng(35);
  const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  for (int64_t t : targets) {
    hwy::SetSupportedTargetsForTest(t);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    const std::string name = simd_target_name();
    QMat q = make_mxfp8(5, 256 + 32, 2, rng);
    for (int64_t n_tok : {1, 6}) compare(q.view, n_tok, rng, name + " mxfp8");
    QMat g = make_mxfp8(9, 512, 1, rng);
    if (hwy_gemm_mxfp8_supported(g.view))
      compare(g.view, 20, rng, name + " mxfp8 gemm", 0.f, 1.f, hwy_gemm_rows);
    std::printf("[mxfp8] target %s ok\n", name.c_str());
  }
  hwy::SetSupportedTargetsForTest(0);
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
  EXPECT_FALSE(targets.empty());
}

}  // namespace
}  // namespace inkling
