// Fused quantized kernels against their scalar twin (dequant_row + dot) on random packed data:
// MLX affine 4/8-bit (the byte kernel for 8) at groups 32/64/128 with bf16/f16/f32 scales (negative
// scales included), NVFP4 with e4m3 block scales and scale2, odd row counts, 1..9 tokens,
// row-strided views (every other row, as a de-interleaved gate/up half is) and column slices. Also
// dequant_row against hand-built values. The AVX512-BF16 4-bit kernel is tested on its own where
// the CPU has it, and the portable kernels with it switched off.
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
#include "ops/quant_q4_bf16dot.h"
#include "quant_test_util.h"

namespace inkling {
namespace {

using testing::abs_scale;
using testing::compare;
using testing::make_affine;
using testing::make_nvfp4;
using testing::PortableKernelsOnly;
using testing::put_scale;
using testing::QMat;

TEST(QuantMatmul, AffineMatchesScalarTwin) {
  PortableKernelsOnly portable;
  std::mt19937 rng(11);
  std::printf("[quant matmul] target %s\n", simd_target_name().c_str());
  for (int bits : {4, 8})
    for (int group : {32, 64, 128})
      for (DType sdt : {DType::BF16, DType::F16, DType::F32})
        for (int64_t rows : {1, 7, 33})
          for (int spread : {1, 2}) {
            const int64_t cols = group * (rows == 7 ? 3 : 2);
            QMat q = make_affine(rows, cols, bits, group, sdt, spread, rng);
            for (int64_t n_tok : {1, 2, 3, 4, 5, 9}) {
              const std::string what = "q" + std::to_string(bits) + " g" + std::to_string(group) +
                                       " " + dtype_name(sdt) + " rows " + std::to_string(rows) +
                                       " spread " + std::to_string(spread) + " tok " +
                                       std::to_string(n_tok);
              compare(q.view, n_tok, rng, what);
              if (::testing::Test::HasFatalFailure()) return;
            }
          }
}

// Wide 4-bit rows: several whole code vectors per row plus a partial one (the word-lane kernel's
// main loop, its zero-padded tail and its 4-row / 2-row blocks with leftover rows).
TEST(QuantMatmul, AffineWide4BitRows) {
  PortableKernelsOnly portable;
  std::mt19937 rng(23);
  for (int group : {32, 64, 128})
    for (int64_t cols : {int64_t(1024), int64_t(1024 + 3 * 128)})
      for (int64_t rows : {int64_t(1), int64_t(6), int64_t(13)}) {
        QMat q = make_affine(rows, cols, 4, group, DType::BF16, 1, rng);
        for (int64_t n_tok : {1, 2, 3, 4, 6}) {
          compare(q.view, n_tok, rng,
                  "wide g" + std::to_string(group) + " cols " + std::to_string(cols) + " rows " +
                      std::to_string(rows) + " tok " + std::to_string(n_tok));
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
}

TEST(QuantMatmul, Nvfp4MatchesScalarTwin) {
  std::mt19937 rng(12);
  for (int64_t rows : {1, 5, 31})
    for (int64_t cols : {16, 48, 128})
      for (int spread : {1, 2}) {
        QMat q = make_nvfp4(rows, cols, spread, rng);
        for (int64_t n_tok : {1, 3, 4, 7}) {
          compare(q.view, n_tok, rng,
                  "nvfp4 rows " + std::to_string(rows) + " cols " + std::to_string(cols));
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
}

TEST(QuantMatmul, RowBandsAndSlicesMatchTheWhole) {
  std::mt19937 rng(13);
  QMat a = make_affine(9, 256, 4, 64, DType::BF16, 1, rng);
  QMat n = make_nvfp4(9, 256, 1, rng);
  for (const MatView* w : {&a.view, &n.view}) {
    std::vector<float> x(256 * 2), whole(9 * 2), band(9 * 2);
    for (auto& v : x) v = std::normal_distribution<float>(0.f, 1.f)(rng);
    quant_matmul_rows(x.data(), 2, 256, *w, 0, 9, whole.data(), 9);
    quant_matmul_rows(x.data(), 2, 256, *w, 0, 4, band.data(), 9);
    quant_matmul_rows(x.data(), 2, 256, *w, 4, 9, band.data(), 9);
    EXPECT_EQ(whole, band);
    // Column slice [128, 256) (as a flattened shared expert's down projection is).
    const MatView s = slice_cols(*w, 128, 128);
    std::vector<float> full(256), part(128);
    for (int64_t r = 0; r < 9; ++r) {
      dequant_row(*w, r, full.data());
      dequant_row(s, r, part.data());
      ASSERT_EQ(std::memcmp(full.data() + 128, part.data(), 128 * 4), 0) << r;
    }
    compare(s, 3, rng, "column slice");
    compare(w->slice_rows(3, 5), 2, rng, "row slice");
  }
}

// The dispatcher picks one target; run every compiled target this CPU supports (AVX3, AVX2,
// SSE4, ... down to the emulated ones) through the same comparisons.
TEST(QuantMatmul, EveryCompiledTarget) {
  PortableKernelsOnly portable;
  std::mt19937 rng(14);
  const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  for (int64_t t : targets) {
    hwy::SetSupportedTargetsForTest(t);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    const std::string name = simd_target_name();
    for (int bits : {4, 8})
      for (int group : {32, 128}) {
        QMat q = make_affine(5, 256, bits, group, DType::BF16, 2, rng);
        for (int64_t n_tok : {1, 6}) compare(q.view, n_tok, rng, name + " affine");
      }
    QMat n = make_nvfp4(5, 64, 2, rng);
    for (int64_t n_tok : {1, 6}) compare(n.view, n_tok, rng, name + " nvfp4");
    std::printf("[quant matmul] target %s ok\n", name.c_str());
  }
  hwy::SetSupportedTargetsForTest(0);
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
  EXPECT_FALSE(targets.empty());
}

// The AVX512-BF16 4-bit kernel (1 and 2 tokens), MLX affine and NVFP4: groups 8..256, rows with a
// partial code vector, scale dtypes, strided rows, row and column slices, leftover rows of the
// 4-row blocks, x spanning 12 orders of magnitude (the exact 3-part bf16 split), and
// matmul_rows routing to it through the format registry.
// Fast numerics: the one-part kernel on x is bitwise the exact kernel on bf16(x) (whose split has
// zero mid and lo parts), affine 4-bit and NVFP4, 1..16 tokens.
TEST(QuantMatmul, Bf16DotFastIsExactOnRoundedX) {
  if (!q4_bf16dot_available()) GTEST_SKIP() << "CPU without AVX512-BF16";
  std::mt19937 rng(37);
  std::normal_distribution<float> nd(0.f, 1.f);
  QMat a = make_affine(13, 1024 + 64, 4, 64, DType::BF16, 2, rng);
  QMat n = make_nvfp4(11, 1024 + 16, 1, rng);
  for (const MatView* w : {&a.view, &n.view})
    for (int64_t n_tok : {1, 2, 3, 16}) {
      const int64_t ldx = w->cols + 3, ldy = w->rows + 1;
      std::vector<float> x(size_t(n_tok * ldx)), xr(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        x[i] = nd(rng) * (i % 7 == 0 ? 100.f : 1.f);
        xr[i] = bf16_to_f32(f32_to_bf16(x[i]));
      }
      std::vector<float> fast(size_t(n_tok * ldy), -1.f), exact(fast);
      q4_bf16dot_fast_rows(x.data(), n_tok, ldx, *w, 0, w->rows, fast.data(), ldy);
      q4_bf16dot_rows(xr.data(), n_tok, ldx, *w, 0, w->rows, exact.data(), ldy);
      for (size_t i = 0; i < fast.size(); ++i)
        ASSERT_EQ(f32_to_bits(fast[i]), f32_to_bits(exact[i]))
            << (w == &a.view ? "affine q4" : "nvfp4") << " tokens " << n_tok << " at " << i;
    }
}

TEST(QuantMatmul, Bf16DotMatchesScalarTwin) {
  if (!q4_bf16dot_available()) GTEST_SKIP() << "CPU without AVX512-BF16";
  ASSERT_TRUE(q4_bf16dot_enabled());
  std::mt19937 rng(31);
  for (int group : {8, 16, 32, 64, 128, 256})
    for (int64_t cols : {int64_t(256), int64_t(1024 + 256 + 3 * 64)})
      for (DType sdt : {DType::BF16, DType::F16, DType::F32})
        for (int64_t rows : {int64_t(1), int64_t(7), int64_t(13)})
          for (int spread : {1, 2}) {
            if (cols % group) continue;
            QMat q = make_affine(rows, cols, 4, group, sdt, spread, rng);
            ASSERT_TRUE(q4_bf16dot_handles(q.view, 1));
            for (int64_t n_tok : {1, 2}) {
              const std::string what = "bf16dot g" + std::to_string(group) + " cols " +
                                       std::to_string(cols) + " " + dtype_name(sdt) + " rows " +
                                       std::to_string(rows) + " spread " + std::to_string(spread) +
                                       " tok " + std::to_string(n_tok);
              compare(q.view, n_tok, rng, what, 16.f, 1.f, q4_bf16dot_rows);
              compare(q.view, n_tok, rng, what + " tiny x", 16.f, 1e-6f, q4_bf16dot_rows);
              compare(q.view, n_tok, rng, what + " large x", 16.f, 1e6f, q4_bf16dot_rows);
              if (::testing::Test::HasFatalFailure()) return;
            }
          }
  // NVFP4 through the same kernel (E2M1 -> bf16 by table, block scales e4m3 * scale2, including
  // subnormal e4m3 codes): no offset, so the plain f32 tolerance applies.
  for (int64_t cols : {int64_t(16), int64_t(256), int64_t(1024 + 384 + 16)})
    for (int64_t rows : {int64_t(1), int64_t(7), int64_t(13)})
      for (int spread : {1, 2}) {
        QMat n = make_nvfp4(rows, cols, spread, rng);
        ASSERT_TRUE(q4_bf16dot_handles(n.view, 2));
        for (int64_t n_tok : {1, 2}) {
          const std::string what = "bf16dot nvfp4 cols " + std::to_string(cols) + " rows " +
                                   std::to_string(rows) + " tok " + std::to_string(n_tok);
          compare(n.view, n_tok, rng, what, 0.f, 1.f, q4_bf16dot_rows);
          compare(n.view, n_tok, rng, what + " tiny x", 0.f, 1e-6f, q4_bf16dot_rows);
          compare(n.view, n_tok, rng, what + " large x", 0.f, 1e6f, q4_bf16dot_rows);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
  QMat nv = make_nvfp4(9, 512, 1, rng);
  EXPECT_TRUE(q4_bf16dot_handles(nv.view, 16));  // up to 16 tokens, in pairs
  EXPECT_FALSE(q4_bf16dot_handles(nv.view, 17));
  for (int64_t n_tok : {3, 5, 7, 16})
    compare(nv.view, n_tok, rng, "bf16dot nvfp4 odd tokens", 0.f, 1.f, q4_bf16dot_rows);
  compare(slice_cols(nv.view, 128, 256), 2, rng, "bf16dot nvfp4 column slice", 0.f, 1.f,
          q4_bf16dot_rows);
  compare(nv.view.slice_rows(3, 5), 1, rng, "bf16dot nvfp4 row slice", 0.f, 1.f, q4_bf16dot_rows);
  QMat q = make_affine(9, 512, 4, 64, DType::BF16, 1, rng);
  compare(slice_cols(q.view, 128, 256), 2, rng, "bf16dot column slice", 16.f, 1.f, q4_bf16dot_rows);
  compare(q.view.slice_rows(3, 5), 1, rng, "bf16dot row slice", 16.f, 1.f, q4_bf16dot_rows);
  EXPECT_TRUE(q4_bf16dot_handles(q.view, 16));
  EXPECT_FALSE(q4_bf16dot_handles(q.view, 17));  // prefill blocks go to the gemm
  for (int64_t n_tok : {3, 16})
    compare(q.view, n_tok, rng, "bf16dot affine 4-bit tokens", 16.f, 1.f, q4_bf16dot_rows);
  QMat q8 = make_affine(3, 256, 8, 64, DType::BF16, 1, rng);
  EXPECT_FALSE(q4_bf16dot_handles(q8.view, 1));
  // Switched off, the same call gives the portable kernel's result, which differs in rounding.
  std::vector<float> x(512), on(9), off(9);
  for (auto& v : x) v = std::normal_distribution<float>(0.f, 1.f)(rng);
  // (q.view has no bound kernels, so matmul_rows asks the registry on every call.)
  matmul_rows(x.data(), 1, 512, q.view, 0, 9, on.data(), 9);
  {
    PortableKernelsOnly portable;
    EXPECT_FALSE(q4_bf16dot_enabled());
    matmul_rows(x.data(), 1, 512, q.view, 0, 9, off.data(), 9);
  }
  EXPECT_TRUE(q4_bf16dot_enabled());
  EXPECT_NE(on, off);
  // The same buffer with one value changed is prepared again (prepared x is reused only for
  // identical contents): the changed column moves every output by w[r, c] * delta.
  std::vector<float> again(9), want(9);
  x[77] += 1.f;
  q4_bf16dot_rows(x.data(), 1, 512, q.view, 0, 9, again.data(), 9);
  quant_matmul_rows_ref(x.data(), 1, 512, q.view, 0, 9, want.data(), 9);
  for (int r = 0; r < 9; ++r) EXPECT_NEAR(again[size_t(r)], want[size_t(r)], 1e-4f) << r;
  EXPECT_NE(again, on);
}

// Halves of one fused gate/up tensor join back into the whole: interleaved and stacked, dense
// and quantized; rows of the joined product equal the halves' products bit for bit. Views that
// are not halves of one matrix are refused.
TEST(QuantMatmul, JoinHalvesOfFusedTensors) {
  std::mt19937 rng(41);
  auto halves = [](const MatView& m, bool interleaved, MatView* a, MatView* b) {
    const int64_t n = m.rows / 2;
    if (!interleaved) {
      *a = m.slice_rows(0, n), *b = m.slice_rows(n, n);
      return;
    }
    *a = m, *b = m.slice_rows(1, m.rows - 1);
    a->rows = b->rows = n;
    a->row_stride = b->row_stride = 2 * m.row_stride;
    a->scale_stride = b->scale_stride = 2 * m.scale_stride;
  };
  std::vector<uint16_t> dense(size_t(12 * 96));
  for (auto& v : dense) v = f32_to_bf16(std::normal_distribution<float>(0.f, 1.f)(rng));
  MatView d;
  d.dtype = DType::BF16, d.data = reinterpret_cast<const uint8_t*>(dense.data());
  d.rows = 12, d.cols = 96, d.row_stride = 96;
  QMat q = make_affine(12, 256, 4, 64, DType::BF16, 1, rng);
  QMat n = make_nvfp4(12, 64, 1, rng);
  for (const MatView* m : {&d, &q.view, &n.view})
    for (bool inter : {true, false}) {
      MatView a, b, whole;
      halves(*m, inter, &a, &b);
      bool got_inter = !inter;
      ASSERT_TRUE(join_halves(a, b, &whole, &got_inter)) << inter;
      EXPECT_EQ(got_inter, inter);
      EXPECT_EQ(whole.rows, m->rows);
      EXPECT_EQ(whole.row_stride, m->row_stride);
      EXPECT_EQ(whole.scale_stride, m->scale_stride);
      std::vector<float> x(size_t(2 * m->cols)), yw(size_t(2 * m->rows)), ya(12), yb(12);
      for (auto& v : x) v = std::normal_distribution<float>(0.f, 1.f)(rng);
      matmul_rows(x.data(), 2, m->cols, whole, 0, whole.rows, yw.data(), m->rows);
      matmul_rows(x.data(), 2, m->cols, a, 0, 6, ya.data(), 6);
      matmul_rows(x.data(), 2, m->cols, b, 0, 6, yb.data(), 6);
      for (int t = 0; t < 2; ++t)
        for (int i = 0; i < 6; ++i) {
          const int64_t ra = inter ? 2 * i : i, rb = inter ? 2 * i + 1 : 6 + i;
          EXPECT_EQ(yw[size_t(t * 12 + ra)], ya[size_t(t * 6 + i)]) << t << " " << i;
          EXPECT_EQ(yw[size_t(t * 12 + rb)], yb[size_t(t * 6 + i)]) << t << " " << i;
        }
      // Refused: the same half twice, halves swapped (interleaved), a gap, another dtype.
      bool dummy;
      EXPECT_FALSE(join_halves(a, a, &whole, &dummy));
      if (inter) {
        EXPECT_FALSE(join_halves(b, a, &whole, &dummy));
      }
      MatView gap = b;
      gap.data += m->format == WeightFormat::kDense ? 2 * 96 * 2 : 2 * m->row_stride;
      EXPECT_FALSE(join_halves(a, gap, &whole, &dummy));
      MatView other = b;
      other.dtype = m->dtype == DType::BF16 ? DType::F16 : DType::BF16;
      EXPECT_FALSE(join_halves(a, other, &whole, &dummy));
    }
}

// Groups that are not a whole number of vectors (40 and 48 columns: 2.5 and 3 vectors of 16 on
// AVX3, 5 and 6 of 8 on AVX2) or start mid-byte (5 columns, 4-bit): the checkpoints' groups are
// 32/64/128 (the loader refuses others), but views made by hand reach the registry with any group
// that divides the row. 4 and 8 bits, 1..33 tokens, every compiled target, against the scalar
// twin. (The Highway kernel once read past such a group into the next with the wrong scale.)
TEST(QuantMatmul, AffineGroupsOfAnyLengthMatchScalarTwin) {
  std::mt19937 rng(53);
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    for (int bits : {4, 8})
      for (int group : {40, 48, 5}) {
        QMat q = make_affine(9, 1200, bits, group, DType::BF16, 1, rng);
        for (int64_t n_tok : {1, 2, 13, 33})
          compare(q.view, n_tok, rng,
                  std::string(hwy::TargetName(target)) + " q" + std::to_string(bits) + " g" +
                      std::to_string(group) + " tok " + std::to_string(n_tok),
                  0.f, 1.f, matmul_rows);
        if (::testing::Test::HasFatalFailure()) break;
      }
  }
  hwy::SetSupportedTargetsForTest(0);
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
}

// 8+ tokens against MLX 4-bit and NVFP4 views go through the gemm with tiles dequantized once
// (where hwy_gemm_q4_supported): odd token counts, groups 32/64/128 (and 40), scale dtypes, strided
// rows, row and column slices, on every compiled target; matmul_rows against the scalar twin.
TEST(QuantMatmul, Affine4GemmMatchesScalarTwin) {
  std::mt19937 rng(51);
  const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  for (int64_t target : targets) {
    hwy::SetSupportedTargetsForTest(target);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    for (int group : {32, 64, 128})
      for (DType sdt : {DType::BF16, DType::F32})
        for (int spread : {1, 2}) {
          QMat q = make_affine(11, 1024 + 256, 4, group, sdt, spread, rng);
          std::vector<MatView> views = {q.view, q.view.slice_rows(2, 7),
                                        slice_cols(q.view, 256, 512)};
          for (const MatView& v : views) {
            ASSERT_TRUE(hwy_gemm_q4_supported(v)) << hwy::TargetName(target);
            for (int64_t n_tok : {8, 13, 33})
              compare(v, n_tok, rng,
                      std::string(hwy::TargetName(target)) + " g" + std::to_string(group) +
                          " tok " + std::to_string(n_tok),
                      0.f, 1.f, matmul_rows);
            if (::testing::Test::HasFatalFailure()) return;
          }
        }
    for (int spread : {1, 2}) {  // NVFP4 (E2M1 decoded per tile, e4m3 block factors)
      QMat n = make_nvfp4(11, 1024 + 256, spread, rng);
      for (const MatView& v : {n.view, n.view.slice_rows(2, 7), slice_cols(n.view, 256, 512)}) {
        ASSERT_TRUE(hwy_gemm_q4_supported(v)) << hwy::TargetName(target);
        for (int64_t n_tok : {8, 13, 33})
          compare(v, n_tok, rng,
                  std::string(hwy::TargetName(target)) + " nvfp4 tok " + std::to_string(n_tok), 0.f,
                  1.f, matmul_rows);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
  // 8-bit is not a 4-bit tile source (it has the word-lane tiles, test_affine_widths.cpp).
  EXPECT_FALSE(hwy_gemm_q4_supported(make_affine(3, 1024, 8, 64, DType::BF16, 1, rng).view));
}

TEST(QuantDequant, AffineAndNvfp4ByHand) {
  // Affine 4-bit, group 32: row 0 codes 0..15 twice, scale -0.5, bias 2.
  std::vector<uint8_t> codes(16), sc(2 * 2), bi(2 * 2);
  for (int c = 0; c < 32; ++c) codes[size_t(c / 2)] |= uint8_t((c % 16) << (4 * (c % 2)));
  put_scale(sc, DType::BF16, 0, -0.5f);
  put_scale(bi, DType::BF16, 0, 2.f);
  MatView v;
  v.format = WeightFormat::kAffine;
  v.dtype = DType::U32;
  v.data = codes.data();
  v.rows = 1;
  v.cols = 32;
  v.row_stride = 16;
  v.scales = sc.data();
  v.biases = bi.data();
  v.scale_dtype = DType::BF16;
  v.scale_stride = 1;
  v.bits = 4;
  v.group = 32;
  std::vector<float> out(32);
  dequant_row(v, 0, out.data());
  for (int c = 0; c < 32; ++c) EXPECT_EQ(out[size_t(c)], -0.5f * float(c % 16) + 2.f) << c;
  // NVFP4: codes 0..15 (low nibble first), block scale 0x38 (= 1.0), scale2 0.25.
  std::vector<uint8_t> nc(8), ns = {0x38};
  for (int c = 0; c < 16; ++c) nc[size_t(c / 2)] |= uint8_t(c << (4 * (c % 2)));
  MatView n;
  n.format = WeightFormat::kNvfp4;
  n.dtype = DType::U8;
  n.data = nc.data();
  n.rows = 1;
  n.cols = 16;
  n.row_stride = 8;
  n.scales = ns.data();
  n.scale_dtype = DType::F8_E4M3;
  n.scale_stride = 1;
  n.bits = 4;
  n.group = 16;
  n.scale2 = 0.25f;
  std::vector<float> o(16);
  dequant_row(n, 0, o.data());
  const float mag[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (int c = 0; c < 16; ++c) EXPECT_EQ(o[size_t(c)], (c & 8 ? -1.f : 1.f) * mag[c & 7] * 0.25f);
}

}  // namespace
}  // namespace inkling
