// AVX512-BF16 kernels for bf16 and MXFP8 weights in fast numerics (see dense_bf16dot.h), and their
// scalar twins. Both formats run the same tiles: a row source (Bf16Row, Mxfp8Row) hands each
// 32-column chunk to VDPBF16PS as 32 bf16 numbers (MXFP8: converted in registers, the block's
// power of two folded into the exponents, ops/quant.h mxfp8_bf16_bits).
// Tiles: one token streams one row at a time (a sequential read per thread, as the exact decode
// kernel); 2-4 tokens run 2 rows x 2 tokens over blocks of 4 rows; more run chain-major tiles of
// 4 rows x up to 4 tokens over blocks of 1024 columns (chain_rows below), so the weights come
// from memory once per call and from L1 for every further group of tokens.
#include "ops/dense_bf16dot.h"

#include <algorithm>
#include <vector>

#include "base/aligned_scratch.h"
#include "base/dtype.h"
#include "ops/formats.h"
#include "ops/quant.h"
#include "ops/quant_affine_vnni.h"  // vnni_sum16: the fixed 16-lane reduction
#include "ops/quant_q4_bf16dot.h"
#include "ops/tile_emulated.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define INKLING_HAVE_DENSE_BF16DOT 1
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // see quant_q4_bf16dot.cpp
#endif
#include <immintrin.h>
#define INK_TILE_FN \
  __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))
#include "ops/mxfp8_bf16-inl.h"
#include "ops/tile_pack_avx512-inl.h"
#else
#define INKLING_HAVE_DENSE_BF16DOT 0
#endif

