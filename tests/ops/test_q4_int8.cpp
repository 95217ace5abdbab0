// The AVX2 int8 4-bit kernel (ops/quant_q4_int8.h): its split, the kernel against its scalar twin
// bitwise (affine 4-bit groups 32/64/128 with bf16/f16/f32 scales, NVFP4, 1 and 2 parts, 1..16
// tokens, row ranges, zeros, outliers, non-finite x), and the twin against the f32 product of the
// dequantized weights within the split's error bound. Also every fast-numerics kernel the registry
// binds, on the short rows of small models (32-160 columns), against that product.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ops/formats.h"
#include "ops/matmul.h"
#include "ops/quant.h"
#include "ops/quant_q4_int8.h"
#include "ops/quant_q4_int8_prepared.h"
#include "ops/tuning.h"
#include "quant_test_util.h"

namespace inkling {
namespace {

using testing::QMat;

std::vector<float> i8_randn(size_t n, std::mt19937& rng, float sd = 1.f) {
  std::normal_distribution<float> nd(0.f, sd);
  std::vector<float> v(n);
  for (auto& e : v) e = nd(rng);
  return v;
}

// y = x W^T in double on the dequantized rows, and sum |x| |W| per (token, row) for the bound.
void i8_reference(const std::vector<float>& x, int64_t n_tok, int64_t ldx, const MatView& w,
                  std::vector<double>& y, std::vector<double>& mag) {
  std::vector<float> row(size_t(w.cols));
  y.assign(size_t(n_tok * w.rows), 0.0);
  mag.assign(y.size(), 0.0);
  for (int64_t r = 0; r < w.rows; ++r) {
    dequant_row(w, r, row.data());
    for (int64_t t = 0; t < n_tok; ++t)
      for (int64_t c = 0; c < w.cols; ++c) {
        const double xv = x[size_t(t * ldx + c)];
        y[size_t(t * w.rows + r)] += xv * row[size_t(c)];
        mag[size_t(t * w.rows + r)] += std::fabs(xv) * std::fabs(row[size_t(c)]);
      }
  }
}

TEST(Q4Int8, SplitBoundsAndOrder) {
  std::mt19937 rng(1);
  for (int parts : {1, 2}) {
    auto x = i8_randn(256, rng);
    x[37] = 40.f;  // an outlier in block 1
    std::vector<int8_t> a(256), c(256);
    std::vector<float> d(8), gs(4);
    q4_int8_split(x.data(), 256, parts, 64, a.data(), c.data(), d.data(), gs.data());
    std::vector<int> seen(256, 0);
    for (int i = 0; i < 256; ++i) {
      const int col = (i / 64) * 64 + q4_int8_col(i % 64), b = col / 32;
      ++seen[size_t(col)];
      const double approx = parts == 2
                                ? double(d[size_t(b)]) * (256.0 * a[size_t(i)] + c[size_t(i)])
                                : double(d[size_t(b)]) * a[size_t(i)];
      const double unit = parts == 2 ? double(d[size_t(b)]) * 256.0 : double(d[size_t(b)]);
      // One part: within half a step; two: within 1/256 of a step (c clamped to +-127).
      const double bound = parts == 2 ? unit * (1.0 / 256 + 1.0 / 65536) : unit * 0.5;
      ASSERT_LE(std::fabs(approx - x[size_t(col)]), bound * 1.0001)
          << "parts " << parts << " block " << b << " pos " << i;
      ASSERT_GE(a[size_t(i)], -127);
      if (parts == 2) {
        ASSERT_GE(c[size_t(i)], -127);
      }
    }
    for (int col = 0; col < 256; ++col) ASSERT_EQ(seen[size_t(col)], 1) << "column " << col;
    for (int g = 0; g < 4; ++g) {  // 8 lanes of columns i % 8, in order, then sum8
      float lanes[8] = {};
      for (int i = 0; i < 64; ++i) lanes[i % 8] += x[size_t(g * 64 + i)];
      EXPECT_EQ(f32_to_bits(q4_int8_sum8(lanes)), f32_to_bits(gs[size_t(g)]));
    }
  }
  // Zero blocks give zero parts and factor; a non-finite element a NaN factor.
  std::vector<float> x(64, 0.f);
  x[40] = std::numeric_limits<float>::infinity();
  std::vector<int8_t> a(64, 1), c(64, 1);
  std::vector<float> d(2);
  q4_int8_split(x.data(), 64, 2, 0, a.data(), c.data(), d.data(), nullptr);
  EXPECT_EQ(d[0], 0.f);
  EXPECT_TRUE(std::isnan(d[1]));
  for (int i = 0; i < 64; ++i) EXPECT_EQ(a[size_t(i)], 0);
}

void i8_expect_twin(const MatView& w, int64_t n_tok, int64_t r0, int64_t r1, int parts,
                    const std::vector<float>& x, int64_t ldx, const std::string& what) {
  const int64_t ldy = w.rows + 3;
  std::vector<float> got(size_t(n_tok * ldy), -7.f), want(got);
  q4_int8_parts_rows(x.data(), n_tok, ldx, w, r0, r1, got.data(), ldy, parts);
  q4_int8_rows_ref(x.data(), n_tok, ldx, w, r0, r1, want.data(), ldy, parts);
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(f32_to_bits(got[i]), f32_to_bits(want[i])) << what << " at " << i;
}

TEST(Q4Int8, KernelIsBitwiseItsTwin) {
  if (!q4_int8_available()) GTEST_SKIP() << "no AVX2 + FMA";
  std::mt19937 rng(2);
  for (int parts : {1, 2}) {
    for (int group : {32, 64, 128})
      for (DType sdt : {DType::BF16, DType::F16, DType::F32}) {
        QMat q = testing::make_affine(13, 384, 4, group, sdt, 2, rng);
        for (int64_t n_tok : {1, 2, 3, 4, 5, 9, 16}) {
          const int64_t ldx = 384 + 7;
          auto x = i8_randn(size_t(n_tok * ldx), rng);
          x[5] = 300.f;                                          // an outlier
          for (int64_t i = 64; i < 96; ++i) x[size_t(i)] = 0.f;  // a zero block
          i8_expect_twin(q.view, n_tok, 0, 13, parts, x, ldx,
                         "affine g" + std::to_string(group) + " " + dtype_name(sdt) + " parts " +
                             std::to_string(parts) + " tokens " + std::to_string(n_tok));
          i8_expect_twin(q.view, n_tok, 3, 11, parts, x, ldx, "affine row range");
        }
      }
    QMat nv = testing::make_nvfp4(21, 512, 1, rng);
    for (int64_t n_tok : {1, 2, 4, 7, 16}) {
      auto x = i8_randn(size_t(n_tok * 512), rng);
      x[100] = -250.f;
      i8_expect_twin(nv.view, n_tok, 0, 21, parts, x, 512, "nvfp4 tokens " + std::to_string(n_tok));
      i8_expect_twin(nv.view, n_tok, 5, 6, parts, x, 512, "nvfp4 one row");
    }
    // Non-finite x: the same NaN rows in both.
    auto x = i8_randn(512, rng);
    x[77] = std::numeric_limits<float>::infinity();
    i8_expect_twin(nv.view, 1, 0, 21, parts, x, 512, "nvfp4 inf");
    QMat q = testing::make_affine(5, 512, 4, 64, DType::BF16, 1, rng);
    i8_expect_twin(q.view, 1, 0, 5, parts, x, 512, "affine inf");
  }
}

// The 512-bit form (AVX512-VNNI) against the AVX2 form and the twin, bitwise: odd and even span
// counts (its odd last span runs in 256 bits), every group and NVFP4, 1 and 2 parts, 1..16 tokens
// (token passes of 4 and their remainders), row ranges, outliers, zero and non-finite blocks.
TEST(Q4Int8, WideFormIsBitwiseTheAvx2Form) {
  if (!q4_int8_available()) GTEST_SKIP() << "no AVX2 + FMA";
  set_q4_int8_wide_enabled(true);
  if (!q4_int8_wide_enabled()) GTEST_SKIP() << "no AVX512-VNNI (the 512-bit form)";
  std::mt19937 rng(12);
  auto run = [&](const MatView& w, int64_t n_tok, int64_t r0, int64_t r1, int parts,
                 const std::vector<float>& x, int64_t ldx, const std::string& what) {
    const int64_t ldy = w.rows + 1;
    std::vector<float> wide(size_t(n_tok * ldy), -7.f), narrow(wide), twin(wide);
    q4_int8_parts_rows(x.data(), n_tok, ldx, w, r0, r1, wide.data(), ldy, parts);
    set_q4_int8_wide_enabled(false);
    q4_int8_parts_rows(x.data(), n_tok, ldx, w, r0, r1, narrow.data(), ldy, parts);
    set_q4_int8_wide_enabled(true);
    q4_int8_rows_ref(x.data(), n_tok, ldx, w, r0, r1, twin.data(), ldy, parts);
    for (size_t i = 0; i < wide.size(); ++i) {
      ASSERT_EQ(f32_to_bits(wide[i]), f32_to_bits(narrow[i])) << what << " at " << i;
      ASSERT_EQ(f32_to_bits(wide[i]), f32_to_bits(twin[i])) << what << " (twin) at " << i;
    }
  };
  for (int parts : {1, 2})
    for (int64_t cols : {64, 128, 192, 448, 1024}) {
      std::vector<QMat> mats;
      for (int group : {32, 64, 128})
        if (cols % group == 0)
          mats.push_back(testing::make_affine(11, cols, 4, group,
                                              group == 64 ? DType::BF16 : DType::F32, 2, rng));
      mats.push_back(testing::make_nvfp4(11, cols, 1, rng));
      for (const QMat& q : mats)
        for (int64_t n_tok : {1, 2, 3, 4, 5, 8, 13, 16}) {
          const int64_t ldx = cols + 5;
          auto x = i8_randn(size_t(n_tok * ldx), rng);
          x[3] = -400.f;                                                             // an outlier
          for (int64_t i = 32; i < 64; ++i) x[size_t(ldx * (n_tok - 1) + i)] = 0.f;  // a zero block
          const std::string what = format_label(q.view) + " cols " + std::to_string(cols) +
                                   " parts " + std::to_string(parts) + " tokens " +
                                   std::to_string(n_tok);
          run(q.view, n_tok, 0, 11, parts, x, ldx, what);
          run(q.view, n_tok, 4, 9, parts, x, ldx, what + " rows 4-9");
        }
    }
  // Non-finite x: NaN rows in both forms.
  auto x = i8_randn(448, rng);
  x[300] = -std::numeric_limits<float>::infinity();
  QMat nv = testing::make_nvfp4(6, 448, 1, rng);
  QMat af = testing::make_affine(6, 448, 4, 64, DType::BF16, 1, rng);
  run(nv.view, 1, 0, 6, 2, x, 448, "nvfp4 inf");
  run(af.view, 1, 0, 6, 2, x, 448, "affine inf");
}

// NVFP4 row factors come from E4M3 bytes widened through f16 (no table): every byte value,
// subnormals, -0 and both NaN codes, gives (e4m3_to_f32(b) * scale2) / 2 bit for bit.
TEST(Q4Int8, Nvfp4FactorsOfEveryE4m3Byte) {
  if (!q4_int8_available()) GTEST_SKIP() << "no AVX2 + FMA + F16C";
  std::vector<uint8_t> codes(2 * 4096 / 2, 0x21), scales(2 * 256 + 3);
  for (size_t k = 0; k < scales.size(); ++k) scales[k] = uint8_t(k);
  for (float scale2 : {1.f, 0.0123f, 3e-38f}) {
    MatView w;
    w.format = WeightFormat::kNvfp4, w.dtype = DType::U8, w.rows = 2, w.cols = 4096;
    w.data = codes.data(), w.row_stride = 4096 / 2;
    w.scales = scales.data() + 3, w.scale_dtype = DType::F8_E4M3, w.scale_stride = 256;
    w.bits = 4, w.group = 16, w.scale2 = scale2;
    Q4Int8Prepared p;
    p.rs.resize(256);
    for (int64_t r = 0; r < 2; ++r)
      for (bool wide : {false, true}) {  // the AVX2 form's factors and the 512-bit form's
        if (wide && !q4_int8_wide_cpu()) continue;
        std::fill(p.rs.begin(), p.rs.end(), -1.f);
        (wide ? q4_int8_wide_nvfp4_factors : q4_int8_row_factors)(w, r, p);
        for (size_t k = 0; k < 256; ++k) {
          const uint8_t b = scales[3 + size_t(r) * 256 + k];
          ASSERT_EQ(f32_to_bits(p.rs[k]), f32_to_bits((e4m3_to_f32(b) * scale2) * 0.5f))
              << "byte " << int(b) << " scale2 " << scale2 << " wide " << wide;
        }
      }
  }
}

// Software prefetch (TuneParam::kQ4Prefetch, decode tuning) changes no bit, in either form: off,
// the default, and distances past the end of the call's rows.
TEST(Q4Int8, PrefetchDistanceChangesNoBit) {
  if (!q4_int8_available()) GTEST_SKIP() << "no AVX2 + FMA";
  std::mt19937 rng(13);
  const DecodeTuning saved = DecodeTuning::current();
  QMat nv = testing::make_nvfp4(37, 448, 1, rng);
  QMat af = testing::make_affine(37, 448, 4, 64, DType::BF16, 1, rng);
  for (const QMat* q : {&nv, &af})
    for (int64_t n_tok : {1, 3, 6}) {
      auto x = i8_randn(size_t(n_tok * 448), rng);
      std::vector<float> want(size_t(n_tok * 37));
      q4_int8_rows_ref(x.data(), n_tok, 448, q->view, 0, 37, want.data(), 37, 2);
      for (bool wide : {false, true})
        for (int pf : {0, 1, 3, 8}) {
          set_q4_int8_wide_enabled(wide);
          DecodeTuning t = saved;
          t[TuneParam::kQ4Prefetch] = pf;
          set_decode_tuning(t, "test");
          std::vector<float> got(want.size(), -1.f);
          q4_int8_parts_rows(x.data(), n_tok, 448, q->view, 0, 37, got.data(), 37, 2);
          for (size_t i = 0; i < got.size(); ++i)
            ASSERT_EQ(f32_to_bits(got[i]), f32_to_bits(want[i]))
                << format_label(q->view) << " wide " << wide << " pf " << pf << " at " << i;
        }
    }
  set_decode_tuning(saved, "test");
  set_q4_int8_wide_enabled(true);
}

TEST(Q4Int8, TwinIsWithinTheSplitBound) {
  std::mt19937 rng(3);
  for (int parts : {1, 2}) {
    QMat aff = testing::make_affine(9, 256, 4, 64, DType::BF16, 1, rng);
    QMat nv = testing::make_nvfp4(9, 256, 1, rng);
    for (const MatView* w : {&aff.view, &nv.view}) {
      const int64_t n_tok = 3;
      auto x = i8_randn(size_t(n_tok * 256), rng);
      std::vector<float> y(size_t(n_tok * w->rows));
      q4_int8_rows_ref(x.data(), n_tok, 256, *w, 0, w->rows, y.data(), w->rows, parts);
      std::vector<double> ref, mag;
      i8_reference(x, n_tok, 256, *w, ref, mag);
      // Each x moves by at most M / 254 (one part) or M / 2^16 (two): M <= 4 here, |W| summed.
      std::vector<float> row(size_t(w->cols));
      for (int64_t t = 0; t < n_tok; ++t)
        for (int64_t r = 0; r < w->rows; ++r) {
          dequant_row(*w, r, row.data());
          double wsum = 0;
          for (float v : row) wsum += std::fabs(v);
          double m = 0;
          for (int64_t c = 0; c < 256; ++c)
            m = std::max(m, double(std::fabs(x[size_t(t * 256 + c)])));
          const double bound = wsum * m * (parts == 2 ? 1.0 / 65536 : 1.0 / 254) +
                               4e-6 * mag[size_t(t * w->rows + r)];
          EXPECT_LE(std::fabs(y[size_t(t * w->rows + r)] - ref[size_t(t * w->rows + r)]), bound)
              << "parts " << parts << " token " << t << " row " << r;
        }
    }
  }
}

// Every kernel the registry binds in fast numerics, on rows as short as a small model's (an
// expert's down projection of 32 columns), against the exact product. Each element of x may move
// by M / 254 (one int8 part per block of 32 or finer, M = max |x| of the 32) or M / 512 (bf16, or
// two int8 parts): the error is within sum |W| of that, plus f32 accumulation.
void every_fast_kernel_on_short_rows(std::mt19937& rng) {
  for (KernelMode mode : {KernelMode::kFast, KernelMode::kFastFine})
    for (int64_t cols : {32, 64, 96, 160, 512}) {
      std::vector<QMat> mats;
      for (int group : {32, 64, 128})
        if (cols % group == 0)
          mats.push_back(testing::make_affine(11, cols, 4, group, DType::BF16, 1, rng));
      for (int bits : {2, 3, 8})
        if (cols % 64 == 0)
          mats.push_back(testing::make_affine(11, cols, bits, 64, DType::BF16, 1, rng));
      mats.push_back(testing::make_nvfp4(11, cols, 1, rng));
      const double step = mode == KernelMode::kFast ? 1.0 / 254 : 1.0 / 512;
      for (QMat& q : mats) {
        MatView w = q.view;
        ASSERT_TRUE(bind_kernels(w, mode));
        std::vector<float> row(static_cast<size_t>(cols));
        for (int64_t n_tok : {1, 2, 5, 16}) {
          auto x = i8_randn(size_t(n_tok * cols), rng);
          std::vector<float> y(size_t(n_tok * w.rows));
          matmul(x.data(), n_tok, cols, w, y.data(), w.rows, nullptr);
          std::vector<double> ref, mag;
          i8_reference(x, n_tok, cols, w, ref, mag);
          for (int64_t r = 0; r < w.rows; ++r) {
            dequant_row(w, r, row.data());
            for (int64_t t = 0; t < n_tok; ++t) {
              double bound = 1e-5 * mag[size_t(t * w.rows + r)] + 1e-30;
              for (int64_t b = 0; b < cols / 32; ++b) {
                double m = 0, ws = 0;
                for (int64_t c = b * 32; c < b * 32 + 32; ++c) {
                  m = std::max(m, double(std::fabs(x[size_t(t * cols + c)])));
                  ws += std::fabs(row[size_t(c)]);
                }
                bound += ws * m * step;
              }
              const size_t i = size_t(t * w.rows + r);
              ASSERT_LE(std::fabs(y[i] - ref[i]), bound)
                  << format_label(w) << " " << w.kernels->for_tokens(n_tok).name << " cols " << cols
                  << " tokens " << n_tok << " row " << r;
            }
          }
        }
      }
    }
}

TEST(Q4Int8, EveryFastKernelHoldsOnShortRows) {
  std::mt19937 rng(4);
  every_fast_kernel_on_short_rows(rng);  // this CPU's kernels
  testing::Avx2KernelsOnly avx2;         // and an AVX2 host's (the int8 kernel for 4 bits)
  every_fast_kernel_on_short_rows(rng);
}

// On an AVX2 host fast 4-bit views take the two-part int8 kernel in both grades, exact ones never.
TEST(Q4Int8, BoundInFastNumericsOnly) {
  if (!q4_int8_available()) GTEST_SKIP() << "no AVX2 + FMA";
  testing::Avx2KernelsOnly avx2;
  std::mt19937 rng(5);
  for (QMat q : {testing::make_affine(4, 256, 4, 64, DType::BF16, 1, rng),
                 testing::make_nvfp4(4, 256, 1, rng)}) {
    MatView w = q.view;
    for (KernelMode m : {KernelMode::kFast, KernelMode::kFastFine}) {
      ASSERT_TRUE(bind_kernels(w, m));
      EXPECT_EQ(w.kernels->for_tokens(1).rows, &q4_int8_fine_rows) << format_label(w);
      EXPECT_EQ(w.kernels->for_tokens(16).rows, &q4_int8_fine_rows) << format_label(w);
    }
    ASSERT_TRUE(bind_kernels(w, KernelMode::kExact));
    EXPECT_NE(w.kernels->for_tokens(1).rows, &q4_int8_fine_rows) << format_label(w);
  }
}

}  // namespace
}  // namespace inkling
