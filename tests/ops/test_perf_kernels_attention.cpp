// The blocked (flash-style, GQA-grouped) attention kernel against ref::attention on random data:
// prefill chunks that straddle key blocks, decode far beyond R and W, rings, tau > 1, odd dims;
// chunks of <= 4 queries exercise the decode path (split-K over key ranges, merged partials);
// every case with an f32 and a bf16 cache; Inkling 2 cases add sink logits and its score scale.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "../common/random.h"
#include "base/dtype.h"
#include "ops/attention.h"
#include "ops/reference/reference.h"

namespace inkling {
namespace {

using testing::randn;

struct Case {
  int nh, nkv, hd, d, R, W;  // W = 0: global
  int64_t T, pos0;
  double floor;  // tau's n_floor (0 = off)
  bool ring;
  bool sinks = false;  // Inkling 2: per-query sink logits and a head_dim^-0.5 score scale
};

class BlockedAttention : public ::testing::TestWithParam<Case> {};

TEST_P(BlockedAttention, MatchesReference) {
  const Case c = GetParam();
  AttentionShape s;
  s.n_heads = c.nh, s.n_kv_heads = c.nkv, s.head_dim = c.hd, s.d_rel = c.d, s.rel_extent = c.R;
  s.window = c.W, s.log_floor = c.floor, s.log_alpha = 0.3;
  const int64_t S = c.pos0 + c.T, row = int64_t(c.nkv) * c.hd + 5;  // padded cache rows
  // q as after q_norm (O(1) entries, hd-scaled dot products of a few units).
  const auto q = randn(size_t(c.T * c.nh * c.hd), 1, 3.f), r = randn(size_t(c.T * c.nh * c.d), 2);
  const auto K = randn(size_t(S * row), 3, 3.f), V = randn(size_t(S * row), 4);
  const auto P = randn(size_t(c.d * c.R), 5, 0.7f);
  const auto sinks = randn(size_t(c.T * c.nh), 6, 2.f);
  if (c.sinks) s.sinks = sinks.data(), s.scale = float(1.0 / std::sqrt(double(c.hd)));
  KvView kv{K.data(), V.data(), 0, row, false};
  std::vector<float> rk, rv;
  if (c.ring) {  // ring of W-1+T rows, everything older is NaN (must never be read)
    const int64_t cap = c.W - 1 + c.T;
    rk.assign(size_t(cap * row), NAN), rv.assign(size_t(cap * row), NAN);
    for (int64_t p = std::max<int64_t>(0, c.pos0 - c.W + 1); p < S; ++p)
      for (int64_t j = 0; j < row; ++j) {
        rk[size_t((p % cap) * row + j)] = K[size_t(p * row + j)];
        rv[size_t((p % cap) * row + j)] = V[size_t(p * row + j)];
      }
    kv = KvView{rk.data(), rv.data(), cap, row, true};
  }
  // The same cache as bf16 bits (a bf16 KV cache): the kernel widens them as it reads, the
  // reference reads them through key_at / value_at; both must agree as closely as for f32.
  const size_t n = size_t((kv.ring ? kv.capacity : S) * row);
  const float* kf = static_cast<const float*>(kv.k);
  const float* vf = static_cast<const float*>(kv.v);
  std::vector<uint16_t> k16(n), v16(n);
  for (size_t i = 0; i < n; ++i) k16[i] = f32_to_bf16(kf[i]), v16[i] = f32_to_bf16(vf[i]);
  KvView kv16 = kv;
  kv16.k = k16.data(), kv16.v = v16.data(), kv16.type = KvType::kBF16;

  ThreadPool pool2(2), pool3(3);
  for (const KvView& view : {kv, kv16}) {
    const char* type = view.type == KvType::kBF16 ? "bf16" : "f32";
    std::vector<float> want(q.size(), NAN);
    ref::attention(q.data(), r.data(), c.T, c.pos0, view, P.data(), s, want.data());
    // No pool, 2 and 3 threads: different splits over kv heads and key ranges.
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2, &pool3}) {
      std::vector<float> got(q.size(), NAN);
      attention(q.data(), r.data(), c.T, c.pos0, view, P.data(), s, got.data(), pool);
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 2e-5f)
            << "at " << i << ", threads " << (pool ? pool->size() : 1) << ", KV " << type;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, BlockedAttention,
    ::testing::Values(
        Case{8, 2, 128, 16, 96, 96, 40, 0, 0, false},    // sliding prefill from 0
        Case{8, 2, 128, 16, 96, 96, 37, 150, 0, true},   // sliding chunk through a ring
        Case{8, 2, 128, 16, 96, 96, 1, 500, 0, true},    // sliding decode far beyond W
        Case{4, 1, 64, 16, 200, 0, 70, 10, 0, false},    // global, chunk straddling blocks
        Case{4, 1, 64, 16, 200, 0, 1, 700, 0, false},    // global decode, most keys beyond R
        Case{8, 2, 128, 16, 100, 0, 3, 400, 50, false},  // global with tau > 1
        Case{6, 3, 12, 4, 12, 0, 33, 5, 4, false},       // odd dims, tau from the start
        Case{8, 2, 16, 4, 8, 8, 19, 3, 0, false},        // tiny window
        Case{8, 4, 8, 3, 4, 4, 5, 4, 0, true},           // fixture-sized ring
        Case{4, 4, 32, 16, 1024, 0, 1, 2000, 0, false},  // no GQA sharing (G = 1)
        // decode path (T <= 4): split-K from 2048 keys, rings, tau, small T
        Case{8, 2, 128, 16, 1024, 0, 1, 5000, 0, false},  // global decode, split-K (2-3 key ranges)
        Case{8, 2, 128, 16, 1024, 0, 1, 5000, 900, false},  // ... with tau > 1
        Case{8, 2, 128, 16, 512, 3000, 1, 5000, 0, true},   // sliding decode, split ring
        Case{8, 2, 128, 16, 96, 96, 4, 500, 0, true},       // 4 queries through a ring
        Case{6, 3, 12, 4, 12, 0, 3, 2100, 4, false},        // odd dims, 3 queries, tau, split
        Case{8, 2, 16, 4, 8, 8, 2, 3, 0, false},            // 2 queries, tiny window
        Case{4, 1, 64, 16, 200, 0, 1, 0, 0, false},         // first token
        // Inkling 2: sink logits and head_dim^-0.5, prefill and decode, rings and split-K
        Case{8, 2, 16, 4, 8, 8, 19, 3, 0, false, true},
        Case{6, 3, 12, 4, 12, 0, 33, 5, 4, false, true},
        Case{8, 2, 128, 16, 96, 96, 37, 150, 0, true, true},
        Case{8, 2, 128, 16, 1024, 0, 1, 5000, 900, false, true},
        Case{4, 1, 64, 16, 200, 0, 1, 0, 0, false, true}));

}  // namespace
}  // namespace inkling
