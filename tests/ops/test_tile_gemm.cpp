// The tile gemm (ops/tile_gemm-inl.h): the whole driver over emulated AMX tile operations against
// the scalar twin (bitwise: same steps in the same order) and against the f32 product, on every
// host; the emulated TDPBF16PS against hand-worked cases of Intel's pseudo-code (pair order, DAZ,
// FTZ); the real AMX kernel where the CPU has it (skipped, saying so, elsewhere); the AVX512-BF16
// variant where the CPU has that.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "../common/random.h"
#include "base/dtype.h"
#include "bf16_test_util.h"
#include "ops/amx_gemm.h"
#include "ops/bf16_tile_gemm.h"
#include "ops/formats.h"
#include "ops/reference/reference.h"
#include "ops/tile_emulated.h"

namespace inkling {
namespace {

using testing::randn;
using tile_gemm::PairOrder;

struct Bf16Weight {
  std::vector<uint16_t> bits;
  MatView view;
};

Bf16Weight make_weight(int64_t rows, int64_t cols, int64_t stride, uint32_t seed) {
  Bf16Weight w;
  const auto f = randn(size_t(rows * stride), seed);
  w.bits.resize(f.size());
  for (size_t i = 0; i < f.size(); ++i) w.bits[i] = f32_to_bf16(f[i]);
  w.view = testing::bf16_view(w.bits, rows, cols, stride);
  return w;
}

// x over several binades (so that the mid and lo parts matter).
std::vector<float> make_x(int64_t n_tok, int64_t ldx, uint32_t seed) {
  auto x = randn(size_t(n_tok * ldx), seed);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::ldexp(x[i], int(i % 9) - 4);
  return x;
}

using RowsFn = void (*)(const float*, int64_t, int64_t, const MatView&, int64_t, int64_t, float*,
                        int64_t);

struct TileShape {
  int64_t n_tok, rows, cols, stride, r0, r1;
};
// Tokens, rows and columns off the 32-multiples, several column blocks (256) and row blocks (32),
// row bands, strided rows.
const TileShape kShapes[] = {{17, 16, 32, 32, 0, 16},   {33, 45, 300, 307, 0, 45},
                             {40, 70, 600, 600, 5, 61}, {64, 32, 64, 70, 0, 32},
                             {19, 3, 31, 31, 1, 3},     {50, 33, 513, 520, 0, 33}};

// Runs fn and the twin on each shape; bitwise or within `tol` of sum |x w|. Rows outside the
// band stay untouched. Also checks the twin against the plain f32 product.
void check(RowsFn fn, int parts, PairOrder order, bool bitwise, const char* what) {
  uint32_t seed = 1;
  for (const TileShape& s : kShapes) {
    const std::string at = std::string(what) + " T=" + std::to_string(s.n_tok) +
                           " R=" + std::to_string(s.rows) + " K=" + std::to_string(s.cols);
    const Bf16Weight w = make_weight(s.rows, s.cols, s.stride, seed++);
    const int64_t ldx = s.cols + 3, ldy = s.rows + 2;
    const auto x = make_x(s.n_tok, ldx, seed++);
    std::vector<float> got(size_t(s.n_tok * ldy), -7.f), twin(got), f32(got);
    fn(x.data(), s.n_tok, ldx, w.view, s.r0, s.r1, got.data(), ldy);
    tile_gemm::tile_gemm_ref(x.data(), s.n_tok, ldx, w.view, s.r0, s.r1, twin.data(), ldy, parts,
                             order);
    ref::matmul(x.data(), s.n_tok, ldx, w.view, f32.data(), ldy);
    for (int64_t t = 0; t < s.n_tok; ++t)
      for (int64_t r = 0; r < ldy; ++r) {
        const size_t i = size_t(t * ldy + r);
        if (r < s.r0 || r >= s.r1) {
          ASSERT_EQ(got[i], -7.f) << at << " wrote outside its rows at " << t << "," << r;
          continue;
        }
        double mag = 0;
        for (int64_t c = 0; c < s.cols; ++c)
          mag += std::fabs(double(x[size_t(t * ldx + c)]) *
                           bf16_to_f32(w.bits[size_t(r * s.stride + c)]));
        if (bitwise)
          ASSERT_EQ(f32_to_bits(got[i]), f32_to_bits(twin[i]))
              << at << " token " << t << " row " << r << ": " << got[i] << " vs " << twin[i];
        else
          ASSERT_LE(std::fabs(double(got[i]) - twin[i]), 1e-5 * mag)
              << at << " token " << t << " row " << r;
        // 3 parts: exact products, f32 sums; 2 parts: plus 2^-17 relative per element.
        ASSERT_LE(std::fabs(double(twin[i]) - f32[i]), (parts == 3   ? 1e-5
                                                        : parts == 2 ? 3e-5
                                                                     : 4e-3) *
                                                           mag)
            << at << " twin vs f32 product, token " << t << " row " << r;
      }
  }
}

TEST(TileGemm, EmulatedAmxDriverMatchesScalarTwin) {
  check(tile_gemm::emulated_amx_gemm_rows, 3, PairOrder::kEvenFirst, true, "emulated AMX");
}

// Hand-worked TDPBF16PS steps: C = 1 plus the pair (1 * -1, 2^-15 * 2^-15) is 2^-30 when the even
// product comes first (1 - 1 = 0, then + 2^-30) and 0 the other way (1 + 2^-30 rounds to 1).
// Denormal inputs read as zero (DAZ); a denormal sum is flushed (FTZ).
TEST(TileGemm, EmulatedDpbf16psFollowsThePseudoCode) {
  tile_gemm::EmulatedTileOps ops;
  // ldtilecfg's operand: palette 1; tiles 0..2 one row of 4 bytes (C: 1 f32, A and B: 1 pair).
  uint8_t cfg[64] = {1};
  for (int t = 0; t < 3; ++t) {
    cfg[16 + 2 * t] = 4;
    cfg[48 + t] = 1;
  }
  ops.config(static_cast<const void*>(cfg));
  auto run = [&](float c, float a0, float a1, float b0, float b1) {
    const uint16_t a[2] = {f32_to_bf16(a0), f32_to_bf16(a1)};
    const uint16_t b[2] = {f32_to_bf16(b0), f32_to_bf16(b1)};
    ops.load<0>(&c, 4);
    ops.load<1>(a, 4);
    ops.load<2>(b, 4);
    ops.dp<0, 1, 2>();
    float out = -1.f;
    ops.store<0>(&out, 4);
    return out;
  };
  EXPECT_EQ(run(1.f, 1.f, std::ldexp(1.f, -15), -1.f, std::ldexp(1.f, -15)), std::ldexp(1.f, -30));
  const uint16_t a[2] = {0x3f80, 0x3800}, b[2] = {0xbf80, 0x3800};  // (1, 2^-15) . (-1, 2^-15)
  EXPECT_EQ(tile_gemm::dot_pair(1.f, a, b, PairOrder::kOddFirst), 0.f);
  EXPECT_EQ(tile_gemm::dot_pair(1.f, a, b, PairOrder::kEvenFirst), std::ldexp(1.f, -30));
  // 2^-64 * 2^-64 = 2^-128 is denormal: flushed; 2^-127 as an input is denormal: read as zero.
  EXPECT_EQ(run(0.f, std::ldexp(1.f, -64), 0.f, std::ldexp(1.f, -64), 0.f), 0.f);
  EXPECT_EQ(run(0.f, std::ldexp(1.f, -127), 0.f, std::ldexp(1.f, 100), 0.f), 0.f);
  EXPECT_EQ(run(2.f, 3.f, 5.f, 7.f, 11.f), 2.f + 21.f + 55.f);
  ops.release();
}

TEST(TileGemm, RealAmxMatchesScalarTwin) {
  if (!amx_gemm_available()) GTEST_SKIP() << "no AMX-BF16 here: " << amx_gemm_status();
  std::string why;
  EXPECT_TRUE(amx_gemm_self_check(&why)) << why;
  // Within f32 summation error: the hardware may order a pair's two additions otherwise than
  // the pseudo-code.
  check(amx_gemm_rows, 3, PairOrder::kEvenFirst, false, "AMX");
}

TEST(TileGemm, AmxChoiceIsReported) {
  const std::string status = amx_gemm_status();
  if (!amx_gemm_available()) {
    EXPECT_EQ(status.rfind("not available (", 0), 0u) << status;
    EXPECT_FALSE(amx_gemm_enabled());
    set_amx_gemm_enabled(true);
    EXPECT_FALSE(amx_gemm_enabled());
    return;
  }
  const bool was = amx_gemm_enabled();
  set_amx_gemm_enabled(false);
  EXPECT_FALSE(amx_gemm_enabled());
  EXPECT_EQ(amx_gemm_status(), "disabled by set_amx_gemm_enabled(false)");
  set_amx_gemm_enabled(true);
  EXPECT_TRUE(amx_gemm_enabled()) << amx_gemm_status();
  set_amx_gemm_enabled(was);
}

TEST(TileGemm, BoundForBf16GemmOnlyWhenEnabled) {
  const Bf16Weight w = make_weight(4, 64, 64, 3);
  MatView v = w.view;
  ASSERT_TRUE(bind_kernels(v));
  const std::string gemm = v.kernels->by_shape[int(ShapeClass::kGemm)].name;
  EXPECT_EQ(gemm, amx_gemm_enabled() ? "amx-bf16 gemm" : "hwy gemm");
  // The 1..16-token kernels are never the tile gemm (row-count invariance).
  EXPECT_STREQ(v.kernels->by_shape[int(ShapeClass::kOne)].name, "hwy matvec");
  EXPECT_STREQ(v.kernels->by_shape[int(ShapeClass::kFew)].name, "hwy matvec");
}

void bf16_tile_3(const float* x, int64_t n, int64_t ldx, const MatView& w, int64_t r0, int64_t r1,
                 float* y, int64_t ldy) {
  bf16_tile_gemm_rows(x, n, ldx, w, r0, r1, y, ldy, 3);
}
void bf16_tile_2(const float* x, int64_t n, int64_t ldx, const MatView& w, int64_t r0, int64_t r1,
                 float* y, int64_t ldy) {
  bf16_tile_gemm_rows(x, n, ldx, w, r0, r1, y, ldy, 2);
}

TEST(TileGemm, Avx512Bf16MatchesScalarTwin) {
  if (!bf16_tile_gemm_available()) GTEST_SKIP() << "CPU without AVX512-BF16";
  check(bf16_tile_gemm_fast_rows, 1, PairOrder::kOddFirst, true, "AVX512-BF16 1 part (fast)");
  check(bf16_tile_3, 3, PairOrder::kOddFirst, true, "AVX512-BF16 3 parts");
  check(bf16_tile_2, 2, PairOrder::kOddFirst, true, "AVX512-BF16 2 parts");
}

}  // namespace
}  // namespace inkling
