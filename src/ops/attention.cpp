// Attention kernel: one (query, head) pair per work item; per item the bias row L[delta] is
// formed only for the distances the window can reach, scores in f32, softmax, weighted sum of
// values. Scratch is thread-local and grows with the context (amortised, never per token).
#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace inkling {

float log_position_tau(int64_t pos, double log_floor, double log_alpha) {
  if (log_floor <= 0) return 1.f;
  const float ratio = float(pos + 1) / float(log_floor);
  return 1.f + float(log_alpha) * std::log(std::max(ratio, 1.f));
}

void attention(const float* q, const float* r, int64_t T, int64_t pos0, const KvView& kv,
               const float* P, const AttentionShape& s, float* out, ThreadPool* pool) {
  const int64_t nh = s.n_heads, hd = s.head_dim, d = s.d_rel, R = s.rel_extent;
  const int64_t group = s.n_heads / s.n_kv_heads;
  const float scale = 1.f / float(hd);
  auto run = [&](size_t b, size_t e) {
    thread_local std::vector<float> scores, qs;
    // Scratch grows geometrically and never shrinks, so decode steps stop allocating.
    if (qs.size() < size_t(hd)) qs.resize(size_t(hd));
    for (size_t item = b; item < e; ++item) {
      const int64_t i = int64_t(item) / nh, h = int64_t(item) % nh;
      const int64_t t = pos0 + i;
      const int64_t lo = s.window > 0 ? std::max<int64_t>(0, t - s.window + 1) : 0;
      const int64_t n = t - lo + 1;
      if (scores.size() < size_t(n)) scores.resize(std::max(size_t(n), 2 * scores.size()));
      const float tau = log_position_tau(t, s.log_floor, s.log_alpha);
      const float* qh = q + i * nh * hd + h * hd;
      for (int64_t c = 0; c < hd; ++c) qs[size_t(c)] = qh[c] * tau;
      const float* rh = r + i * nh * d + h * d;
      const int64_t koff = (h / group) * hd;
      float mx = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t src = lo + j, dist = t - src;
        const float* kr = kv.key(src) + koff;
        float acc[8] = {};
        int64_t c = 0;
        for (; c + 8 <= hd; c += 8)
          for (int l = 0; l < 8; ++l) acc[l] += qs[size_t(c + l)] * kr[c + l];
        float dot = 0;
        for (int l = 0; l < 8; ++l) dot += acc[l];
        for (; c < hd; ++c) dot += qs[size_t(c)] * kr[c];
        float bias = 0.f;
        if (dist < R) {
          for (int64_t m = 0; m < d; ++m) bias += rh[m] * P[m * R + dist];
        }
        const float z = dot * scale + bias * tau;
        scores[size_t(j)] = z;
        mx = std::max(mx, z);
      }
      float sum = 0.f;
      for (int64_t j = 0; j < n; ++j) {
        scores[size_t(j)] = std::exp(scores[size_t(j)] - mx);
        sum += scores[size_t(j)];
      }
      const float inv = 1.f / sum;
      float* oh = out + i * nh * hd + h * hd;
      for (int64_t c = 0; c < hd; ++c) oh[c] = 0.f;
      for (int64_t j = 0; j < n; ++j) {
        const float p = scores[size_t(j)] * inv;
        const float* vr = kv.value(lo + j) + koff;
        for (int64_t c = 0; c < hd; ++c) oh[c] += p * vr[c];
      }
    }
  };
  const size_t items = size_t(T * nh);
  if (pool)
    pool->parallel_for(items, run);
  else
    run(0, items);
}

}  // namespace inkling
