// Scalar reference implementations (double accumulation where it makes them a better yardstick).
#include "ops/reference/reference.h"

#include <algorithm>
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

void attention(const float* q, const float* r, int64_t T, int64_t pos0, const KvView& kv,
               const float* P, const AttentionShape& s, float* out) {
  const int64_t nh = s.n_heads, hd = s.head_dim, d = s.d_rel, R = s.rel_extent;
  const int64_t group = s.n_heads / s.n_kv_heads;
  for (int64_t i = 0; i < T; ++i)
    for (int64_t h = 0; h < nh; ++h) {
      const int64_t t = pos0 + i;
      const int64_t lo = s.window > 0 ? std::max<int64_t>(0, t - s.window + 1) : 0;
      const float tau = log_position_tau(t, s.log_floor, s.log_alpha);
      const float* qh = q + i * nh * hd + h * hd;
      const float* rh = r + i * nh * d + h * d;
      const int64_t koff = (h / group) * hd;
      std::vector<double> z(size_t(t - lo + 1));
      double mx = -INFINITY;
      for (int64_t src = lo; src <= t; ++src) {
        const int64_t dist = t - src;
        double dot = 0, bias = 0;
        for (int64_t c = 0; c < hd; ++c) dot += double(qh[c] * tau) * kv.key_at(src, koff + c);
        if (dist < R)
          for (int64_t m = 0; m < d; ++m) bias += double(rh[m]) * P[m * R + dist];
        z[size_t(src - lo)] = dot * double(s.score_scale()) + bias * tau;
        mx = std::max(mx, z[size_t(src - lo)]);
      }
      const double sink = s.sinks ? double(s.sinks[i * nh + h]) : -INFINITY;
      mx = std::max(mx, sink);
      double sum = std::exp(sink - mx);
      for (double& v : z) sum += (v = std::exp(v - mx));
      float* oh = out + i * nh * hd + h * hd;
      for (int64_t c = 0; c < hd; ++c) {
        double acc = 0;
        for (int64_t src = lo; src <= t; ++src)
          acc += z[size_t(src - lo)] / sum * kv.value_at(src, koff + c);
        oh[c] = float(acc);
      }
    }
}

}  // namespace inkling::ref
