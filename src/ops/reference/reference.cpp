// Scalar reference implementations (double accumulation where it makes them a better yardstick).
#include "ops/reference/reference.h"

#include <cmath>
#include <vector>

namespace inkling::ref {

void matmul(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, float* y, int64_t ldy) {
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t r = 0; r < w.rows; ++r) {
      double acc = 0;
      for (int64_t c = 0; c < w.cols; ++c)
        acc += double(x[t * ldx + c]) * load_as_f32(w.dtype, w.row(r), size_t(c));
      y[t * ldy + r] = float(acc);
    }
}

void rms_norm(const float* x, const float* w, int64_t n, double eps, float* out) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * x[i];
  const float r = float(1.0 / std::sqrt(ss / double(n) + eps));
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] * r) * w[i];
}

void short_conv(const float* u, int64_t T, int64_t C, const float* w, int64_t K, float* state,
                float* out) {
  std::vector<float> hist(size_t((K - 1 + T) * C));
  for (int64_t i = 0; i < (K - 1) * C; ++i) hist[size_t(i)] = state[i];
  for (int64_t i = 0; i < T * C; ++i) hist[size_t((K - 1) * C + i)] = u[i];
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < C; ++c) {
      double acc = 0;
      for (int64_t j = 0; j < K; ++j) acc += double(w[c * K + j]) * hist[size_t((t + j) * C + c)];
      out[t * C + c] = float(double(u[t * C + c]) + acc);
    }
  for (int64_t i = 0; i < (K - 1) * C; ++i) state[i] = hist[size_t(T * C + i)];
}

}  // namespace inkling::ref
