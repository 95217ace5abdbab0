// Inkling attention for a chunk of T queries at absolute positions pos0..pos0+T-1 against cached
// keys/values (which already include the chunk's own keys). No RoPE: a banded, data-dependent
// relative bias b(t,s) = sum_m r_t[m] P[m, t-s] for 0 <= t-s < R (0 beyond R), a sliding window
// (t-s < W keys including self) on sliding layers, and a log-position temperature tau on global
// layers: z = (tau*q).k / head_dim + tau*b; softmax in f32 (with an optional sink logit);
// o = sum p v.
#pragma once

#include <cstdint>

#include "base/dtype.h"
#include "base/thread_pool.h"

namespace inkling {

struct AttentionShape {
  int n_heads = 0, n_kv_heads = 0, head_dim = 0, d_rel = 0;
  int rel_extent = 0;    // R
  int window = 0;        // W on sliding layers, 0 on global layers
  double log_floor = 0;  // tau's n_floor; <= 0 disables tau
  double log_alpha = 0;  // tau's alpha
  // Score scale: 0 = 1/head_dim (Inkling, whose q and k are RMS-normalised); Inkling 2 gives
  // head_dim^-0.5.
  float scale = 0;
  // Optional [T, n_heads] per-query sink logits (Inkling 2): one more logit in every softmax with
  // a zero value, so it only absorbs probability mass. Null: no sink.
  const float* sinks = nullptr;
  float score_scale() const { return scale > 0 ? scale : 1.f / float(head_dim); }
};

// Element type of cached keys and values. F32 is exact; BF16 halves the cache (and the bytes a
// decode step reads from it) at the cost of rounding each cached key and value once.
enum class KvType : uint8_t { kF32, kBF16 };

// Cached keys/values: position s lives at row (ring ? s % capacity : s); a row holds
// n_kv_heads * head_dim elements of `type`, k and v rows `stride` elements apart.
struct KvView {
  const void* k = nullptr;
  const void* v = nullptr;
  int64_t capacity = 0;
  int64_t stride = 0;
  bool ring = false;
  KvType type = KvType::kF32;
  int64_t slot(int64_t s) const { return (ring ? s % capacity : s) * stride; }
  // Row s as elements of T: float for kF32, uint16_t (bf16 bits) for kBF16.
  template <typename T>
  const T* key(int64_t s) const {
    return static_cast<const T*>(k) + slot(s);
  }
  template <typename T>
  const T* value(int64_t s) const {
    return static_cast<const T*>(v) + slot(s);
  }
  // Element c of row s as f32, whatever the type (reference code and tests).
  float key_at(int64_t s, int64_t c) const { return at(k, s, c); }
  float value_at(int64_t s, int64_t c) const { return at(v, s, c); }

 private:
  float at(const void* base, int64_t s, int64_t c) const {
    if (type == KvType::kF32) return static_cast<const float*>(base)[slot(s) + c];
    const uint16_t b = static_cast<const uint16_t*>(base)[slot(s) + c];
    return bf16_to_f32(b);
  }
};

// tau of a 0-based query position (1 when disabled or below the floor).
float log_position_tau(int64_t pos, double log_floor, double log_alpha);

// q: [T, n_heads*head_dim] normalised queries; r: [T, n_heads*d_rel]; P: [d_rel, R];
// out: [T, n_heads*head_dim]. Parallel on `pool` over (kv head, query block) items, or for
// T <= 16 (decode, verification) over (kv head, key range) items whose partial softmaxes are
// merged; on that path a query's result is bitwise independent of T (attention.cpp).
void attention(const float* q, const float* r, int64_t T, int64_t pos0, const KvView& kv,
               const float* P, const AttentionShape& s, float* out, ThreadPool* pool);

}  // namespace inkling
