// Load-time tiles of affine 4-bit and NVFP4 weights (ops/quant_q4_int8_gemm.h q4_int8_pack_tiles,
// MatView::tiles): the layout byte by byte (any host), the kernel over tiles bitwise the scalar
// twin (and so the per-call gemm) for 1..30 tokens, row ranges that start and end inside tiles and
// the row slices that keep or drop tiles, a token's bits the same whatever the count of tokens
// beside it, view arithmetic (slices, joined halves, column slices), and the registry binding the
// tiled kernel for every token count in fast numerics only.
#include <gtest/gtest.h>

#include <cstring>
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

// The tiles of a view in 64-byte aligned storage, and the view pointing at them.
struct Tiled {
  std::vector<uint8_t> buf;
  MatView view;
};

Tiled tile(const MatView& w) {
  Tiled t;
  t.view = w;
  const int64_t n = q4_int8_tiles_bytes(w);
  EXPECT_GT(n, 0);
  t.buf.assign(size_t(n) + 64, 0xAB);
  uint8_t* at = t.buf.data() + (64 - reinterpret_cast<uintptr_t>(t.buf.data()) % 64) % 64;
  q4_int8_pack_tiles(w, at);
  t.view.tiles = at;
  t.view.tile_stride = q4_int8_tile_stride(w);
  return t;
}

TEST(Q4Tiles, LayoutIsTheGemmRegrouping) {
  std::mt19937 rng(31);
  for (DType sdt : {DType::BF16, DType::F16, DType::F32}) {
    QMat q = testing::make_affine(21, 128, 4, 32, sdt, 2, rng);
    const MatView& w = q.view;
    const int64_t stride = q4_int8_tile_stride(w), es = int64_t(dtype_size(sdt));
    EXPECT_EQ(stride % 64, 0);
    EXPECT_GE(stride, 4 * 4 * 64 + 2 * 4 * 16 * es);
    EXPECT_EQ(q4_int8_tiles_bytes(w), 2 * stride);
    std::vector<uint8_t> buf(size_t(q4_int8_tiles_bytes(w)));
    q4_int8_pack_tiles(w, buf.data());
    for (int64_t r = 0; r < 32; ++r) {  // rows 21..31 of the short tile repeat row 20
      const int64_t src = std::min<int64_t>(r, 20);
      const uint8_t* t = buf.data() + (r / 16) * stride;
      const int64_t i = r % 16;
      for (int64_t b = 0; b < 4; ++b)
        for (int64_t j = 0; j < 4; ++j)
          ASSERT_EQ(std::memcmp(t + (4 * b + j) * 64 + 4 * i, w.row(src) + 16 * b + 4 * j, 4), 0)
              << "row " << r << " block " << b << " word " << j;
      for (int64_t g = 0; g < 4; ++g) {
        const size_t soff = size_t(src * w.scale_stride + g) * size_t(es);
        ASSERT_EQ(std::memcmp(t + 1024 + (g * 16 + i) * es, w.scales + soff, size_t(es)), 0);
        ASSERT_EQ(std::memcmp(t + 1024 + (64 + g * 16 + i) * es, w.biases + soff, size_t(es)), 0);
      }
    }
  }
  // NVFP4: the codes regrouped the same way, then per group of 16 columns the 16 rows' E4M3 bytes:
  // as many bytes as stored (cols / 2 + cols / 16 a row).
  QMat nq = testing::make_nvfp4(21, 128, 2, rng);
  const MatView& nv = nq.view;
  const int64_t nstride = q4_int8_tile_stride(nv);
  EXPECT_EQ(nstride, 4 * 4 * 64 + 8 * 16);
  std::vector<uint8_t> nbuf(size_t(q4_int8_tiles_bytes(nv)));
  q4_int8_pack_tiles(nv, nbuf.data());
  for (int64_t r = 0; r < 32; ++r) {
    const int64_t src = std::min<int64_t>(r, 20), i = r % 16;
    const uint8_t* t = nbuf.data() + (r / 16) * nstride;
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t j = 0; j < 4; ++j)
        ASSERT_EQ(std::memcmp(t + (4 * b + j) * 64 + 4 * i, nv.row(src) + 16 * b + 4 * j, 4), 0);
    for (int64_t g = 0; g < 8; ++g)
      ASSERT_EQ(t[1024 + g * 16 + i], nv.scales[size_t(src * nv.scale_stride + g)]);
  }
  MatView other = nv;
  other.scale_dtype = DType::BF16;
  EXPECT_EQ(q4_int8_tile_stride(other), 0);  // only E4M3 block scales
}

