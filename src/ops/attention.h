// Inkling attention for a chunk of T queries at absolute positions pos0..pos0+T-1 against cached
// keys/values (which already include the chunk's own keys). No RoPE: a banded, data-dependent
// relative bias b(t,s) = sum_m r_t[m] P[m, t-s] for 0 <= t-s < R (0 beyond R), a sliding window
// (t-s < W keys including self) on sliding layers, and a log-position temperature tau on global
// layers: z = (tau*q).k / head_dim + tau*b; softmax in f32; o = sum p v.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"

namespace inkling {

struct AttentionShape {
  int n_heads = 0, n_kv_heads = 0, head_dim = 0, d_rel = 0;
  int rel_extent = 0;    // R
  int window = 0;        // W on sliding layers, 0 on global layers
  double log_floor = 0;  // tau's n_floor; <= 0 disables tau
  double log_alpha = 0;  // tau's alpha
};

// Cached keys/values: position s lives at row (ring ? s % capacity : s); a row holds
// n_kv_heads * head_dim floats, k and v rows `stride` floats apart.
struct KvView {
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t capacity = 0;
  int64_t stride = 0;
  bool ring = false;
  const float* key(int64_t s) const { return k + (ring ? s % capacity : s) * stride; }
  const float* value(int64_t s) const { return v + (ring ? s % capacity : s) * stride; }
};

// tau of a 0-based query position (1 when disabled or below the floor).
float log_position_tau(int64_t pos, double log_floor, double log_alpha);

// q: [T, n_heads*head_dim] normalised queries; r: [T, n_heads*d_rel]; P: [d_rel, R];
// out: [T, n_heads*head_dim]. Parallel on `pool` over (kv head, query block) items, or for
// T <= 4 (decode) over (kv head, key range) items whose partial softmaxes are merged.
void attention(const float* q, const float* r, int64_t T, int64_t pos0, const KvView& kv,
               const float* P, const AttentionShape& s, float* out, ThreadPool* pool);

}  // namespace inkling