namespace inkling {

namespace {
constexpr int64_t kChunk = 32;  // columns per VDPBF16PS
constexpr int kChains = 4;
}  // namespace

bool dense_bf16dot_handles(const MatView& w, int64_t n_tok) {
  return n_tok >= 1 && n_tok <= kFewMaxTokens && w.format == WeightFormat::kDense &&
         w.dtype == DType::BF16;
}

bool mxfp8_bf16dot_handles(const MatView& w, int64_t n_tok) {
  return n_tok >= 1 && n_tok <= kFewMaxTokens && mxfp8_whole_blocks(w);
}

namespace {

void rows_ref(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0, int64_t r1,
              float* y, int64_t ldy) {
  const int64_t n = w.cols, chunks = (n + kChunk - 1) / kChunk;
  std::vector<uint16_t> xb(size_t(chunks * kChunk)), wb(size_t(chunks * kChunk));
  for (int64_t t = 0; t < n_tok; ++t) {
    std::fill(xb.begin(), xb.end(), uint16_t(0));
    for (int64_t c = 0; c < n; ++c) xb[size_t(c)] = f32_to_bf16(x[t * ldx + c]);
    for (int64_t r = r0; r < r1; ++r) {
      std::fill(wb.begin(), wb.end(), uint16_t(0));
      bf16_row_bits(w, r, wb.data());
      float lanes[kChains][16] = {};
      for (int64_t j = 0; j < chunks; ++j)
        for (int l = 0; l < 16; ++l)
          lanes[j % kChains][l] =
              tile_gemm::dot_pair(lanes[j % kChains][l], wb.data() + j * kChunk + 2 * l,
                                  xb.data() + j * kChunk + 2 * l, tile_gemm::PairOrder::kOddFirst);
      float s[16];
      for (int l = 0; l < 16; ++l) s[l] = (lanes[0][l] + lanes[1][l]) + (lanes[2][l] + lanes[3][l]);
      y[t * ldy + r] = vnni_sum16(s);
    }
  }
}

}  // namespace

void dense_bf16dot_rows_ref(const float* x, int64_t n_tok, int64_t ldx, const MatView& w,
                            int64_t r0, int64_t r1, float* y, int64_t ldy) {
  rows_ref(x, n_tok, ldx, w, r0, r1, y, ldy);
}

void mxfp8_bf16dot_rows_ref(const float* x, int64_t n_tok, int64_t ldx, const MatView& w,
                            int64_t r0, int64_t r1, float* y, int64_t ldy) {
  rows_ref(x, n_tok, ldx, w, r0, r1, y, ldy);
}

#if INKLING_HAVE_DENSE_BF16DOT
namespace {

// x of the call's tokens as bf16, each token zero padded to whole chunks (on cache lines).
struct Prepared {
  AlignedScratch<uint16_t> xb;
  int64_t stride = 0;
};

INK_TILE_FN void prepare(const float* x, int64_t n_tok, int64_t ldx, int64_t n, Prepared& p) {
  p.stride = (n + kChunk - 1) / kChunk * kChunk;
  p.xb.get(size_t(n_tok * p.stride));
  for (int64_t t = 0; t < n_tok; ++t) {
    const float* in = x + t * ldx;
    uint16_t* o = p.xb.data() + t * p.stride;
    int64_t c = 0;
    for (; c + 16 <= n; c += 16)
      _mm256_store_si256(reinterpret_cast<__m256i*>(o + c),
                         _mm512_cvtepi32_epi16(tile_gemm::bf16_bits16(_mm512_loadu_ps(in + c))));
    for (; c < p.stride; ++c) o[c] = c < n ? f32_to_bf16(in[c]) : uint16_t(0);
  }
}

INK_TILE_FN inline float finish(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  return vnni_sum16(lanes);
}

// The columns of the last chunk of an n-column row (all 32 when n is whole chunks).
inline __mmask32 tail_mask(int64_t n) {
  return n % kChunk ? __mmask32((1u << (n % kChunk)) - 1u) : ~__mmask32(0);
}

// A row's chunks as bf16 numbers: bf16 weights as stored (the last chunk masked).
struct Bf16Row {
  const uint16_t* p = nullptr;
  Bf16Row() = default;
  Bf16Row(const MatView& w, int64_t r) : p(reinterpret_cast<const uint16_t*>(w.row(r))) {}
  INK_TILE_FN __m512bh load(int64_t j, __mmask32 m) const {
    return (__m512bh)_mm512_maskz_loadu_epi16(m, p + j * kChunk);
  }
  const char* at(int64_t j) const { return reinterpret_cast<const char*>(p + j * kChunk); }
};

// MXFP8: a chunk is one block (32 E4M3 codes, one E8M0 exponent e), made bf16 in registers
// (ops/mxfp8_bf16-inl.h). Rows are whole blocks (mxfp8_bf16dot_handles), so no mask.
struct Mxfp8Row {
  const uint8_t* codes = nullptr;
  const uint8_t* e = nullptr;
  Mxfp8Row() = default;
  Mxfp8Row(const MatView& w, int64_t r)
      : codes(w.row(r)), e(w.scales + size_t(r * w.scale_stride)) {}
  INK_TILE_FN __m512bh load(int64_t j, __mmask32) const {
    return (__m512bh)mxfp8_avx512::bf16x32(codes + j * kChunk, e[j]);
  }
  const char* at(int64_t j) const { return reinterpret_cast<const char*>(codes + j * kChunk); }
};

// R rows x NT tokens from row `r`: four chains per (row, token), chunk j into chain j % 4.
// No software prefetch: the row ahead measured slower from DRAM (27 vs 32 GB/s, one Zen 4
// thread) and halved the speed in L2.
template <class Row, int R, int NT>
INK_TILE_FN void tile(const Prepared& p, int64_t t0, const MatView& w, int64_t r, float* y,
                      int64_t ldy) {
  const int64_t n = w.cols, chunks = (n + kChunk - 1) / kChunk;
  const int64_t full = n / kChunk;  // chunks read without a mask
  const __mmask32 tail = tail_mask(n);
  Row wr[R];
  for (int i = 0; i < R; ++i) wr[i] = Row(w, r + i);
  const uint16_t* xt[NT];
  for (int t = 0; t < NT; ++t) xt[t] = p.xb.data() + (t0 + t) * p.stride;
  __m512 a[kChains][R][NT];
#pragma GCC unroll 4
  for (int k = 0; k < kChains; ++k)
#pragma GCC unroll 2
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
      for (int t = 0; t < NT; ++t) a[k][i][t] = _mm512_setzero_ps();
  int64_t j = 0;
  for (; j + kChains <= full; j += kChains) {
#pragma GCC unroll 4
    for (int k = 0; k < kChains; ++k) {
      __m512bh wv[R];
#pragma GCC unroll 2
      for (int i = 0; i < R; ++i) wv[i] = wr[i].load(j + k, ~__mmask32(0));
#pragma GCC unroll 2
      for (int t = 0; t < NT; ++t) {
        const __m512bh xv = (__m512bh)_mm512_load_si512(xt[t] + (j + k) * kChunk);
#pragma GCC unroll 2
        for (int i = 0; i < R; ++i) a[k][i][t] = _mm512_dpbf16_ps(a[k][i][t], wv[i], xv);
      }
    }
  }
  for (; j < chunks; ++j) {  // the last whole chunks, then the partial one (masked, zeros)
    const int k = int(j % kChains);
    const __mmask32 m = j < full ? ~__mmask32(0) : tail;
    for (int i = 0; i < R; ++i) {
      const __m512bh wv = wr[i].load(j, m);
      for (int t = 0; t < NT; ++t)
        a[k][i][t] =
            _mm512_dpbf16_ps(a[k][i][t], wv, (__m512bh)_mm512_load_si512(xt[t] + j * kChunk));
    }
  }
  for (int i = 0; i < R; ++i)
    for (int t = 0; t < NT; ++t)
      y[(t0 + t) * ldy + r + i] = finish(a[0][i][t], a[1][i][t], a[2][i][t], a[3][i][t]);
}

// Several tokens, chain-major (as the exact kernel's few-token tiles, matmul_hwy.cpp): a tile of
// R rows x NT tokens runs the four chains one after another over a block of columns (chain k reads
// chunks k, k + 4, ... of the block), so it holds R x NT accumulators instead of 4 x R x NT, and
// R + NT loads feed R x NT VDPBF16PS. Each chain's sums wait in `park` between column blocks; a
// (row, token) sees the same chunks in the same order per chain as tile<1, 1>, so its bits are
// the one-token ones.
constexpr int kTileR = 4, kTileT = 4;
// Up to this many tokens the row-pair tiles (tile<2, 2>) run instead: from DRAM they measured
// 1.4x the exact kernel at 2-4 tokens, the chain-major ones 1.0-1.15x; beyond, chain-major wins
// (16 tokens in L2: 1.24x where the row pairs gave 0.84x). Both give every (row, token) the
// one-token order, so the switch keeps row-count invariance.
constexpr int64_t kPairTokens = 4;
constexpr int64_t kBlockChunks = 32;  // 1024 columns: 4 rows x 2 KiB stay in L1 for every token

struct Park {  // [chain][row][token][16 lanes]
  alignas(64) float v[kChains][kTileR][kFewMaxTokens][16];
};

// `ahead` (or null): the next tile's rows, prefetched over the block by chain 0 of the first
// token group (the weights come from DRAM once; no effect on the arithmetic).
template <class Row, int R, int NT>
INK_TILE_FN void chain_block(const Prepared& p, int64_t t0, const Row* wr, int64_t j0, int64_t j1,
                             int64_t full, __mmask32 tail, bool first, Park& pk, const Row* ahead) {
  const uint16_t* xt[NT];
  for (int t = 0; t < NT; ++t) xt[t] = p.xb.data() + (t0 + t) * p.stride;
#pragma GCC unroll 1
  for (int k = 0; k < kChains; ++k) {
    __m512 a[R][NT];
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t)
        a[i][t] = first ? _mm512_setzero_ps() : _mm512_load_ps(pk.v[k][i][t0 + t]);
    for (int64_t j = j0 + k; j < j1; j += kChains) {
      if (ahead && k == 0)
        for (int i = 0; i < R; ++i)
          for (int q = 0; q < kChains; ++q) _mm_prefetch(ahead[i].at(j + q), _MM_HINT_T0);
      const __mmask32 m = j < full ? ~__mmask32(0) : tail;
      __m512bh wv[R];
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) wv[i] = wr[i].load(j, m);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const __m512bh xv = (__m512bh)_mm512_load_si512(xt[t] + j * kChunk);
#pragma GCC unroll 4
        for (int i = 0; i < R; ++i) a[i][t] = _mm512_dpbf16_ps(a[i][t], wv[i], xv);
      }
    }
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) _mm512_store_ps(pk.v[k][i][t0 + t], a[i][t]);
  }
}

