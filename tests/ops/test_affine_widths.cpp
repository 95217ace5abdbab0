// MLX affine weights at every width MLX writes (1, 2, 3, 4, 5, 6, 8 bits): dequant_row by hand
// (one little-endian bit stream per row, codes straddling u32 words) and bit for bit against
// mx.dequantize (tests/fixtures/affine_mlx, tools/make_affine_fixture.py); the word-lane kernels
// (1 token, few tokens), the gemm on dequantized tiles and whatever the registry binds, against
// the scalar twin for groups 32/64/128, bf16/f16/f32 scales, 1..33 tokens, odd row counts, rows
// with whole and partial blocks, strided rows, row bands, row and column slices, on every
// compiled Highway target; and that no kernel reads a byte past the view.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <hwy/targets.h>

#include "base/safetensors.h"
#include "ops/affine_words.h"
#include "ops/formats.h"
#include "ops/machine_hwy.h"
#include "ops/matmul.h"
#include "ops/matmul_hwy.h"
#include "ops/quant.h"
#include "ops/quant_affine_bf16dot.h"
#include "ops/quant_affine_words.h"
#include "ops/quant_matmul.h"
#include "quant_test_util.h"

namespace inkling {
namespace {

using testing::compare;
using testing::make_affine;
using testing::PortableKernelsOnly;
using testing::put_scale;
using testing::QMat;

constexpr int kWidths[] = {1, 2, 3, 4, 5, 6, 8};

std::string name_of(int bits, int group, DType sdt) {
  return "q" + std::to_string(bits) + " g" + std::to_string(group) + " " + dtype_name(sdt);
}

// Rows of codes packed as MLX packs them: element c at bits [c * bits, (c + 1) * bits) of the
// row's little-endian bit stream.
std::vector<uint8_t> pack_rows(const std::vector<uint32_t>& q, int bits, int64_t rows,
                               int64_t cols) {
  std::vector<uint8_t> out(size_t(rows * cols * bits / 8));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      for (int b = 0; b < bits; ++b)
        if ((q[size_t(r * cols + c)] >> b) & 1u) {
          const int64_t bit = r * cols * bits + c * bits + b;
          out[size_t(bit / 8)] |= uint8_t(1u << (bit % 8));
        }
  return out;
}

TEST(AffineWidths, DequantRowByHand) {
  for (int bits : kWidths) {
    const int64_t rows = 3, cols = 128, group = 32, ng = cols / group;
    std::vector<uint32_t> q(size_t(rows * cols));
    for (int64_t i = 0; i < rows * cols; ++i) q[size_t(i)] = uint32_t(i * 7 + i / 5) % (1u << bits);
    std::vector<uint8_t> codes = pack_rows(q, bits, rows, cols);
    std::vector<uint8_t> sc(size_t(rows * ng * 2)), bi(sc.size());
    for (int64_t g = 0; g < rows * ng; ++g) {
      put_scale(sc, DType::BF16, size_t(g), g % 2 ? -0.5f : 0.25f * float(g + 1));
      put_scale(bi, DType::BF16, size_t(g), 2.f - float(g));
    }
    MatView v;
    v.format = WeightFormat::kAffine, v.dtype = DType::U32;
    v.data = codes.data(), v.scales = sc.data(), v.biases = bi.data();
    v.rows = rows, v.cols = cols, v.row_stride = cols * bits / 8;
    v.scale_dtype = DType::BF16, v.scale_stride = ng, v.bits = bits, v.group = int(group);
    std::vector<float> out(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      dequant_row(v, r, out.data());
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t g = r * ng + c / group;
        const float s = g % 2 ? -0.5f : 0.25f * float(g + 1), b = 2.f - float(g);
        ASSERT_EQ(out[size_t(c)], s * float(q[size_t(r * cols + c)]) + b)
            << "q" << bits << " row " << r << " col " << c;
      }
    }
  }
}

// The tolerance offset of the kernel the registry binds for n_tok tokens: the AVX512-BF16 kernels
// sum (2^bits + q) * x per group (16 + q for 4 bits) and remove the offset through sum(x).
float bound_offset(const MatView& v, int64_t n_tok) {
  const std::string name = kernels_of(v).for_tokens(n_tok).name;
  if (name.rfind("avx512-bf16", 0) != 0 || n_tok > 2) return 0.f;
  return v.bits == 4 ? 16.f : float(1 << v.bits);
}

// Every kernel that can take the view, against the scalar twin.
void compare_all(const MatView& v, int64_t n_tok, std::mt19937& rng, const std::string& what) {
  compare(v, n_tok, rng, what + " (bound)", bound_offset(v, n_tok), 1.f, matmul_rows);
  if (affine_words_supported(v))
    compare(v, n_tok, rng, what + " (words)", 0.f, 1.f, affine_words_rows);
  if (hwy_gemm_affine_supported(v) || hwy_gemm_q4_supported(v))
    compare(v, n_tok, rng, what + " (gemm)", 0.f, 1.f, hwy_gemm_rows);
}

TEST(AffineWidths, KernelsMatchScalarTwin) {
  PortableKernelsOnly portable;
  std::mt19937 rng(61);
  std::printf("[affine widths] target %s\n", simd_target_name().c_str());
  for (int bits : kWidths)
    for (int group : {32, 64, 128})
      for (DType sdt : {DType::BF16, DType::F16, DType::F32})
        for (int64_t rows : {1, 7, 13})
          for (int spread : {1, 2}) {
            // One partial block; whole blocks of every target's width plus a partial one; exactly
            // one 512-column block (the last row reads its last block through a copy).
            const int64_t cols = rows == 7 ? 3 * group : rows == 13 ? 1024 + 3 * group : 512;
            QMat q = make_affine(rows, cols, bits, group, sdt, spread, rng);
            for (int64_t n_tok : {1, 2, 3, 5, 8, 13, 33}) {
              compare_all(q.view, n_tok, rng,
                          name_of(bits, group, sdt) + " rows " + std::to_string(rows) + " cols " +
                              std::to_string(cols) + " spread " + std::to_string(spread) + " tok " +
                              std::to_string(n_tok));
              if (::testing::Test::HasFatalFailure()) return;
            }
          }
}

TEST(AffineWidths, BandsAndSlicesMatchTheWhole) {
  PortableKernelsOnly portable;
  std::mt19937 rng(62);
  for (int bits : kWidths) {
    QMat q = make_affine(9, 1024 + 256, bits, 64, DType::BF16, 1, rng);
    const MatView& w = q.view;
    for (int64_t n_tok : {1, 3, 8}) {
      // Row bands of one kernel give the whole's bits.
      std::vector<float> x(size_t(n_tok * w.cols)), whole(size_t(n_tok * 9)), band(whole.size());
      for (auto& v : x) v = std::normal_distribution<float>(0.f, 1.f)(rng);
      matmul_rows(x.data(), n_tok, w.cols, w, 0, 9, whole.data(), 9);
      matmul_rows(x.data(), n_tok, w.cols, w, 0, 4, band.data(), 9);
      matmul_rows(x.data(), n_tok, w.cols, w, 4, 9, band.data(), 9);
      EXPECT_EQ(whole, band) << "q" << bits << " tok " << n_tok;
    }
    // Column slices (as a flattened shared expert's down projection is): the same codes.
    for (int64_t c0 : {int64_t(0), int64_t(64), int64_t(512)}) {
      const MatView s = slice_cols(w, c0, 640);
      std::vector<float> full(size_t(w.cols)), part(640);
      for (int64_t r = 0; r < 9; ++r) {
        dequant_row(w, r, full.data());
        dequant_row(s, r, part.data());
        ASSERT_EQ(std::memcmp(full.data() + c0, part.data(), 640 * 4), 0) << bits << " " << r;
      }
      for (int64_t n_tok : {1, 2, 8})
        compare_all(s, n_tok, rng, "q" + std::to_string(bits) + " slice");
    }
    for (int64_t n_tok : {1, 5, 9})
      compare_all(w.slice_rows(3, 5), n_tok, rng, "q" + std::to_string(bits) + " row slice");
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// The dispatcher picks one target; run every compiled target this CPU supports.
TEST(AffineWidths, EveryCompiledTarget) {
  PortableKernelsOnly portable;
  std::mt19937 rng(63);
  const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  for (int64_t t : targets) {
    hwy::SetSupportedTargetsForTest(t);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    const std::string name = simd_target_name();
    for (int bits : kWidths)
      for (int group : {32, 128}) {
        QMat q = make_affine(5, 1024 + 3 * group, bits, group, DType::BF16, 2, rng);
        for (int64_t n_tok : {1, 3, 6, 8, 13})
          compare_all(q.view, n_tok, rng, name + " " + name_of(bits, group, DType::BF16));
        if (::testing::Test::HasFatalFailure()) break;
      }
    std::printf("[affine widths] target %s ok\n", name.c_str());
    if (::testing::Test::HasFatalFailure()) break;
  }
  hwy::SetSupportedTargetsForTest(0);
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
  EXPECT_FALSE(targets.empty());
}

// The AVX512-BF16 + VBMI kernel (1 and 2 tokens, widths 1..6): groups, scale dtypes, odd rows,
// whole and partial 128-column blocks, strided rows, slices, x spanning 12 orders of magnitude
// (the exact 3-part bf16 split); the registry binds it where the CPU has it.
TEST(AffineWidths, Bf16DotMatchesScalarTwin) {
  if (!affine_bf16dot_available()) GTEST_SKIP() << "CPU without AVX512-BF16 and AVX512-VBMI";
  std::mt19937 rng(66);
  for (int bits : {1, 2, 3, 4, 5, 6})
    for (int group : {32, 64, 128})
      for (DType sdt : {DType::BF16, DType::F16, DType::F32})
        for (int64_t rows : {int64_t(1), int64_t(7), int64_t(13)})
          for (int spread : {1, 2}) {
            const int64_t cols = rows == 7 ? group : rows == 13 ? 1024 + 3 * group : 128;
            QMat q = make_affine(rows, cols, bits, group, sdt, spread, rng);
            ASSERT_TRUE(affine_bf16dot_handles(q.view, 2));
            const float off = float(1 << bits);
            for (int64_t n_tok : {1, 2, 3}) {
              const std::string what = "bf16 " + name_of(bits, group, sdt) + " rows " +
                                       std::to_string(rows) + " cols " + std::to_string(cols) +
                                       " spread " + std::to_string(spread) + " tok " +
                                       std::to_string(n_tok);
              compare(q.view, n_tok, rng, what, off, 1.f, affine_bf16dot_rows);
              compare(q.view, n_tok, rng, what + " tiny x", off, 1e-6f, affine_bf16dot_rows);
              compare(q.view, n_tok, rng, what + " large x", off, 1e6f, affine_bf16dot_rows);
              if (::testing::Test::HasFatalFailure()) return;
            }
            compare(q.view.slice_rows(rows / 2, rows - rows / 2), 1, rng, "bf16 row slice", off,
                    1.f, affine_bf16dot_rows);
            if (cols > group)
              compare(slice_cols(q.view, group, cols - group), 2, rng, "bf16 column slice", off,
                      1.f, affine_bf16dot_rows);
          }
  QMat q8 = make_affine(3, 256, 8, 64, DType::BF16, 1, rng);
  EXPECT_FALSE(affine_bf16dot_handles(q8.view, 1));  // 2^8 + q is not a bf16 number
  QMat q3 = make_affine(3, 256, 3, 64, DType::BF16, 1, rng);
  EXPECT_TRUE(affine_bf16dot_handles(q3.view, 16));
  EXPECT_FALSE(affine_bf16dot_handles(q3.view, 17));  // 17+ tokens: the Highway kernels
  for (int64_t n_tok : {3, 16})
    compare(q3.view, n_tok, rng, "bf16 3-bit tokens", 8.f, 1.f, affine_bf16dot_rows);
  // The registry binds it for 1..16 tokens unless switched off (then the VNNI kernel where the
  // CPU has it).
  EXPECT_STREQ(kernels_of(q3.view).for_tokens(1).name, "avx512-bf16 affine");
  {
    set_q4_bf16dot_enabled(false);
    EXPECT_STREQ(kernels_of(q3.view).for_tokens(1).name,
                 affine_vnni_enabled() ? "avx512-vnni affine" : "hwy affine words");
    set_q4_bf16dot_enabled(true);
  }
  {
    PortableKernelsOnly portable;
    EXPECT_STREQ(kernels_of(q3.view).for_tokens(1).name, "hwy affine words");
  }
}

// Codes whose last row ends exactly at a page followed by an inaccessible page: a kernel that
// reads past the view faults.
TEST(AffineWidths, NeverReadsPastTheView) {
  std::mt19937 rng(64);
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  for (int bits : kWidths)
    for (int64_t cols : {int64_t(512), int64_t(1024), int64_t(96 * 3)}) {
      const int64_t rows = 5, row_bytes = cols * bits / 8;
      QMat q = make_affine(rows, cols, bits, 32, DType::F32, 1, rng);
      const size_t bytes = size_t(rows * row_bytes);
      const size_t span = (bytes + page - 1) / page * page;
      void* m =
          mmap(nullptr, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      ASSERT_NE(m, MAP_FAILED);
      ASSERT_EQ(mprotect(static_cast<uint8_t*>(m) + span, page, PROT_NONE), 0);
      uint8_t* codes = static_cast<uint8_t*>(m) + span - bytes;
      std::memcpy(codes, q.codes.data(), bytes);
      MatView v = q.view;
      v.data = codes;
      for (int64_t n_tok : {1, 2})  // the AVX512-BF16 kernels where the CPU has them
        compare(v, n_tok, rng, "guarded bound q" + std::to_string(bits), bound_offset(v, n_tok),
                1.f, matmul_rows);
      if (affine_bf16dot_available() && affine_bf16dot_handles(v, 1)) {
        compare(v, 1, rng, "guarded bf16", float(1 << bits), 1.f, affine_bf16dot_rows);
        compare(v, 2, rng, "guarded bf16", float(1 << bits), 1.f, affine_bf16dot_rows);
      }
      PortableKernelsOnly portable;
      for (int64_t n_tok : {1, 2, 5, 8, 19})
        compare_all(v, n_tok, rng,
                    "guarded q" + std::to_string(bits) + " cols " + std::to_string(cols));
      // The last row alone, and a column slice ending at the row's end.
      compare_all(v.slice_rows(rows - 1, 1), 1, rng, "guarded last row");
      compare_all(slice_cols(v, cols - 96, 96), 3, rng, "guarded slice");
      munmap(m, span + page);
      if (::testing::Test::HasFatalFailure()) return;
    }
}

// tools/make_affine_fixture.py: matrices quantized by mx.quantize at every width, group and scale
// dtype, with mx.dequantize of the codes on f32-upcast scales and biases. dequant_row must give
// the same bits, and every kernel the product with those values.
TEST(AffineWidths, DequantMatchesMlxBitForBit) {
  const std::string path =
      std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/affine_mlx/affine.safetensors";
  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().message();
  std::map<std::string, const TensorInfo*> by;
  for (const TensorInfo& t : (*file)->tensors()) by[t.name] = &t;
  std::mt19937 rng(65);
  int cases = 0;
  for (const auto& [name, t] : by) {
    const std::string suffix = ".weight";
    if (name.size() < suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix))
      continue;
    const std::string stem = name.substr(0, name.size() - suffix.size());
    const TensorInfo* s = by.at(stem + ".scales");
    const TensorInfo* b = by.at(stem + ".biases");
    const TensorInfo* d = by.at(stem + ".dequant");
    ASSERT_EQ(t->dtype, DType::U32) << stem;
    ASSERT_EQ(d->dtype, DType::F32) << stem;
    const int64_t rows = d->shape[0], cols = d->shape[1];
    MatView v;
    v.format = WeightFormat::kAffine, v.dtype = DType::U32;
    v.data = t->data, v.scales = s->data, v.biases = b->data;
    v.rows = rows, v.cols = cols, v.row_stride = int64_t(t->nbytes) / rows;
    v.bits = int(v.row_stride * 8 / cols);
    v.scale_dtype = s->dtype, v.scale_stride = s->shape[1], v.group = int(cols / s->shape[1]);
    ASSERT_TRUE(bind_kernels(v)) << stem;
    std::vector<float> got(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      dequant_row(v, r, got.data());
      ASSERT_EQ(std::memcmp(got.data(), d->data + size_t(r * cols) * 4, size_t(cols) * 4), 0)
          << stem << " row " << r;
    }
    for (int64_t n_tok : {1, 3, 8}) compare_all(v, n_tok, rng, stem);
    ++cases;
  }
  std::printf("[affine widths] %d MLX matrices bit-exact\n", cases);
  EXPECT_EQ(cases, 7 * 3 * 3);
}

}  // namespace
}  // namespace inkling
