// Row-count invariance (ops/formats.h, attention.cpp): a token's result is bitwise the same
// computed alone or with up to 15 other tokens, for every weight format through the kernels the
// registry binds (with and without the AVX512-BF16 kernels, with and without a thread pool), for
// attention on the decode path (global and banded, f32 and bf16 caches, key splits) and for the
// short conv. What greedy speculative decoding and batched decoding rely on.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../common/random.h"
#include "base/dtype.h"
#include "base/thread_pool.h"
#include "ops/attention.h"
#include "ops/conv.h"
#include "ops/formats.h"
#include "ops/matmul.h"
#include "quant_test_util.h"

namespace inkling {
namespace {

using testing::Dense;
using testing::make_dense;
using testing::QMat;
using testing::randn;

constexpr int64_t kMaxT = kFewMaxTokens;

// matmul of tokens [0, T) vs each token alone, bitwise, for T = 1..kMaxT; with no pool and with
// 2 threads (a different split of the rows).
void expect_invariant(const MatView& view, const std::string& what,
                      KernelMode mode = KernelMode::kExact) {
  MatView w = view;
  ASSERT_TRUE(bind_kernels(w, mode)) << what;
  const int64_t ldx = w.cols + 5, ldy = w.rows + 3;
  const auto x = randn(size_t(kMaxT * ldx), 17u + uint32_t(w.cols));
  std::vector<float> alone(size_t(kMaxT * ldy));
  for (int64_t t = 0; t < kMaxT; ++t)
    matmul(x.data() + t * ldx, 1, ldx, w, alone.data() + t * ldy, ldy, nullptr);
  ThreadPool pool(2);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool})
    for (int64_t T = 1; T <= kMaxT; ++T) {
      std::vector<float> y(size_t(T * ldy), NAN);
      matmul(x.data(), T, ldx, w, y.data(), ldy, p);
      for (int64_t t = 0; t < T; ++t)
        ASSERT_EQ(std::memcmp(y.data() + t * ldy, alone.data() + t * ldy, size_t(w.rows) * 4), 0)
            << what << ": token " << t << " of " << T << (p ? ", 2 threads" : "");
    }
}

void every_format(std::mt19937& rng, const char* mode, KernelMode n = KernelMode::kExact) {
  for (DType dt : {DType::F32, DType::BF16, DType::F16})
    for (int64_t cols : {int64_t(64), int64_t(300), int64_t(2532)}) {  // 2532: column blocks
      const Dense d = make_dense(dt, cols > 1000 ? 9 : 37, cols, uint32_t(cols));
      expect_invariant(
          d.view, std::string(mode) + " " + dtype_name(dt) + " cols " + std::to_string(cols), n);
    }
  for (int bits : {1, 2, 3, 4, 5, 6, 8})
    for (int group : {32, 64}) {
      QMat q = testing::make_affine(37, 512, bits, group, DType::BF16, 1, rng);
      expect_invariant(
          q.view,
          std::string(mode) + " affine q" + std::to_string(bits) + "/g" + std::to_string(group), n);
    }
  QMat q = testing::make_nvfp4(37, 512, 1, rng);
  expect_invariant(q.view, std::string(mode) + " nvfp4", n);
}

// Fast numerics (x rounded to bf16 / int8 for the product) keep the same guarantee.
TEST(RowInvariance, FastNumericsToo) {
  std::mt19937 rng(9);
  every_format(rng, "fast", KernelMode::kFast);
  every_format(rng, "fast (fine)", KernelMode::kFastFine);
  set_q4_bf16dot_enabled(false);
  every_format(rng, "fast without avx512-bf16", KernelMode::kFast);
  set_q4_bf16dot_enabled(true);
  testing::Avx2KernelsOnly avx2;  // 4-bit on the int8 AVX2 kernel (quant_q4_int8.h)
  every_format(rng, "fast, avx2 kernels", KernelMode::kFast);
  every_format(rng, "fast (fine), avx2 kernels", KernelMode::kFastFine);
}

TEST(RowInvariance, EveryFormatGivesEachTokenItsOwnBits) {
  std::mt19937 rng(5);
  every_format(rng, affine_vnni_enabled()  ? "avx512-vnni + bf16"
                    : q4_bf16dot_enabled() ? "avx512-bf16"
                                           : "portable");
}

TEST(RowInvariance, VnniKernelForEveryWidth) {  // INKLING_NO_BF16DOT=1: VNNI takes 1..8 bits
  set_q4_bf16dot_enabled(false);
  std::mt19937 rng(8);
  every_format(rng, affine_vnni_enabled() ? "avx512-vnni" : "portable");
  set_q4_bf16dot_enabled(true);
}

TEST(RowInvariance, WithoutTheVnniKernel) {  // INKLING_NO_VNNI=1: AVX512-BF16 for 4 bits
  testing::NoVnniKernel off;
  std::mt19937 rng(7);
  every_format(rng, q4_bf16dot_enabled() ? "avx512-bf16" : "portable");
}

