// Test helpers for the kernels of bf16 weights: random bf16 matrices (strided rows), x rows with
// denormal, huge and NaN entries, and a kernel-against-twin bitwise check.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "ops/weight_view.h"

namespace inkling::testing {

struct Bf16Mat {
  std::vector<uint16_t> bits;
  MatView view;
};

// A dense bf16 view of rows x cols over bits, rows `stride` elements apart.
inline MatView bf16_view(const std::vector<uint16_t>& bits, int64_t rows, int64_t cols,
                         int64_t stride) {
  MatView v;
  v.dtype = DType::BF16;
  v.data = reinterpret_cast<const uint8_t*>(bits.data());
  v.rows = rows;
  v.cols = cols;
  v.row_stride = stride;
  return v;
}

inline Bf16Mat make_bf16(int64_t rows, int64_t cols, int64_t stride, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.f, 1.f);
  Bf16Mat m;
  m.bits.resize(size_t(rows * stride) + 1);  // one element of slack: an odd start below
  for (auto& b : m.bits) b = f32_to_bf16(nd(rng));
  m.view = bf16_view(m.bits, rows, cols, stride);
  return m;
}

inline std::vector<float> make_dense_x(int64_t n_tok, int64_t ldx, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(size_t(n_tok * ldx));
  for (auto& v : x) v = nd(rng);
  for (int64_t t = 0; t < n_tok; ++t) {
    float* r = x.data() + t * ldx;
    switch (t % 5) {
      case 1:  // denormal and tiny inputs (VDPBF16PS reads denormal bf16 as zero)
        for (int64_t c = 0; c < ldx; c += 3) r[c] *= 1e-39f;
        break;
      case 2:  // huge
        for (int64_t c = 0; c < ldx; c += 7) r[c] *= 1e30f;
        break;
      case 3:
        r[ldx / 2] = std::numeric_limits<float>::quiet_NaN();
        break;
      default:
        break;
    }
  }
  return x;
}

// A 1..16-token kernel against its scalar twin, bit for bit, over rows [r0, r1) (the rows outside
// must stay untouched). NaN is NaN: its sign and payload come from the order of the inf - inf the
// kernel and the twin meet, which need not be the same.
using RowsFn = void (*)(const float*, int64_t, int64_t, const MatView&, int64_t, int64_t, float*,
                        int64_t);
inline void expect_rows_twin(RowsFn kernel, RowsFn twin, const MatView& w, int64_t n_tok,
                             int64_t r0, int64_t r1, std::mt19937& rng, const std::string& what) {
  const int64_t ldx = w.cols + 3, ldy = w.rows + 2;
  const auto x = make_dense_x(n_tok, ldx, rng);
  std::vector<float> got(size_t(n_tok * ldy), -7.f), want(got);
  kernel(x.data(), n_tok, ldx, w, r0, r1, got.data(), ldy);
  twin(x.data(), n_tok, ldx, w, r0, r1, want.data(), ldy);
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t r = 0; r < ldy; ++r) {
      const size_t i = size_t(t * ldy + r);
      if (std::isnan(got[i]) && std::isnan(want[i])) continue;
      ASSERT_EQ(std::memcmp(&got[i], &want[i], 4), 0)
          << what << " tokens " << n_tok << " tok " << t << " row " << r << ": " << got[i] << " vs "
          << want[i];
    }
}

}  // namespace inkling::testing