template <class Row, int R>
INK_TILE_FN void chain_rows(const Prepared& p, int64_t n_tok, const MatView& w, int64_t r,
                            int64_t r1, float* y, int64_t ldy, Park& pk) {
  const int64_t n = w.cols, chunks = (n + kChunk - 1) / kChunk, full = n / kChunk;
  const __mmask32 tail = tail_mask(n);
  Row wr[R], nx[R];
  const bool pf = r + 2 * R <= r1;
  for (int i = 0; i < R; ++i) {
    wr[i] = Row(w, r + i);
    if (pf) nx[i] = Row(w, r + R + i);
  }
  for (int64_t j0 = 0; j0 < chunks; j0 += kBlockChunks) {
    const int64_t j1 = std::min(chunks, j0 + kBlockChunks);
    for (int64_t t0 = 0; t0 < n_tok; t0 += kTileT) {
      const Row* ahead = pf && t0 == 0 ? nx : nullptr;
      switch (std::min<int64_t>(kTileT, n_tok - t0)) {
        case 1:
          chain_block<Row, R, 1>(p, t0, wr, j0, j1, full, tail, j0 == 0, pk, ahead);
          break;
        case 2:
          chain_block<Row, R, 2>(p, t0, wr, j0, j1, full, tail, j0 == 0, pk, ahead);
          break;
        case 3:
          chain_block<Row, R, 3>(p, t0, wr, j0, j1, full, tail, j0 == 0, pk, ahead);
          break;
        default:
          chain_block<Row, R, 4>(p, t0, wr, j0, j1, full, tail, j0 == 0, pk, ahead);
          break;
      }
    }
  }
  for (int i = 0; i < R; ++i)
    for (int64_t t = 0; t < n_tok; ++t)
      y[t * ldy + r + i] = finish(_mm512_load_ps(pk.v[0][i][t]), _mm512_load_ps(pk.v[1][i][t]),
                                  _mm512_load_ps(pk.v[2][i][t]), _mm512_load_ps(pk.v[3][i][t]));
}

}  // namespace
#endif  // INKLING_HAVE_DENSE_BF16DOT