TEST(Q4Tiles, KernelOverTilesIsBitwiseItsTwin) {
  if (!q4_int8_gemm_available()) GTEST_SKIP() << "no AVX512-VNNI + F16C";
  std::mt19937 rng(32);
  for (bool vbmi : {true, false}) {  // nibbles by VPERMB / GFNI where the CPU has them, and not
    set_q4_int8_vbmi_enabled(vbmi);
    for (int parts : {1, 2})
      for (int64_t cols : {64, 192, 448})
        for (int group : {16, 32, 64, 128}) {  // 16: NVFP4
          if (cols % group) continue;
          for (DType sdt : {DType::BF16, DType::F16, DType::F32}) {
            if (group == 16 && sdt != DType::BF16) continue;
            QMat q = group == 16 ? testing::make_nvfp4(37, cols, 2, rng)
                                 : testing::make_affine(37, cols, 4, group, sdt, 2, rng);
            if (group == 16) sdt = DType::F8_E4M3;
            Tiled t = tile(q.view);
            for (int64_t n_tok : {1, 2, 3, 8, 15, 16, 17, 30}) {
              const int64_t ldx = cols + 3;
              auto x = testing::randn_from(size_t(n_tok * ldx), rng);
              x[1] = 250.f;  // outlier
              for (int64_t i = 0; i < 32; ++i)
                x[size_t((n_tok - 1) * ldx + i)] = 0.f;  // zero block
              const std::string what = std::string(dtype_name(sdt)) + " g" + std::to_string(group) +
                                       " cols " + std::to_string(cols) + " parts " +
                                       std::to_string(parts) + " tokens " + std::to_string(n_tok);
              testing::expect_gemm_twin(t.view, n_tok, 0, 37, parts, x, ldx, what);
              testing::expect_gemm_twin(t.view, n_tok, 5, 22, parts, x, ldx, what + " rows 5-22");
              testing::expect_gemm_twin(t.view, n_tok, 33, 37, parts, x, ldx, what + " rows 33-37");
              const MatView kept = t.view.slice_rows(16, 21), dropped = t.view.slice_rows(3, 30);
              ASSERT_EQ(kept.tiles, t.view.tiles + t.view.tile_stride);
              ASSERT_EQ(dropped.tiles, nullptr);
              testing::expect_gemm_twin(kept, n_tok, 0, 21, parts, x, ldx, what + " slice 16+21");
              testing::expect_gemm_twin(dropped, n_tok, 2, 30, parts, x, ldx, what + " slice 3+30");
            }
          }
        }
  }
  set_q4_int8_vbmi_enabled(true);
}

// NVFP4's factors in one product where scale2 allows it (nvfp4_avx512::folds) and in three where
// it does not, and its nibbles by VPERMB and by VPSHUFB: every form bitwise the twin, with NaN
// (0x7f, 0xff), subnormal and zero block scales, negative and extreme scale2.
TEST(Q4Tiles, NvfpFactorFormsAndNibbleFormsAreBitwiseTheTwin) {
  if (!q4_int8_gemm_available()) GTEST_SKIP() << "no AVX512-VNNI + F16C";
  std::mt19937 rng(33);
  const int64_t cols = 192;
  QMat q = testing::make_nvfp4(37, cols, 1, rng);
  const uint8_t special[] = {0x7f, 0xff, 0x00, 0x80, 0x01, 0x07, 0x08, 0x7e, 0xfe, 0x81};
  for (size_t i = 0; i < q.scales.size(); i += 7) q.scales[i] = special[(i / 7) % 10];
  auto x = testing::randn_from(size_t(4 * cols), rng);
  x[3] = -300.f;
  for (bool vbmi : {true, false}) {
    set_q4_int8_vbmi_enabled(vbmi);
    for (float s2 : {0.0123f, -0.75f, 0x1p-100f, 0x1p100f, 0x1p-101f, 0x1.8p100f, 1e-38f, 3e37f}) {
      q.view.scale2 = s2;
      Tiled t = tile(q.view);
      for (int parts : {1, 2})
        for (int64_t n_tok : {1, 3, 4})
          testing::expect_gemm_twin(
              t.view, n_tok, 0, 37, parts, x, cols,
              std::string("scale2 ") + std::to_string(s2) + (vbmi ? " vpermb" : ""));
    }
  }
  set_q4_int8_vbmi_enabled(true);
}

