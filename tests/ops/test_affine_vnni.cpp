// The AVX512-VNNI affine kernel (ops/quant_affine_vnni.h): the int8 split of x (ranges and its
// error bound), the kernel against its scalar twin bitwise (4 and 8 bits, groups 32/64/128, odd
// row counts, row ranges, 1..16 tokens, outliers, zeros and denormals, non-finite x), and the
// twin against the exact double product within the split's error bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ops/formats.h"
#include "ops/quant.h"
#include "ops/quant_affine_vnni.h"
#include "quant_test_util.h"

namespace inkling {
namespace {

using testing::QMat;

enum class XKind { kNormal, kOutlier, kZerosDenormals, kTiny, kHuge, kInf };

std::vector<float> make_x(int64_t n, XKind kind, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = nd(rng);
  switch (kind) {
    case XKind::kNormal:
      break;
    case XKind::kOutlier:  // one element per 97 is 1e4 times the others
      for (int64_t i = 5; i < n; i += 97) x[size_t(i)] *= 1e4f;
      break;
    case XKind::kZerosDenormals:
      for (int64_t i = 0; i < n; ++i) {
        if (i % 3 == 0) x[size_t(i)] = 0.f;
        if (i % 3 == 1) x[size_t(i)] *= 1e-41f;  // subnormal
        if (i % 64 < 16) x[size_t(i)] = i % 2 ? -0.f : std::numeric_limits<float>::denorm_min();
      }
      break;
    case XKind::kTiny:
      for (auto& v : x) v *= 1e-30f;
      break;
    case XKind::kHuge:
      for (auto& v : x) v *= 1e30f;
      break;
    case XKind::kInf:  // the products of its lane set become NaN, as in both kernels
      x[size_t(n / 3)] = -std::numeric_limits<float>::infinity();
      break;
  }
  return x;
}

const char* kind_name(XKind k) {
  switch (k) {
    case XKind::kNormal:
      return "normal";
    case XKind::kOutlier:
      return "outliers";
    case XKind::kZerosDenormals:
      return "zeros/denormals";
    case XKind::kTiny:
      return "tiny";
    case XKind::kHuge:
      return "huge";
    case XKind::kInf:
      return "inf";
  }
  return "";
}

TEST(AffineVnni, SplitPartsAndErrorBound) {
  std::mt19937 rng(3);
  for (int bits : {1, 2, 3, 4, 5, 6, 8})
    for (int group : {32, 64, 128})
      for (XKind kind :
           {XKind::kNormal, XKind::kOutlier, XKind::kZerosDenormals, XKind::kTiny, XKind::kHuge})
        for (int parts : {2, 3}) {
          const int64_t cols = 3 * group;  // a partial last span for groups below the chunk
          const auto x = make_x(cols, kind, rng);
          const int64_t span = affine_vnni_span(bits, group), spans = (cols + span - 1) / span;
          std::vector<int8_t> a(static_cast<size_t>(cols)), c(a), d(a);
          std::vector<float> fac(static_cast<size_t>(spans * 16));
          affine_vnni_split(x.data(), cols, bits, group, parts, a.data(), c.data(), d.data(),
                            fac.data());
          const std::string what = "q" + std::to_string(bits) + " g" + std::to_string(group) + " " +
                                   kind_name(kind) + " parts " + std::to_string(parts);
          for (int64_t sp = 0; sp < spans; ++sp)
            for (int k = 0; k < 16; ++k) {
              const double f = fac[size_t(sp * 16 + k)];  // 2^(E-8)
              ASSERT_TRUE(std::isfinite(f) && f > 0) << what;
              double m = 0;
              for (int64_t j = 0; j < span / 16; ++j) {
                const int64_t col = sp * span + affine_vnni_lane_col(bits, span, k, int(j));
                if (col >= cols) continue;
                ASSERT_EQ(affine_vnni_lane_col(bits, span, k, 0) / group,
                          affine_vnni_lane_col(bits, span, k, int(j)) / group)
                    << what << ": a lane set spans two groups";
                m = std::max(m, std::fabs(double(x[size_t(col)])));
              }
              for (int64_t j = 0; j < span / 16; ++j) {
                const int64_t col = sp * span + affine_vnni_lane_col(bits, span, k, int(j));
                if (col >= cols) continue;
                const double v = double(x[size_t(col)]);
                double got = (256.0 * a[size_t(col)] + c[size_t(col)]) * f;
                if (parts == 3) got += d[size_t(col)] * f / 256.0;
                ASSERT_GE(a[size_t(col)], -127) << what;
                // 2 parts: within 2^(E-9) = f / 2; 3 parts: within 2^(E-16) = 2 f / 256 (d may
                // clamp); E is at most 1 + log2(M / 64), and at least -140.
                const double bound = parts == 2 ? f / 2 : f / 128;
                ASSERT_LE(std::fabs(got - v), bound) << what << " col " << col;
                ASSERT_LE(f, std::max(m / 64.0 / 128.0, std::ldexp(1.0, -148))) << what;
              }
            }
        }
}

TEST(AffineVnni, SplitNonFiniteGivesNan) {
  std::vector<float> x(128, 1.f);
  x[9] = std::numeric_limits<float>::infinity();
  std::vector<int8_t> a(128), c(128), d(128);
  std::vector<float> fac(32);  // 2 spans of 64 columns
  affine_vnni_split(x.data(), 128, 8, 64, 2, a.data(), c.data(), d.data(), fac.data());
  EXPECT_TRUE(std::isnan(fac[2]));  // column 9 is in lane 2
  EXPECT_FALSE(std::isnan(fac[3]));
}

// Kernel vs twin, bitwise, for tokens of every kind at once (1..16 tokens).
void expect_twin(const MatView& w, int64_t n_tok, int64_t r0, int64_t r1, std::mt19937& rng,
                 const std::string& what, int parts = kVnniParts) {
  const int64_t ldx = w.cols + 7, ldy = w.rows + 2;
  std::vector<float> x(size_t(n_tok * ldx), 0.f);
  for (int64_t t = 0; t < n_tok; ++t) {
    const auto xt = make_x(w.cols, XKind(t % 6), rng);
    std::memcpy(x.data() + t * ldx, xt.data(), xt.size() * 4);
  }
  std::vector<float> got(size_t(n_tok * ldy), -7.f), want(got);
  if (parts == 1)
    affine_vnni_fast_rows(x.data(), n_tok, ldx, w, r0, r1, got.data(), ldy);
  else if (parts == 2)
    affine_vnni_fine_rows(x.data(), n_tok, ldx, w, r0, r1, got.data(), ldy);
  else
    affine_vnni_rows(x.data(), n_tok, ldx, w, r0, r1, got.data(), ldy);
  affine_vnni_rows_ref(x.data(), n_tok, ldx, w, r0, r1, want.data(), ldy, parts);
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t r = 0; r < w.rows + 2; ++r) {
      const size_t i = size_t(t * ldy + r);
      ASSERT_EQ(std::memcmp(&got[i], &want[i], 4), 0)
          << what << " tok " << t << " (" << kind_name(XKind(t % 6)) << ") row " << r << ": "
          << got[i] << " vs " << want[i];
    }
}

TEST(AffineVnni, KernelEqualsScalarTwinBitwise) {
  if (!affine_vnni_available()) GTEST_SKIP() << "CPU without AVX512-VNNI";
  std::mt19937 rng(11);
  for (int bits : {1, 2, 3, 4, 5, 6, 8})
    for (int group : {32, 64, 128})
      for (int64_t cols : {int64_t(group), int64_t(384), int64_t(1024 + 3 * group)}) {
        if (cols % group) continue;
        QMat q = testing::make_affine(13, cols, bits, group, DType::BF16, 2, rng);
        const std::string what = "q" + std::to_string(bits) + " g" + std::to_string(group) +
                                 " cols " + std::to_string(cols);
        ASSERT_TRUE(affine_vnni_handles(q.view, 16)) << what;
        for (int64_t n_tok : {1, 2, 3, 6, 16}) expect_twin(q.view, n_tok, 0, 13, rng, what);
        expect_twin(q.view, 5, 3, 10, rng, what + " rows 3..10");
      }
  // Every token count, f32 and f16 scales, a column slice.
  QMat q = testing::make_affine(7, 512, 8, 64, DType::F32, 1, rng);
  for (int64_t n_tok = 1; n_tok <= kFewMaxTokens; ++n_tok)
    expect_twin(q.view, n_tok, 0, 7, rng, "f32 scales");
  QMat h = testing::make_affine(9, 256, 4, 32, DType::F16, 1, rng);
  expect_twin(h.view, 4, 0, 9, rng, "f16 scales");
  QMat s = testing::make_affine(5, 512, 4, 64, DType::BF16, 1, rng);
  expect_twin(slice_cols(s.view, 128, 256), 3, 0, 5, rng, "column slice");
  EXPECT_FALSE(affine_vnni_handles(q.view, 17));
}

// The fast-numerics kernels (one int8 part, scale M / 127 per lane set; two parts, the fine grade)
// against their twin, bitwise.
TEST(AffineVnni, FastKernelEqualsScalarTwinBitwise) {
  if (!affine_vnni_available()) GTEST_SKIP() << "CPU without AVX512-VNNI";
  std::mt19937 rng(21);
  for (int bits : {1, 2, 3, 4, 5, 6, 8})
    for (int group : {32, 64, 128})
      for (int64_t cols : {int64_t(group), int64_t(384), int64_t(1024 + 3 * group)}) {
        if (cols % group) continue;
        QMat q = testing::make_affine(13, cols, bits, group, DType::BF16, 2, rng);
        const std::string what = "fast q" + std::to_string(bits) + " g" + std::to_string(group) +
                                 " cols " + std::to_string(cols);
        for (int parts : {1, 2}) {
          for (int64_t n_tok : {1, 2, 3, 6, 16})
            expect_twin(q.view, n_tok, 0, 13, rng, what + " parts " + std::to_string(parts), parts);
          expect_twin(q.view, 5, 3, 10, rng, what + " rows 3..10", parts);
        }
      }
  QMat q = testing::make_affine(7, 512, 8, 64, DType::F32, 1, rng);
  for (int64_t n_tok = 1; n_tok <= kFewMaxTokens; ++n_tok)
    expect_twin(q.view, n_tok, 0, 7, rng, "fast f32 scales", 1);
  QMat s = testing::make_affine(5, 512, 4, 64, DType::BF16, 1, rng);
  expect_twin(slice_cols(s.view, 128, 256), 3, 0, 5, rng, "fast column slice", 1);
}

// The one-part split: each element within M / 254 of x (M: max |x| of its lane set), zero for a
// lane set below kVnniTiny.
TEST(AffineVnni, FastSplitWithinHalfStep) {
  std::mt19937 rng(22);
  for (int bits : {4, 8})
    for (int group : {32, 128})
      for (XKind kind : {XKind::kNormal, XKind::kOutlier, XKind::kZerosDenormals, XKind::kHuge}) {
        const int64_t cols = 512;
        const auto x = make_x(cols, kind, rng);
        std::vector<int8_t> a(static_cast<size_t>(cols)), c(a), d(a);
        const int64_t span = affine_vnni_span(bits, group), per = span / 16;
        std::vector<float> fac(size_t(cols / span * 16));
        affine_vnni_split(x.data(), cols, bits, group, 1, a.data(), c.data(), d.data(), fac.data());
        for (int64_t sp = 0; sp < cols / span; ++sp)
          for (int k = 0; k < 16; ++k) {
            double m = 0;
            for (int64_t j = 0; j < per; ++j)
              m = std::max(
                  m, std::fabs(double(
                         x[size_t(sp * span + affine_vnni_lane_col(bits, span, k, int(j)))])));
            const float f = fac[size_t(sp * 16 + k)];
            for (int64_t j = 0; j < per; ++j) {
              const int64_t col = sp * span + affine_vnni_lane_col(bits, span, k, int(j));
              EXPECT_LE(std::abs(int(a[size_t(col)])), 127);
              const double err = std::fabs(double(a[size_t(col)]) * f - double(x[size_t(col)]));
              if (m < kVnniTiny) {
                EXPECT_EQ(a[size_t(col)], 0);
                continue;
              }
              EXPECT_LE(err, m / 254.0 * (1 + 1e-5)) << kind_name(kind) << " col " << col;
            }
          }
      }
}

// The twin (so the kernel) against the exact double product: the split's error bound.
TEST(AffineVnni, TwinWithinSplitErrorOfExact) {
  std::mt19937 rng(12);
  for (int bits : {3, 4, 8})
    for (int group : {32, 128}) {
      QMat q = testing::make_affine(11, 512, bits, group, DType::BF16, 1, rng);
      const MatView& w = q.view;
      for (XKind kind : {XKind::kNormal, XKind::kOutlier, XKind::kZerosDenormals}) {
        const auto x = make_x(w.cols, kind, rng);
        std::vector<float> got(static_cast<size_t>(w.rows)), want(got),
            row(static_cast<size_t>(w.cols));
        affine_vnni_rows_ref(x.data(), 1, w.cols, w, 0, w.rows, got.data(), w.rows);
        quant_matmul_rows_ref(x.data(), 1, w.cols, w, 0, w.rows, want.data(), w.rows);
        for (int64_t r = 0; r < w.rows; ++r) {
          dequant_row(w, r, row.data());
          // Per element |x - split| <= max|x| of its lane set / 2^14 (2 parts), / 2^20 (3
          // parts); f32 sums on top.
          double bound = 0;
          for (int64_t c = 0; c < w.cols; ++c) {
            double m = 0;
            const int64_t c0 = c / 8 * 8;  // lane sets are within aligned 8-column runs here
            for (int64_t j = c0 - 64; j < c0 + 72; ++j)
              if (j >= 0 && j < w.cols) m = std::max(m, std::fabs(double(x[size_t(j)])));
            const double b =
                load_as_f32(w.scale_dtype, w.biases, size_t(r * w.scale_stride + c / group));
            const double qv = row[size_t(c)] - b;  // s q
            bound += std::fabs(qv) * m / (kVnniParts == 2 ? 16384.0 : 1048576.0) +
                     1e-6 * (std::fabs(qv) + std::fabs(b)) * std::fabs(x[size_t(c)]);
          }
          EXPECT_NEAR(got[size_t(r)], want[size_t(r)], bound + 1e-37)
              << "q" << bits << " g" << group << " " << kind_name(kind) << " row " << r;
        }
      }
    }
}

// The lane sums at their largest: every code at its maximum, every x at the top of its split's
// range (a = 126 or a carried 127, c and d near 128), both signs. Where a lane's three parts share
// one int32 (affine_vnni_fused: up to 8 columns x 31, 4 x 63) they come close to 2^31; an
// overflow would be far off the exact product.
TEST(AffineVnni, LargestLaneSumsStayExact) {
  std::mt19937 rng(13);
  for (int bits : {1, 2, 3, 4, 5, 6, 8})
    for (int group : {32, 64, 128}) {
      QMat q = testing::make_affine(6, 512, bits, group, DType::BF16, 1, rng);
      std::fill(q.codes.begin(), q.codes.end(), uint8_t(0xff));  // every code 2^bits - 1
      const MatView& w = q.view;
      const std::string what = "q" + std::to_string(bits) + " g" + std::to_string(group);
      for (float top : {126.49f, 126.4999f}) {  // c = 125; c = 128, carried into a = 127
        std::vector<float> x(size_t(2 * w.cols));
        for (int64_t c = 0; c < w.cols; ++c) {
          x[size_t(c)] = std::ldexp(top, -3);
          x[size_t(w.cols + c)] = -std::ldexp(top, 5);
        }
        std::vector<float> got(size_t(2 * w.rows)), want(got), exact(got);
        affine_vnni_rows_ref(x.data(), 2, w.cols, w, 0, w.rows, want.data(), w.rows);
        quant_matmul_rows_ref(x.data(), 2, w.cols, w, 0, w.rows, exact.data(), w.rows);
        if (affine_vnni_available()) {
          affine_vnni_rows(x.data(), 2, w.cols, w, 0, w.rows, got.data(), w.rows);
          for (size_t i = 0; i < got.size(); ++i)
            ASSERT_EQ(std::memcmp(&got[i], &want[i], 4), 0) << what << " " << i;
        }
        for (size_t i = 0; i < want.size(); ++i)
          EXPECT_NEAR(want[i], exact[i], 1e-5 * std::fabs(exact[i]) + 1e-3) << what << " " << i;
      }
    }
}

TEST(AffineVnni, RegistryBindsItWhereEnabled) {
  std::mt19937 rng(13);
  QMat q8 = testing::make_affine(4, 256, 8, 64, DType::BF16, 1, rng);
  QMat q4 = testing::make_affine(4, 256, 4, 128, DType::BF16, 1, rng);
  const bool on = affine_vnni_enabled();
  for (int64_t n : {1, 2, 16}) {
    EXPECT_STREQ(kernels_of(q8.view).for_tokens(n).name,
                 on ? "avx512-vnni q8" : "hwy affine bytes");
    if (on) {
      EXPECT_STREQ(kernels_of(q4.view).for_tokens(n).name, "avx512-vnni q4");
    }
  }
  {
    testing::NoVnniKernel off;
    EXPECT_STREQ(kernels_of(q8.view).for_tokens(1).name, "hwy affine bytes");
    EXPECT_STRNE(kernels_of(q4.view).for_tokens(1).name, "avx512-vnni q4");
  }
}

}  // namespace
}  // namespace inkling