bool dense_bf16dot_available() {
#if INKLING_HAVE_DENSE_BF16DOT
  return q4_bf16dot_enabled();  // the CPU has AVX512-BF16 and the kernels are not turned off
#else
  return false;
#endif
}

#if INKLING_HAVE_DENSE_BF16DOT
namespace {
template <class Row>
void rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0, int64_t r1,
          float* y, int64_t ldy) {
  thread_local Prepared p;
  prepare(x, n_tok, ldx, w.cols, p);
  if (n_tok == 1) {  // one sequential stream
    for (int64_t r = r0; r < r1; ++r) tile<Row, 1, 1>(p, 0, w, r, y, ldy);
    return;
  }
  if (n_tok <= kPairTokens) {  // row pairs x token pairs over blocks of 4 rows, full rows
    constexpr int64_t kBlock = 4;
    for (int64_t rb = r0; rb < r1; rb += kBlock) {
      const int64_t re = std::min(r1, rb + kBlock);
      for (int64_t t0 = 0; t0 < n_tok; t0 += 2) {
        const bool pair = t0 + 1 < n_tok;
        int64_t r = rb;
        for (; r + 2 <= re; r += 2)
          pair ? tile<Row, 2, 2>(p, t0, w, r, y, ldy) : tile<Row, 2, 1>(p, t0, w, r, y, ldy);
        for (; r < re; ++r)
          pair ? tile<Row, 1, 2>(p, t0, w, r, y, ldy) : tile<Row, 1, 1>(p, t0, w, r, y, ldy);
      }
    }
    return;
  }
  thread_local Park pk;
  int64_t r = r0;
  for (; r + kTileR <= r1; r += kTileR) chain_rows<Row, kTileR>(p, n_tok, w, r, r1, y, ldy, pk);
  for (; r < r1; ++r) chain_rows<Row, 1>(p, n_tok, w, r, r1, y, ldy, pk);
}
}  // namespace
#endif  // INKLING_HAVE_DENSE_BF16DOT

void dense_bf16dot_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                        int64_t r1, float* y, int64_t ldy) {
#if INKLING_HAVE_DENSE_BF16DOT
  rows<Bf16Row>(x, n_tok, ldx, w, r0, r1, y, ldy);
#else
  (void)x, (void)n_tok, (void)ldx, (void)w, (void)r0, (void)r1, (void)y, (void)ldy;
#endif
}

void mxfp8_bf16dot_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                        int64_t r1, float* y, int64_t ldy) {
#if INKLING_HAVE_DENSE_BF16DOT
  rows<Mxfp8Row>(x, n_tok, ldx, w, r0, r1, y, ldy);
#else
  (void)x, (void)n_tok, (void)ldx, (void)w, (void)r0, (void)r1, (void)y, (void)ldy;
#endif
}

}  // namespace inkling