// A token's row is the same alone, beside 1..15 others, or in a 17+ token prefill call.
TEST(Q4Tiles, TokenBitsDoNotDependOnTheTokensBeside) {
  if (!q4_int8_gemm_available()) GTEST_SKIP() << "no AVX512-VNNI + F16C";
  std::mt19937 rng(33);
  for (bool nv : {false, true}) {
    QMat q = nv ? testing::make_nvfp4(40, 256, 1, rng)
                : testing::make_affine(40, 256, 4, 64, DType::BF16, 1, rng);
    Tiled t = tile(q.view);
    const int64_t n = 24;
    auto x = testing::randn_from(size_t(n * 256), rng);
    for (int parts : {1, 2}) {
      std::vector<float> all(size_t(n * 40)), one(40);
      q4_int8_gemm_parts_rows(x.data(), n, 256, t.view, 0, 40, all.data(), 40, parts);
      for (int64_t k : {int64_t(1), int64_t(2), int64_t(5), int64_t(16)})
        for (int64_t t0 = 0; t0 + k <= n; t0 += k) {
          std::vector<float> some(size_t(k * 40));
          q4_int8_gemm_parts_rows(x.data() + t0 * 256, k, 256, t.view, 0, 40, some.data(), 40,
                                  parts);
          ASSERT_EQ(std::memcmp(some.data(), all.data() + t0 * 40, some.size() * 4), 0)
              << (nv ? "nvfp4 " : "affine ") << "parts " << parts << " " << k << " tokens from "
              << t0;
        }
    }
  }
}

TEST(Q4Tiles, ViewArithmeticKeepsOnlyValidTiles) {
  std::mt19937 rng(34);
  QMat q = testing::make_affine(64, 128, 4, 64, DType::BF16, 1, rng);
  Tiled t = tile(q.view);
  const MatView a = t.view.slice_rows(0, 32), b = t.view.slice_rows(32, 32);
  MatView whole;
  bool interleaved = true;
  ASSERT_TRUE(join_halves(a, b, &whole, &interleaved));
  EXPECT_FALSE(interleaved);
  EXPECT_EQ(whole.tiles, t.view.tiles);  // stacked halves whose tiles are one run
  MatView b2 = b;
  b2.tiles = nullptr;
  ASSERT_TRUE(join_halves(a, b2, &whole, &interleaved));
  EXPECT_EQ(whole.tiles, nullptr);
  // Interleaved halves (even and odd rows) never keep tiles.
  MatView even = q.view, odd = q.view.slice_rows(1, 63);
  even.rows = odd.rows = 32;
  even.row_stride = odd.row_stride = 2 * q.view.row_stride;
  even.scale_stride = odd.scale_stride = 2 * q.view.scale_stride;
  even.tiles = odd.tiles = t.view.tiles, even.tile_stride = odd.tile_stride = t.view.tile_stride;
  ASSERT_TRUE(join_halves(even, odd, &whole, &interleaved));
  EXPECT_TRUE(interleaved);
  EXPECT_EQ(whole.tiles, nullptr);
  EXPECT_EQ(slice_cols(t.view, 0, 64).tiles, nullptr);
}

TEST(Q4Tiles, BoundForEveryTokenCountInFastNumericsOnly) {
  if (!q4_int8_gemm_enabled()) GTEST_SKIP() << "no AVX512-VNNI int8 gemm";
  std::mt19937 rng(35);
  QMat q = testing::make_affine(16, 256, 4, 64, DType::BF16, 1, rng);
  Tiled t = tile(q.view);
  MatView w = t.view;
  for (int64_t n : {1, 2, 16, 17, 64}) {
    ASSERT_TRUE(bind_kernels(w, KernelMode::kFast));
    EXPECT_EQ(w.kernels->for_tokens(n).rows, &q4_int8_gemm_rows) << n;
    ASSERT_TRUE(bind_kernels(w, KernelMode::kFastFine));
    EXPECT_EQ(w.kernels->for_tokens(n).rows, &q4_int8_gemm_fine_rows) << n;
    ASSERT_TRUE(bind_kernels(w, KernelMode::kExact));
    EXPECT_NE(w.kernels->for_tokens(n).rows, &q4_int8_gemm_rows) << n;
    EXPECT_NE(w.kernels->for_tokens(n).rows, &q4_int8_gemm_fine_rows) << n;
  }
  MatView plain = q.view;  // no tiles: decode keeps the kernels that read the codes as stored
  ASSERT_TRUE(bind_kernels(plain, KernelMode::kFast));
  EXPECT_NE(plain.kernels->for_tokens(1).rows, &q4_int8_gemm_rows);
  // NVFP4: two parts of x in both grades, as its other int8 kernels.
  QMat nq = testing::make_nvfp4(16, 256, 1, rng);
  Tiled nt = tile(nq.view);
  MatView nw = nt.view;
  for (int64_t n : {1, 2, 16, 17, 64})
    for (KernelMode m : {KernelMode::kFast, KernelMode::kFastFine}) {
      ASSERT_TRUE(bind_kernels(nw, m));
      EXPECT_EQ(nw.kernels->for_tokens(n).rows, &q4_int8_gemm_fine_rows) << n;
    }
  ASSERT_TRUE(bind_kernels(nw, KernelMode::kExact));
  EXPECT_NE(nw.kernels->for_tokens(1).rows, &q4_int8_gemm_fine_rows);
}

}  // namespace
}  // namespace inkling
