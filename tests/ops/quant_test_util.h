// Helpers of the quantized-kernel tests (test_quant_matmul.cpp, test_affine_widths.cpp,
// test_mxfp8.cpp): random packed MLX affine, NVFP4 and MXFP8 matrices, and the comparison of a
// kernel with its scalar twin under the f32-accumulation tolerance every quantized kernel is held
// to.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../common/random.h"
#include "base/dtype.h"
#include "ops/formats.h"
#include "ops/matmul.h"
#include "ops/quant.h"
#include "ops/quant_affine_vnni.h"
#include "ops/quant_matmul.h"
#include "ops/quant_q4_bf16dot.h"
#include "ops/quant_q4_int8.h"
#include "ops/quant_q4_int8_gemm.h"

namespace inkling::testing {

// Owns random dense storage (f32, bf16, or finite f16 values) for a [rows, cols] matrix whose
// rows are `stride` elements apart (0: cols).
struct Dense {
  std::vector<uint8_t> bytes;
  MatView view;
};

inline Dense make_dense(DType dt, int64_t rows, int64_t cols, uint32_t seed, int64_t stride = 0) {
  if (stride == 0) stride = cols;
  Dense d;
  const auto f = randn(size_t(rows * stride), seed);
  const size_t es = dtype_size(dt);
  d.bytes.resize(f.size() * es);
  for (size_t i = 0; i < f.size(); ++i) {
    if (dt == DType::F32) {
      std::memcpy(d.bytes.data() + i * 4, &f[i], 4);
    } else {
      uint16_t b = f32_to_bf16(f[i]);
      if (dt == DType::F16) b = uint16_t(0x3c00 | (b & 0x83ff));  // finite f16 values
      std::memcpy(d.bytes.data() + i * 2, &b, 2);
    }
  }
  d.view.dtype = dt;
  d.view.data = d.bytes.data();
  d.view.rows = rows;
  d.view.cols = cols;
  d.view.row_stride = stride;
  return d;
}

// Owns random packed storage for a [rows, cols] quantized matrix (rows allocated x `spread`
// so views can skip rows).
struct QMat {
  std::vector<uint8_t> codes, scales, biases;
  MatView view;
};

inline void put_scale(std::vector<uint8_t>& buf, DType t, size_t i, float v) {
  if (t == DType::F32) {
    std::memcpy(buf.data() + 4 * i, &v, 4);
  } else if (t == DType::BF16) {
    const uint16_t h = f32_to_bf16(v);
    std::memcpy(buf.data() + 2 * i, &h, 2);
  } else {  // F16 via a value exactly representable in f16: round through bf16 then clip
    const float r = bf16_to_f32(f32_to_bf16(v));
    uint32_t u = f32_to_bits(r);
    const uint32_t sign = (u >> 16) & 0x8000u;
    int e = int((u >> 23) & 0xff) - 127 + 15;
    const uint32_t m = (u >> 13) & 0x3ffu;
    const uint16_t h = uint16_t(sign | (e <= 0 ? 0u : (uint32_t(e) << 10) | m));
    std::memcpy(buf.data() + 2 * i, &h, 2);
  }
}

inline QMat make_affine(int64_t rows, int64_t cols, int bits, int group, DType sdt, int spread,
                        std::mt19937& rng) {
  QMat q;
  const int64_t all = rows * spread, row_bytes = cols * bits / 8, ng = cols / group;
  q.codes.resize(size_t(all * row_bytes));
  for (auto& b : q.codes) b = uint8_t(rng());
  q.scales.resize(size_t(all * ng) * dtype_size(sdt));
  q.biases.resize(q.scales.size());
  std::normal_distribution<float> nd(0.f, 0.05f);
  for (int64_t i = 0; i < all * ng; ++i) {
    put_scale(q.scales, sdt, size_t(i), nd(rng));  // either sign, as MLX writes them
    put_scale(q.biases, sdt, size_t(i), nd(rng) * 8);
  }
  MatView& v = q.view;
  v.format = WeightFormat::kAffine;
  v.dtype = DType::U32;
  v.data = q.codes.data();
  v.rows = rows;
  v.cols = cols;
  v.row_stride = row_bytes * spread;
  v.scales = q.scales.data();
  v.biases = q.biases.data();
  v.scale_dtype = sdt;
  v.scale_stride = ng * spread;
  v.bits = bits;
  v.group = group;
  return q;
}

inline QMat make_nvfp4(int64_t rows, int64_t cols, int spread, std::mt19937& rng) {
  QMat q;
  const int64_t all = rows * spread;
  q.codes.resize(size_t(all * cols / 2));
  for (auto& b : q.codes) b = uint8_t(rng());
  q.scales.resize(size_t(all * cols / 16));
  for (auto& b : q.scales) {
    do b = uint8_t(rng() & 0x7f);  // positive, finite (0x7f is NaN)
    while (b == 0x7f);
  }
  MatView& v = q.view;
  v.format = WeightFormat::kNvfp4;
  v.dtype = DType::U8;
  v.data = q.codes.data();
  v.rows = rows;
  v.cols = cols;
  v.row_stride = cols / 2 * spread;
  v.scales = q.scales.data();
  v.scale_dtype = DType::F8_E4M3;
  v.scale_stride = cols / 16 * spread;
  v.bits = 4;
  v.group = 16;
  v.scale2 = 0.0123f;
  return q;
}

// MXFP8: random E4M3 values (NaN codes 0x7f / 0xff avoided) and E8M0 exponents around 2^-7
// (`exp_lo`..`exp_hi`, biased by 127).
inline QMat make_mxfp8(int64_t rows, int64_t cols, int spread, std::mt19937& rng, int exp_lo = 115,
                       int exp_hi = 125) {
  QMat q;
  const int64_t all = rows * spread;
  q.codes.resize(size_t(all * cols));
  for (auto& b : q.codes) {
    do b = uint8_t(rng());
    while ((b & 0x7f) == 0x7f);
  }
  q.scales.resize(size_t(all * cols / 32));
  for (auto& b : q.scales) b = uint8_t(exp_lo + int(rng() % uint32_t(exp_hi - exp_lo + 1)));
  MatView& v = q.view;
  v.format = WeightFormat::kMxfp8;
  v.dtype = DType::F8_E4M3;
  v.data = q.codes.data();
  v.rows = rows;
  v.cols = cols;
  v.row_stride = cols * spread;
  v.scales = q.scales.data();
  v.scale_dtype = DType::U8;
  v.scale_stride = cols / 32 * spread;
  v.bits = 8;
  v.group = 32;
  return q;
}

// |scale| of group g in row r of an affine view.
inline float abs_scale(const MatView& w, int64_t r, int64_t g) {
  return std::fabs(load_as_f32(w.scale_dtype, w.scales, size_t(r * w.scale_stride + g)));
}

// Fused vs scalar twin for n_tok tokens with x of leading dimension ldx >= cols. `offset`: the
// kernel sums (offset + q) * x per group and removes offset * s * sum(x) afterwards, so its f32
// rounding scales with sum |x| (|w| + offset |s|) (0 for kernels that do not). `kernel`: the
// kernel under test (matmul_rows: whatever the registry picks for the view).
// The AVX512-VNNI kernel (x in int8 parts: not within that tolerance of the exact product) is
// compared bitwise with its own twin instead, also when the registry picks it (matmul_rows).
inline void compare(const MatView& w, int64_t n_tok, std::mt19937& rng, const std::string& what,
                    float offset = 0.f, float x_scale = 1.f,
                    RowsKernel kernel = quant_matmul_rows) {
  const int64_t ldx = w.cols + 3, ldy = w.rows + 1;
  std::vector<float> x(size_t(n_tok * ldx));
  std::normal_distribution<float> nd(0.f, x_scale);
  for (auto& v : x) v = nd(rng);
  std::vector<float> got(size_t(n_tok * ldy), -7.f), want(got), absw(got);
  kernel(x.data(), n_tok, ldx, w, 0, w.rows, got.data(), ldy);
  if (kernel == affine_vnni_rows ||
      (kernel == matmul_rows && kernels_of(w).for_tokens(n_tok).rows == affine_vnni_rows)) {
    affine_vnni_rows_ref(x.data(), n_tok, ldx, w, 0, w.rows, want.data(), ldy);
    ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0) << what << " (vnni twin)";
    return;
  }
  quant_matmul_rows_ref(x.data(), n_tok, ldx, w, 0, w.rows, want.data(), ldy);
  // Tolerance from sum |x| |w| per output (f32 accumulation over cols terms).
  std::vector<float> row(size_t(w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    dequant_row(w, r, row.data());
    for (int64_t t = 0; t < n_tok; ++t) {
      double a = 0;
      for (int64_t c = 0; c < w.cols; ++c)
        a += std::fabs(x[size_t(t * ldx + c)]) *
             (std::fabs(row[size_t(c)]) + (offset > 0 ? offset * abs_scale(w, r, c / w.group) : 0));
      const size_t i = size_t(t * ldy + r);
      ASSERT_NEAR(got[i], want[i], 2e-6 * a + 1e-30) << what << " tok " << t << " row " << r;
    }
  }
  // Padding columns of y are untouched.
  for (int64_t t = 0; t < n_tok; ++t) ASSERT_EQ(got[size_t(t * ldy + w.rows)], -7.f) << what;
}

// Runs the portable (Highway) kernels for the rest of a test, even where the CPU has AVX512-BF16.
struct PortableKernelsOnly {
  PortableKernelsOnly() {
    set_q4_bf16dot_enabled(false), set_affine_vnni_enabled(false), set_q4_int8_enabled(false);
  }
  ~PortableKernelsOnly() {
    set_q4_bf16dot_enabled(true), set_affine_vnni_enabled(true), set_q4_int8_enabled(true);
  }
};

// The kernels of an AVX2 host (no AVX512-BF16 / VNNI ones): fast 4-bit on the int8 AVX2 kernel.
struct Avx2KernelsOnly {
  Avx2KernelsOnly() {
    set_q4_bf16dot_enabled(false), set_affine_vnni_enabled(false), set_q4_int8_wide_enabled(false);
    set_q4_int8_gemm_enabled(false);
  }
  ~Avx2KernelsOnly() {
    set_q4_bf16dot_enabled(true), set_affine_vnni_enabled(true), set_q4_int8_wide_enabled(true);
    set_q4_int8_gemm_enabled(true);
  }
};

// Today's kernels without the AVX512-VNNI one (INKLING_NO_VNNI=1): AVX512-BF16 for 4 bits.
struct NoVnniKernel {
  NoVnniKernel() { set_affine_vnni_enabled(false); }
  ~NoVnniKernel() { set_affine_vnni_enabled(true); }
};

// Normal floats from a running generator (tests that draw several inputs from one seed).
inline std::vector<float> randn_from(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> v(n);
  for (auto& e : v) e = nd(rng);
  return v;
}

// The int8 gemm (ops/quant_q4_int8_gemm.h) against its scalar twin, bitwise, over rows [r0, r1)
// (rows outside them must stay untouched: the output starts filled with -7).
inline void expect_gemm_twin(const MatView& w, int64_t n_tok, int64_t r0, int64_t r1, int parts,
                             const std::vector<float>& x, int64_t ldx, const std::string& what) {
  const int64_t ldy = w.rows + 2;
  std::vector<float> got(size_t(n_tok * ldy), -7.f), want(got);
  q4_int8_gemm_parts_rows(x.data(), n_tok, ldx, w, r0, r1, got.data(), ldy, parts);
  q4_int8_gemm_rows_ref(x.data(), n_tok, ldx, w, r0, r1, want.data(), ldy, parts);
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(f32_to_bits(got[i]), f32_to_bits(want[i])) << what << " at " << i;
}

}  // namespace inkling::testing