TEST(RowInvariance, PortableKernelsToo) {
  testing::PortableKernelsOnly portable;
  std::mt19937 rng(6);
  every_format(rng, "portable");
}

// Attention: queries pos0..pos0+T-1 as one chunk vs each alone (the cache holds every key up to
// the last query; a lone query at p reads keys <= p). Contexts across key splits (512 keys) and
// windows, rings, f32 and bf16 caches, 1-3 threads.
struct InvAttnCase {
  int W;  // 0: global
  int64_t pos0;
  bool ring;
};

TEST(RowInvariance, AttentionDecodePath) {
  AttentionShape s;
  s.n_heads = 4, s.n_kv_heads = 2, s.head_dim = 32, s.d_rel = 4, s.rel_extent = 24;
  const int64_t row = int64_t(s.n_kv_heads) * s.head_dim, T = kMaxT;
  for (const InvAttnCase c :
       {InvAttnCase{0, 3, false}, InvAttnCase{0, 500, false}, InvAttnCase{0, 1100, false},
        InvAttnCase{48, 70, false}, InvAttnCase{48, 1030, true}, InvAttnCase{100, 515, true}}) {
    s.window = c.W;
    s.log_floor = c.W ? 0 : 64, s.log_alpha = 0.3;
    const int64_t S = c.pos0 + T;
    const auto q = randn(size_t(T * s.n_heads * s.head_dim), 1, 3.f);
    const auto r = randn(size_t(T * s.n_heads * s.d_rel), 2);
    const auto K = randn(size_t(S * row), 3, 3.f), V = randn(size_t(S * row), 4);
    const auto P = randn(size_t(s.d_rel * s.rel_extent), 5, 0.7f);
    std::vector<float> k = K, v = V;
    KvView kv{k.data(), v.data(), 0, row, false};
    if (c.ring) {  // ring of W - 1 + T rows holding the newest positions
      const int64_t cap = c.W - 1 + T;
      k.assign(size_t(cap * row), 0.f), v.assign(size_t(cap * row), 0.f);
      for (int64_t p = std::max<int64_t>(0, S - cap); p < S; ++p)
        for (int64_t j = 0; j < row; ++j) {
          k[size_t((p % cap) * row + j)] = K[size_t(p * row + j)];
          v[size_t((p % cap) * row + j)] = V[size_t(p * row + j)];
        }
      kv = KvView{k.data(), v.data(), cap, row, true};
    }
    std::vector<uint16_t> k16(k.size()), v16(v.size());
    for (size_t i = 0; i < k.size(); ++i) k16[i] = f32_to_bf16(k[i]), v16[i] = f32_to_bf16(v[i]);
    KvView kv16 = kv;
    kv16.k = k16.data(), kv16.v = v16.data(), kv16.type = KvType::kBF16;
    ThreadPool pool2(2), pool3(3);
    const int64_t qw = int64_t(s.n_heads) * s.head_dim, rw = int64_t(s.n_heads) * s.d_rel;
    for (const KvView& view : {kv, kv16})
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2, &pool3}) {
        std::vector<float> alone(size_t(T * qw));
        for (int64_t i = 0; i < T; ++i)
          attention(q.data() + i * qw, r.data() + i * rw, 1, c.pos0 + i, view, P.data(), s,
                    alone.data() + i * qw, pool);
        for (int64_t n = 2; n <= T; n += 7) {
          // The last n queries of the chunk (the first ones are at positions the cache of a
          // shorter chunk would hold too).
          const int64_t i0 = T - n;
          std::vector<float> got(size_t(n * qw), NAN);
          attention(q.data() + i0 * qw, r.data() + i0 * rw, n, c.pos0 + i0, view, P.data(), s,
                    got.data(), pool);
          ASSERT_EQ(std::memcmp(got.data(), alone.data() + i0 * qw, got.size() * 4), 0)
              << "W " << c.W << " pos0 " << c.pos0 + i0 << " n " << n
              << (view.type == KvType::kBF16 ? " bf16" : " f32") << " threads "
              << (pool ? pool->size() : 1);
        }
      }
  }
}

// The short conv: T rows at once == T single rows with the state carried.
TEST(RowInvariance, ShortConv) {
  const int64_t C = 19, K = 4, T = kMaxT;
  const auto u = randn(size_t(T * C), 8), w = randn(size_t(C * K), 9);
  const auto st0 = randn(size_t((K - 1) * C), 10);
  std::vector<float> st = st0, all(size_t(T * C));
  short_conv(u.data(), T, C, w.data(), K, st.data(), all.data());
  std::vector<float> st1 = st0, one(size_t(T * C));
  for (int64_t t = 0; t < T; ++t)
    short_conv(u.data() + t * C, 1, C, w.data(), K, st1.data(), one.data() + t * C);
  EXPECT_EQ(std::memcmp(all.data(), one.data(), all.size() * 4), 0);
  EXPECT_EQ(std::memcmp(st.data(), st1.data(), st.size() * 4), 0);
}

}  // namespace
}  // namespace inkling
