// The weight-format registry: one entry per format, its byte tally and labels, and the kernels it
// binds per shape class; bound and unbound views give the same bits; views nobody registered
// are refused.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "../common/random.h"
#include "base/dtype.h"
#include "ops/formats.h"
#include "ops/matmul.h"
#include "ops/matmul_hwy.h"
#include "ops/quant.h"
#include "ops/quant_affine_bf16dot.h"
#include "ops/quant_affine_vnni.h"
#include "ops/quant_q4_bf16dot.h"

namespace inkling {
namespace {

// Backing bytes and a view over them.
struct Owned {
  std::vector<uint8_t> codes, scales, biases;
  MatView view;
};

Owned dense(DType dt, int64_t rows, int64_t cols, uint32_t seed) {
  Owned o;
  const auto f = testing::randn(size_t(rows * cols), seed);
  o.codes.resize(f.size() * dtype_size(dt));
  for (size_t i = 0; i < f.size(); ++i) {
    if (dt == DType::F32) {
      std::memcpy(o.codes.data() + i * 4, &f[i], 4);
    } else {
      // F16: a finite half of about the same magnitude (sign, exponent 12..17, random mantissa).
      const uint16_t half =
          uint16_t((f[i] < 0 ? 0x8000 : 0) | ((12 + i % 6) << 10) | (i * 37 % 1024));
      const uint16_t b = dt == DType::BF16 ? f32_to_bf16(f[i]) : half;
      std::memcpy(o.codes.data() + i * 2, &b, 2);
    }
  }
  o.view.dtype = dt;
  o.view.data = o.codes.data();
  o.view.rows = rows, o.view.cols = cols, o.view.row_stride = cols;
  return o;
}

Owned affine(int bits, int group, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  Owned o;
  o.codes.resize(size_t(rows * cols * bits / 8));
  for (auto& b : o.codes) b = uint8_t(rng());
  const int64_t ng = cols / group;
  o.scales.resize(size_t(rows * ng) * 2), o.biases.resize(o.scales.size());
  std::normal_distribution<float> nd(0.f, 0.02f);
  for (int64_t i = 0; i < rows * ng; ++i) {
    const uint16_t s = f32_to_bf16(nd(rng)), b = f32_to_bf16(nd(rng));
    std::memcpy(o.scales.data() + i * 2, &s, 2), std::memcpy(o.biases.data() + i * 2, &b, 2);
  }
  MatView& v = o.view;
  v.format = WeightFormat::kAffine, v.dtype = DType::U32;
  v.data = o.codes.data(), v.scales = o.scales.data(), v.biases = o.biases.data();
  v.rows = rows, v.cols = cols, v.row_stride = cols * bits / 8;
  v.scale_dtype = DType::BF16, v.scale_stride = ng, v.bits = bits, v.group = group;
  return o;
}

Owned nvfp4(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  Owned o;
  o.codes.resize(size_t(rows * cols / 2));
  for (auto& b : o.codes) b = uint8_t(rng());
  o.scales.resize(size_t(rows * cols / 16));
  for (auto& b : o.scales) b = uint8_t(rng() % 0x70);  // finite e4m3 block scales
  MatView& v = o.view;
  v.format = WeightFormat::kNvfp4, v.dtype = DType::U8;
  v.data = o.codes.data(), v.scales = o.scales.data();
  v.rows = rows, v.cols = cols, v.row_stride = cols / 2;
  v.scale_dtype = DType::F8_E4M3, v.scale_stride = cols / 16, v.bits = 4, v.group = 16;
  v.scale2 = 0.37f;
  return o;
}

Owned mxfp8(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  Owned o;
  o.codes.resize(size_t(rows * cols));
  for (auto& b : o.codes) b = uint8_t(rng() % 0x7f);  // finite e4m3 values
  o.scales.resize(size_t(rows * cols / 32));
  for (auto& b : o.scales) b = uint8_t(120 + rng() % 8);
  MatView& v = o.view;
  v.format = WeightFormat::kMxfp8, v.dtype = DType::F8_E4M3;
  v.data = o.codes.data(), v.scales = o.scales.data();
  v.rows = rows, v.cols = cols, v.row_stride = cols;
  v.scale_dtype = DType::U8, v.scale_stride = cols / 32, v.bits = 8, v.group = 32;
  return o;
}

TEST(Formats, EveryViewHasExactlyOneEntry) {
  std::set<std::string> names;
  for (const FormatEntry& f : weight_formats()) EXPECT_TRUE(names.insert(f.name).second) << f.name;
  const std::vector<Owned> views = {
      dense(DType::F32, 3, 64, 1), dense(DType::BF16, 3, 64, 2), dense(DType::F16, 3, 64, 3),
      affine(4, 64, 3, 128, 4),    affine(8, 32, 3, 128, 5),     nvfp4(3, 64, 6),
      affine(1, 32, 3, 128, 7),    affine(2, 64, 3, 128, 8),     affine(3, 128, 3, 128, 9),
      affine(5, 32, 3, 128, 10),   affine(6, 64, 3, 128, 11),    mxfp8(3, 64, 12)};
  const char* expect[] = {"F32",       "BF16",      "F16",       "affine q4", "affine q8", "nvfp4",
                          "affine q1", "affine q2", "affine q3", "affine q5", "affine q6", "mxfp8"};
  for (size_t i = 0; i < views.size(); ++i) {
    int matches = 0;
    for (const FormatEntry& f : weight_formats()) matches += f.matches(views[i].view);
    EXPECT_EQ(matches, 1) << expect[i];
    ASSERT_NE(find_format(views[i].view), nullptr);
    EXPECT_STREQ(find_format(views[i].view)->name, expect[i]);
  }
}

TEST(Formats, BytesAndLabels) {
  const Owned f32 = dense(DType::F32, 3, 64, 1), bf16 = dense(DType::BF16, 3, 64, 2);
  const Owned q4 = affine(4, 64, 3, 128, 4), q8 = affine(8, 32, 3, 128, 5);
  const Owned fp4 = nvfp4(3, 64, 6);
  EXPECT_EQ(bytes_per_element(f32.view), 4.0);
  EXPECT_EQ(bytes_per_element(bf16.view), 2.0);
  EXPECT_EQ(bytes_per_element(q4.view), 0.5 + 4.0 / 64);  // codes + bf16 scale and bias per 64
  EXPECT_EQ(bytes_per_element(q8.view), 1.0 + 4.0 / 32);
  EXPECT_EQ(bytes_per_element(fp4.view), 0.5 + 1.0 / 16);               // e4m3 scale per 16
  EXPECT_EQ(bytes_per_element(mxfp8(3, 64, 13).view), 1.0 + 1.0 / 32);  // e8m0 exponent per 32
  const Owned q3 = affine(3, 64, 3, 128, 7), q5 = affine(5, 128, 3, 256, 8);
  const Owned q6 = affine(6, 32, 3, 128, 9), q2 = affine(2, 64, 3, 128, 10);
  EXPECT_EQ(bytes_per_element(q3.view), 3.0 / 8 + 4.0 / 64);
  EXPECT_EQ(bytes_per_element(q5.view), 5.0 / 8 + 4.0 / 128);
  EXPECT_EQ(bytes_per_element(q6.view), 6.0 / 8 + 4.0 / 32);
  EXPECT_EQ(bytes_per_element(q2.view), 2.0 / 8 + 4.0 / 64);
  // The tally equals the bytes the test allocated for codes and sidecars.
  for (const Owned* o : {&f32, &bf16, &q4, &q8, &fp4, &q3, &q5, &q6, &q2})
    EXPECT_EQ(view_bytes(o->view), o->codes.size() + o->scales.size() + o->biases.size());
  EXPECT_EQ(format_label(bf16.view), "BF16");
  EXPECT_EQ(format_label(q4.view), "affine q4/g64");
  EXPECT_EQ(format_label(fp4.view), "nvfp4");
  EXPECT_EQ(format_label(q3.view), "affine q3/g64");
  EXPECT_EQ(format_label(q5.view), "affine q5/g128");
}

TEST(Formats, BindsKernelsPerShapeClass) {
  Owned bf16 = dense(DType::BF16, 8, 256, 1), f16 = dense(DType::F16, 8, 256, 2);
  ASSERT_TRUE(bind_kernels(bf16.view));
  ASSERT_TRUE(bind_kernels(f16.view));
  EXPECT_STREQ(bf16.view.kernels->for_tokens(1).name, "hwy matvec");
  EXPECT_STREQ(bf16.view.kernels->for_tokens(16).name, "hwy matvec");
  EXPECT_STREQ(bf16.view.kernels->for_tokens(17).name, "hwy gemm");
  EXPECT_STREQ(f16.view.kernels->for_tokens(1).name, "scalar widen");
  EXPECT_STREQ(f16.view.kernels->for_tokens(3).name, "scalar widen");

  Owned q4 = affine(4, 64, 8, 1024, 3), q8 = affine(8, 64, 8, 1024, 4);
  Owned fp4 = nvfp4(8, 1024, 5);
  ASSERT_TRUE(bind_kernels(q4.view) && bind_kernels(q8.view) && bind_kernels(fp4.view));
  const bool bf = q4_bf16dot_enabled();
  std::printf("[formats] bf16-dot kernel %s\n", bf ? "on" : "off (CPU or INKLING_NO_BF16DOT)");
  // AVX512-VNNI (x in int8 parts) for 4- and 8-bit affine where the CPU has it.
  const bool vn = affine_vnni_enabled();
  std::printf("[formats] vnni kernel %s\n", vn ? "on" : "off (CPU or INKLING_NO_VNNI)");
  const char* q4_name = vn ? "avx512-vnni q4" : bf ? "avx512-bf16 q4" : "hwy quant";
  const char* q8_name = vn ? "avx512-vnni q8" : "hwy affine bytes";
  EXPECT_STREQ(q4.view.kernels->for_tokens(1).name, q4_name);
  EXPECT_STREQ(fp4.view.kernels->for_tokens(5).name, bf ? "avx512-bf16 q4" : "hwy quant");
  // Row-count invariance (formats.h): one kernel for every token count up to 16.
  for (int64_t n : {2, 7, 8, 16}) {
    EXPECT_STREQ(q4.view.kernels->for_tokens(n).name, q4_name) << n;
    EXPECT_STREQ(fp4.view.kernels->for_tokens(n).name, bf ? "avx512-bf16 q4" : "hwy quant") << n;
    EXPECT_STREQ(q8.view.kernels->for_tokens(n).name, q8_name) << n;
  }
  EXPECT_STREQ(q8.view.kernels->for_tokens(1).name, q8_name);
  EXPECT_STREQ(q8.view.kernels->for_tokens(64).name,
               "hwy affine bytes (17-31 tokens) / hwy gemm affine");
  EXPECT_STREQ(q4.view.kernels->for_tokens(64).name,
               hwy_gemm_q4_supported(q4.view) ? "hwy gemm q4" : "hwy quant");
  EXPECT_EQ(q4.view.kernels->dequant_row, &affine_dequant_row);
  EXPECT_EQ(fp4.view.kernels->dequant_row, &nvfp4_dequant_row);
  // Every other MLX width: the AVX512-BF16 kernel for 1..16 tokens where the CPU has it, else the
  // word-lane kernel; 17+ tokens: the word-lane kernel up to 31, then the gemm on dequantized
  // tiles.
  const bool bfa = bf && affine_bf16dot_available();
  for (int bits : {1, 2, 3, 5, 6}) {
    Owned q = affine(bits, 64, 8, 1024, uint32_t(10 + bits));
    ASSERT_TRUE(bind_kernels(q.view)) << bits;
    const char* name = bfa ? "avx512-bf16 affine" : vn ? "avx512-vnni affine" : "hwy affine words";
    EXPECT_STREQ(q.view.kernels->for_tokens(1).name, name) << bits;
    EXPECT_STREQ(q.view.kernels->for_tokens(16).name, name) << bits;
    EXPECT_STREQ(q.view.kernels->for_tokens(17).name,
                 "hwy affine words (17-31 tokens) / hwy gemm affine")
        << bits;
    EXPECT_EQ(q.view.kernels->dequant_row, &affine_dequant_row) << bits;
  }
  // Row slices keep the bound set, column slices drop it (the choice may depend on the columns).
  EXPECT_EQ(q4.view.slice_rows(2, 3).kernels, q4.view.kernels);
  EXPECT_EQ(slice_cols(q4.view, 0, 512).kernels, nullptr);
}

TEST(Formats, RefusesWhatNobodyRegistered) {
  Owned q7 = affine(4, 64, 2, 128, 1);
  q7.view.bits = 7;  // MLX has no 7-bit affine mode, nor this build an entry
  EXPECT_EQ(find_format(q7.view), nullptr);
  EXPECT_FALSE(bind_kernels(q7.view));
  EXPECT_EQ(q7.view.kernels, nullptr);
  Owned g16 = affine(3, 64, 2, 128, 4);
  g16.view.group = 16;  // the word-lane kernels take MLX's groups (32, 64, 128) only
  EXPECT_FALSE(bind_kernels(g16.view));
  Owned q8g16 = affine(8, 64, 2, 128, 5);
  q8g16.view.group = 16;  // 8 bits still runs other groups, on the byte kernel
  ASSERT_TRUE(bind_kernels(q8g16.view));
  EXPECT_STREQ(q8g16.view.kernels->for_tokens(1).name, "hwy quant");
  Owned odd = affine(4, 64, 2, 128, 2);
  odd.view.cols = 100;  // groups of 64 do not divide the row
  EXPECT_FALSE(bind_kernels(odd.view));
  Owned fp4 = nvfp4(2, 64, 3);
  fp4.view.group = 32;  // NVFP4 blocks are 16 columns
  EXPECT_FALSE(bind_kernels(fp4.view));
}

// matmul through a bound view and through the registry lookup of an unbound copy: same kernel,
// same bits, for every shape class and with a thread pool.
TEST(Formats, BoundAndUnboundGiveTheSameBits) {
  ThreadPool pool(2);
  std::vector<Owned> views;
  views.push_back(dense(DType::F32, 37, 256, 1));
  views.push_back(dense(DType::BF16, 37, 256, 2));
  views.push_back(dense(DType::F16, 37, 256, 3));
  views.push_back(affine(4, 64, 37, 256, 4));
  views.push_back(affine(8, 128, 37, 256, 5));
  for (int bits : {1, 2, 3, 5, 6}) views.push_back(affine(bits, 64, 37, 256, uint32_t(20 + bits)));
  views.push_back(nvfp4(37, 256, 6));
  for (Owned& o : views) {
    MatView bound = o.view;
    ASSERT_TRUE(bind_kernels(bound));
    for (int64_t n : {1, 2, 3, 7, 8, 19}) {
      const auto x = testing::randn(size_t(n * 256), uint32_t(n));
      std::vector<float> a(size_t(n * 37)), b(a.size());
      matmul(x.data(), n, 256, bound, a.data(), 37, &pool);
      matmul(x.data(), n, 256, o.view, b.data(), 37, nullptr);
      EXPECT_EQ(a, b) << format_label(o.view) << " tokens " << n;
    }
    // dequantize-row through the registry equals the format's own definition.
    std::vector<float> r1(256), r2(256);
    dequant_row(bound, 5, r1.data());
    bound.kernels->dequant_row(o.view, 5, r2.data());
    EXPECT_EQ(r1, r2) << format_label(o.view);
  }
}

}  // namespace
}  // namespace inkling
