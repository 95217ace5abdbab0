// RMSNorm kernel. Matches torch's fp32 path: mean of squares, rsqrt(var + eps), x * r, then * w.
#include "ops/norm.h"

#include <algorithm>
#include <cmath>

namespace inkling {

void rms_norm_rows(const float* x, const float* w, int64_t n_rows, int64_t n, double eps,
                   float* out) {
  for (int64_t i = 0; i < n_rows; ++i) {
    const float* xi = x + i * n;
    float* oi = out + i * n;
    float acc[8] = {};
    int64_t c = 0;
    for (; c + 8 <= n; c += 8)
      for (int l = 0; l < 8; ++l) acc[l] += xi[c + l] * xi[c + l];
    double ss = 0;
    for (int l = 0; l < 8; ++l) ss += acc[l];
    for (; c < n; ++c) ss += double(xi[c]) * xi[c];
    const float r = float(1.0 / std::sqrt(ss / double(n) + eps));
    if (w)
      for (int64_t j = 0; j < n; ++j) oi[j] = (xi[j] * r) * w[j];
    else
      for (int64_t j = 0; j < n; ++j) oi[j] = xi[j] * r;
  }
}

void l2_clip_rows(const float* x, const float* scale, int64_t scale_rows, int64_t n_rows, int64_t n,
                  float threshold, float* out) {
  for (int64_t i = 0; i < n_rows; ++i) {
    const float* xi = x + i * n;
    const float* si = scale ? scale + (i % scale_rows) * n : nullptr;
    float* oi = out + i * n;
    double ss = 0;
    for (int64_t j = 0; j < n; ++j) {
      const float v = si ? xi[j] * si[j] : xi[j];
      oi[j] = v;
      ss += double(v) * v;
    }
    const float f = std::min(threshold / (float(std::sqrt(ss)) + 1e-6f), 1.f);
    for (int64_t j = 0; j < n; ++j) oi[j] *= f;
  }
}

}  // namespace inkling
