// The scalar twin of the AVX2 int8 4-bit kernel (quant_q4_int8.h): the same split, integer lane
// sums, and the same f32 steps in the same order, so its results are the kernel's bits on every
// input. Portable C++: compiled and tested on every host.
#include <cmath>
#include <vector>

#include "base/dtype.h"
#include "ops/quant_q4_int8.h"

namespace inkling {

namespace {

// Twice the E2M1 value of a code, as the kernel's table holds it.
int e2m1_twice(int code) {
  static constexpr int kMag[8] = {0, 1, 2, 3, 4, 6, 8, 12};
  return code & 8 ? -kMag[code & 7] : kMag[code & 7];
}

}  // namespace

void q4_int8_rows_ref(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                      int64_t r1, float* y, int64_t ldy, int parts) {
  const int64_t cols = w.cols, nb = cols / 32;
  const bool nv = w.format == WeightFormat::kNvfp4;
  const int64_t group = nv ? 0 : w.group, ng = nv ? 0 : cols / group;
  std::vector<int8_t> a(static_cast<size_t>(cols)), c(static_cast<size_t>(cols));
  std::vector<float> d(static_cast<size_t>(nb)), gsum(static_cast<size_t>(ng)),
      rs(static_cast<size_t>(nv ? cols / 16 : ng)), rb(static_cast<size_t>(ng));
  for (int64_t t = 0; t < n_tok; ++t) {
    q4_int8_split(x + t * ldx, cols, parts, group, a.data(), c.data(), d.data(), gsum.data());
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* codes = w.row(r);
      const size_t base = size_t(r * w.scale_stride);
      if (nv) {
        for (size_t k = 0; k < rs.size(); ++k)
          rs[k] = (e4m3_to_f32(w.scales[base + k]) * w.scale2) * 0.5f;
      } else {
        for (size_t g = 0; g < rs.size(); ++g) {
          rs[g] = load_as_f32(w.scale_dtype, w.scales, base + g);
          rb[g] = load_as_f32(w.scale_dtype, w.biases, base + g);
        }
      }
      // Integer sum of lane l of span sp: A's and B's bytes 4l..4l+3.
      auto lane = [&](int64_t sp, int l) {
        int32_t sum = 0;
        for (int half = 0; half < 2; ++half)
          for (int m = 0; m < 4; ++m) {
            const int pos = 32 * half + 4 * l + m, col = q4_int8_col(pos);
            const uint8_t byte = codes[sp * 32 + col / 2];
            const int code = col % 2 ? byte >> 4 : byte & 0xf;
            const int q = nv ? e2m1_twice(code) : code;
            const size_t at = size_t(sp * 64 + pos);
            const int32_t xv = parts == 2 ? 256 * a[at] + c[at] : a[at];
            sum += q * xv;
          }
        return float(sum);
      };
      float acc[2][8] = {};
      for (int64_t sp = 0; sp < cols / 64; ++sp)
        for (int l = 0; l < 8; ++l) {
          const int64_t col = sp * 64 + (l < 4 ? 0 : 32);  // lane l's x block starts here
          const float wf =
              nv ? rs[size_t(4 * sp + l / 2)] : rs[size_t((col + 8 * (l % 4)) / group)];
          const float f = wf * d[size_t(col / 32)];
          acc[sp % 2][l] = std::fma(lane(sp, l), f, acc[sp % 2][l]);
        }
      float sums[8];
      for (int l = 0; l < 8; ++l) sums[l] = acc[0][l] + acc[1][l];
      float v = q4_int8_sum8(sums);
      if (!nv) {
        // Eight lanes over whole octets of groups, reduced as acc; the rest one after another.
        float bl[8] = {};
        int64_t g = 0;
        for (; g + 8 <= ng; g += 8)
          for (int l = 0; l < 8; ++l)
            bl[l] = std::fma(rb[size_t(g + l)], gsum[size_t(g + l)], bl[l]);
        float bsum = q4_int8_sum8(bl);
        for (; g < ng; ++g) bsum = std::fma(rb[size_t(g)], gsum[size_t(g)], bsum);
        v += bsum;
      }
      y[t * ldy + r] = v;
    }
  }
}

}  // namespace inkling
