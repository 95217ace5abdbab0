// The scalar twin of the int8 prefill gemm (quant_q4_int8_gemm.h): the decode kernel's split of x,
// exact integer sums per factor group, and the same f32 steps in the same order, so its results
// are the kernel's bits on every input. Portable C++: compiled and tested on every host.
#include <cmath>
#include <vector>

#include "base/dtype.h"
#include "ops/quant_q4_int8.h"
#include "ops/quant_q4_int8_gemm.h"

namespace inkling {

void q4_int8_gemm_rows_ref(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                           int64_t r1, float* y, int64_t ldy, int parts) {
  static constexpr int kMag[8] = {0, 1, 2, 3, 4, 6, 8, 12};  // |e2m1| x 2
  const int64_t cols = w.cols;
  const bool nv = w.format == WeightFormat::kNvfp4;
  const int64_t group = nv ? 0 : w.group, ng = nv ? 0 : cols / group;
  const int64_t span = nv ? 16 : 32;  // columns per factor group of the sum
  std::vector<int8_t> a(static_cast<size_t>(cols)), c(static_cast<size_t>(cols));
  std::vector<float> d(static_cast<size_t>(cols / 32)), gsum(static_cast<size_t>(ng));
  std::vector<int> pos(static_cast<size_t>(cols));  // column -> its position in the parts
  for (int64_t p = 0; p < cols; ++p) pos[size_t((p / 64) * 64 + q4_int8_col(int(p % 64)))] = int(p);
  for (int64_t t = 0; t < n_tok; ++t) {
    q4_int8_split(x + t * ldx, cols, parts, group, a.data(), c.data(), d.data(), gsum.data());
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* codes = w.row(r);
      const size_t base = size_t(r * w.scale_stride);
      float acc = 0.f;
      for (int64_t k = 0; k < cols / span; ++k) {
        int32_t sum = 0;
        for (int64_t col = k * span; col < (k + 1) * span; ++col) {
          const uint8_t byte = codes[col / 2];
          const int code = col % 2 ? byte >> 4 : byte & 0xf;
          const int q = nv ? (code & 8 ? -kMag[code & 7] : kMag[code & 7]) : code;
          const size_t at = size_t(pos[size_t(col)]);
          sum += q * (parts == 2 ? 256 * a[at] + c[at] : a[at]);
        }
        const float wf = nv ? (e4m3_to_f32(w.scales[base + size_t(k)]) * w.scale2) * 0.5f
                            : load_as_f32(w.scale_dtype, w.scales, base + size_t(k * span / group));
        acc = std::fma(float(sum), wf * d[size_t(k * span / 32)], acc);
      }
      float b = 0.f;
      for (int64_t g = 0; g < ng; ++g)
        b = std::fma(load_as_f32(w.scale_dtype, w.biases, base + size_t(g)), gsum[size_t(g)], b);
      y[t * ldy + r] = acc + b;
    }
  }
}

}  // namespace inkling
