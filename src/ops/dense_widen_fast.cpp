// AVX-512F kernel for bf16 and MXFP8 weights in fast numerics where VDPBF16PS is missing or slow
// (see dense_widen_fast.h), and its scalar twins. Both formats run the same tiles: a row source
// (Bf16Row, Mxfp8Row) hands each 32-column chunk over as 32 bf16 numbers (MXFP8: made bf16 in
// registers, ops/mxfp8_bf16-inl.h), widened to f32 as its even and odd columns.
#include "ops/dense_widen_fast.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/aligned_scratch.h"
#include "base/dtype.h"
#include "ops/formats.h"
#include "ops/kernel_switch.h"
#include "ops/quant.h"
#include "ops/quant_affine_vnni.h"  // vnni_sum16: the fixed 16-lane reduction

#if defined(__x86_64__) && defined(__GNUC__)
#define INKLING_HAVE_WIDEN_FAST 1
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's _mm512_undefined_* operands
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "ops/mxfp8_bf16-inl.h"
#define INK_WIDEN_FN __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl")))
#else
#define INKLING_HAVE_WIDEN_FAST 0
#endif

namespace inkling {

namespace {
constexpr int64_t kChunk = 32;  // columns per 64-byte load of bf16 weights
KernelSwitch g_switch{"INKLING_NO_WIDEN_FAST"};
}  // namespace

bool dense_widen_fast_handles(const MatView& w, int64_t n_tok) {
  return n_tok >= 1 && n_tok <= kFewMaxTokens && w.format == WeightFormat::kDense &&
         w.dtype == DType::BF16;
}

bool mxfp8_widen_fast_handles(const MatView& w, int64_t n_tok) {
  return n_tok >= 1 && n_tok <= kFewMaxTokens && mxfp8_whole_blocks(w);
}

namespace {
void widen_ref(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0, int64_t r1,
               float* y, int64_t ldy) {
  const int64_t n = w.cols, chunks = (n + kChunk - 1) / kChunk;
  std::vector<uint16_t> row(size_t(std::max<int64_t>(n, 1)));
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t r = r0; r < r1; ++r) {
      bf16_row_bits(w, r, row.data());
      float acc[16] = {};
      for (int64_t j = 0; j < chunks; ++j)
        for (int odd = 0; odd < 2; ++odd)
          for (int l = 0; l < 16; ++l) {
            const int64_t c = j * kChunk + 2 * l + odd;
            const float wv = c < n ? bf16_to_f32(row[size_t(c)]) : 0.f;
            const float xv = c < n ? x[t * ldx + c] : 0.f;
            acc[l] = std::fma(wv, xv, acc[l]);
          }
      y[t * ldy + r] = vnni_sum16(acc);
    }
}
}  // namespace

void dense_widen_fast_rows_ref(const float* x, int64_t n_tok, int64_t ldx, const MatView& w,
                               int64_t r0, int64_t r1, float* y, int64_t ldy) {
  widen_ref(x, n_tok, ldx, w, r0, r1, y, ldy);
}

void mxfp8_widen_fast_rows_ref(const float* x, int64_t n_tok, int64_t ldx, const MatView& w,
                               int64_t r0, int64_t r1, float* y, int64_t ldy) {
  widen_ref(x, n_tok, ldx, w, r0, r1, y, ldy);
}

#if INKLING_HAVE_WIDEN_FAST
namespace {

// x of the call's tokens per 32-column chunk as its 16 even then 16 odd columns, zero padded to
// whole chunks (on cache lines).
struct Prepared {
  AlignedScratch<float> x;
  int64_t stride = 0;
};

INK_WIDEN_FN void prepare(const float* x, int64_t n_tok, int64_t ldx, int64_t n, Prepared& p) {
  // A cache line beyond whole chunks: tokens 4 KiB apart would meet in the same L1 sets.
  const int64_t padded = (n + kChunk - 1) / kChunk * kChunk;
  p.stride = padded + 16;
  float* out = p.x.get(size_t(n_tok * p.stride));
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  for (int64_t t = 0; t < n_tok; ++t) {
    const float* in = x + t * ldx;
    float* o = out + t * p.stride;
    for (int64_t c = 0; c < padded; c += kChunk) {
      const int64_t left = std::min<int64_t>(kChunk, n - c);
      const __mmask16 m0 = __mmask16(left >= 16 ? 0xffff : (1u << left) - 1u);
      const __mmask16 m1 = __mmask16(left >= 32  ? 0xffff
                                     : left > 16 ? (1u << (left - 16)) - 1u
                                                 : 0);
      const __m512 lo = _mm512_maskz_loadu_ps(m0, in + c),
                   hi = _mm512_maskz_loadu_ps(m1, in + c + 16);
      _mm512_store_ps(o + c, _mm512_permutex2var_ps(lo, even, hi));
      _mm512_store_ps(o + c + 16, _mm512_permutex2var_ps(lo, odd, hi));
    }
  }
}

// vnni_sum16's order in registers: lanes l + (l + 8), then + 4, + 2, + 1.
INK_WIDEN_FN inline float finish(__m512 a) {
  const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

// A row's chunks as bf16 numbers: bf16 weights as stored (the last chunk masked).
struct Bf16Row {
  const uint16_t* p = nullptr;
  int64_t stride = 0;  // bytes from a row to the next
  Bf16Row() = default;
  Bf16Row(const MatView& w, int64_t r)
      : p(reinterpret_cast<const uint16_t*>(w.row(r))), stride(w.row_stride * 2) {}
  INK_WIDEN_FN __m512i load(int64_t j, __mmask32 m) const {
    return _mm512_maskz_loadu_epi16(m, p + j * kChunk);
  }
  const char* at(int64_t j) const { return reinterpret_cast<const char*>(p + j * kChunk); }
};

// MXFP8: a chunk is one block, made bf16 in registers. Rows are whole blocks, so no mask.
struct Mxfp8Row {
  const uint8_t* codes = nullptr;
  const uint8_t* e = nullptr;
  int64_t stride = 0;
  Mxfp8Row() = default;
  Mxfp8Row(const MatView& w, int64_t r)
      : codes(w.row(r)), e(w.scales + size_t(r * w.scale_stride)), stride(w.row_stride) {}
  INK_WIDEN_FN __m512i load(int64_t j, __mmask32) const {
    return mxfp8_avx512::bf16x32(codes + j * kChunk, e[j]);
  }
  const char* at(int64_t j) const { return reinterpret_cast<const char*>(codes + j * kChunk); }
};

// Chunks [j0, j1) of R rows (wr) into the chains a[row][token], in column order. pf > 0: the
// rows pf rows further on prefetched as these are read (one token: a stream per thread), into L2
// (T1): those lines are used a whole tile later (pf rows x 8 KB for 4096 columns), and pulling them
// into L1 evicted the lines in use (T0 read 26.6, T1 28.6 GB/s on two threads, 4096 columns).
template <class Row, int R, int NT>
INK_WIDEN_FN __attribute__((always_inline)) inline void chunks(const Row* wr,
                                                               const float* const* xt, int64_t j0,
                                                               int64_t j1, int64_t full,
                                                               __mmask32 tail, int64_t pf,
                                                               __m512 (&a)[R][NT]) {
  const __m512i hi16 = _mm512_set1_epi32(int(0xffff0000u));
  for (int64_t j = j0; j < j1; ++j) {
    const __mmask32 m = j < full ? ~__mmask32(0) : tail;
    if (pf > 0)
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) _mm_prefetch(wr[i].at(j) + pf * wr[i].stride, _MM_HINT_T1);
    __m512 we[R], wo[R];
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
      const __m512i v = wr[i].load(j, m);
      we[i] = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
      wo[i] = _mm512_castsi512_ps(_mm512_and_si512(v, hi16));
    }
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      __m512 xe = _mm512_load_ps(xt[t] + j * kChunk), xo = _mm512_load_ps(xt[t] + j * kChunk + 16);
      // One load each for every row, where x fits in registers beside the chains and the
      // widened weights (4 rows x 6 tokens fill the file: there x stays an operand in L1).
      if constexpr (R > 1 && R * NT + 2 * R + 2 <= 32) asm("" : "+v"(xe), "+v"(xo));
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) a[i][t] = _mm512_fmadd_ps(we[i], xe, a[i][t]);
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) a[i][t] = _mm512_fmadd_ps(wo[i], xo, a[i][t]);
    }
  }
}

inline __mmask32 tail_mask(int64_t n, int64_t full, int64_t chunks) {
  return __mmask32(chunks > full ? (1u << (n - full * kChunk)) - 1u : ~0u);
}

// R rows x NT tokens from row r over every chunk; pf > 0: prefetch the rows pf rows further on.
template <class Row, int R, int NT>
INK_WIDEN_FN void tile(const Prepared& p, int64_t t0, const MatView& w, int64_t r, float* y,
                       int64_t ldy, int64_t pf) {
  const int64_t n = w.cols, full = n / kChunk, nch = (n + kChunk - 1) / kChunk;
  Row wr[R];
  for (int i = 0; i < R; ++i) wr[i] = Row(w, r + i);
  const float* xt[NT];
  for (int t = 0; t < NT; ++t) xt[t] = p.x.data() + (t0 + t) * p.stride;
  __m512 a[R][NT];
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) a[i][t] = _mm512_setzero_ps();
  chunks<Row, R, NT>(wr, xt, 0, nch, full, tail_mask(n, full, nch), pf, a);
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) y[(t0 + t) * ldy + r + i] = finish(a[i][t]);
}

// Rows [r0, r1) for tokens t0 .. t0 + NT - 1: blocks of R rows, then the rest one by one.
template <class Row, int R, int NT>
void rows(const Prepared& p, int64_t t0, const MatView& w, int64_t r0, int64_t r1, float* y,
          int64_t ldy) {
  int64_t r = r0;
  for (; r + R <= r1; r += R)
    tile<Row, R, NT>(p, t0, w, r, y, ldy, NT == 1 && r + 2 * R <= r1 ? R : 0);
  for (; r < r1; ++r) tile<Row, 1, NT>(p, t0, w, r, y, ldy, 0);
}

// Five or more tokens: their x (16 KB a token for 4096 columns) would come from L2 for every row
// group. So rows go in blocks of kBlockRows and columns in blocks of kBlockChunks chunks (x of 16
// tokens: 32 KB in L1); each (row, token) chain waits in `park` between column blocks (an exact
// f32 round trip: the same steps as one pass). Rows go in fours against groups of up to
// kGroupTokens tokens (24 chains and 8 widened weight registers: the register file), a row
// quad's block of weights, read from memory for the first group, in L1 for the others; the
// last one to three rows of a block in pairs and ones against groups of 8.
constexpr int64_t kBlockRows = 32, kBlockChunks = 16;
constexpr int kGroupTokens = 6;

struct Park {  // [row of the block][token][16 lanes]
  alignas(64) float v[kBlockRows][kFewMaxTokens][16];
};

template <class Row, int R, int NT>
INK_WIDEN_FN void park_tile(const Prepared& p, int64_t t0, const Row* wr, int64_t j0, int64_t j1,
                            int64_t full, __mmask32 tail, float* pk) {
  const float* xt[NT];
  for (int t = 0; t < NT; ++t) xt[t] = p.x.data() + (t0 + t) * p.stride;
  __m512 a[R][NT];
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t)
      a[i][t] = j0 == 0 ? _mm512_setzero_ps() : _mm512_load_ps(pk + (i * kFewMaxTokens + t) * 16);
  chunks<Row, R, NT>(wr, xt, j0, j1, full, tail, 0, a);
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) _mm512_store_ps(pk + (i * kFewMaxTokens + t) * 16, a[i][t]);
}

// Tokens per group against R rows: up to kGroupTokens against quads, 8 against pairs and ones.
template <int R>
constexpr int kGroupOf = R == 4 ? kGroupTokens : 8;

// park_tile for nt tokens, 1 <= nt <= NT.
template <class Row, int R, int NT = kGroupOf<R>>
void park_group(const Prepared& p, int64_t t0, int nt, const Row* wr, int64_t j0, int64_t j1,
                int64_t full, __mmask32 tail, float* pk) {
  if constexpr (NT > 1)
    if (nt < NT) return park_group<Row, R, NT - 1>(p, t0, nt, wr, j0, j1, full, tail, pk);
  park_tile<Row, R, NT>(p, t0, wr, j0, j1, full, tail, pk);
}

template <class Row>
INK_WIDEN_FN void blocked(const Prepared& p, int64_t n_tok, const MatView& w, int64_t r0,
                          int64_t r1, float* y, int64_t ldy) {
  thread_local Park park;
  const int64_t n = w.cols, full = n / kChunk, nch = (n + kChunk - 1) / kChunk;
  const __mmask32 tail = tail_mask(n, full, nch);
  for (int64_t rb = r0; rb < r1; rb += kBlockRows) {
    const int64_t re = std::min(r1, rb + kBlockRows);
    for (int64_t j0 = 0; j0 < nch; j0 += kBlockChunks) {
      const int64_t j1 = std::min(nch, j0 + kBlockChunks);
      int64_t r = rb;
      for (; r + 4 <= re; r += 4) {
        const Row wr[4] = {Row(w, r), Row(w, r + 1), Row(w, r + 2), Row(w, r + 3)};
        float* pk = &park.v[r - rb][0][0];
        for (int64_t t0 = 0; t0 < n_tok; t0 += kGroupOf<4>) {
          const int nt = int(std::min<int64_t>(kGroupOf<4>, n_tok - t0));
          park_group<Row, 4>(p, t0, nt, wr, j0, j1, full, tail, pk + t0 * 16);
        }
      }
      for (; r < re; r += 2) {
        const Row wr[2] = {Row(w, r), Row(w, std::min(r + 1, re - 1))};
        float* pk = &park.v[r - rb][0][0];
        for (int64_t t0 = 0; t0 < n_tok; t0 += kGroupOf<2>) {
          const int nt = int(std::min<int64_t>(kGroupOf<2>, n_tok - t0));
          if (r + 1 < re)
            park_group<Row, 2>(p, t0, nt, wr, j0, j1, full, tail, pk + t0 * 16);
          else
            park_group<Row, 1>(p, t0, nt, wr, j0, j1, full, tail, pk + t0 * 16);
        }
      }
    }
    for (int64_t r = rb; r < re; ++r)
      for (int64_t t = 0; t < n_tok; ++t)
        y[t * ldy + r] = finish(_mm512_load_ps(park.v[r - rb][t]));
  }
}

bool cpu_has() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

}  // namespace

bool dense_widen_fast_available() {
  static const bool has = cpu_has();
  return g_switch.enabled(has);
}

void set_dense_widen_fast_enabled(bool on) {
  g_switch.set(on, cpu_has());
}

namespace {
template <class Row>
void widen_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                int64_t r1, float* y, int64_t ldy) {
  thread_local Prepared p;
  prepare(x, n_tok, ldx, w.cols, p);
  switch (n_tok) {  // up to 4 tokens: rows in fours, each row's stream read once
    case 1:
      return rows<Row, 4, 1>(p, 0, w, r0, r1, y, ldy);
    case 2:
      return rows<Row, 4, 2>(p, 0, w, r0, r1, y, ldy);
    case 3:
      return rows<Row, 4, 3>(p, 0, w, r0, r1, y, ldy);
    case 4:
      return rows<Row, 4, 4>(p, 0, w, r0, r1, y, ldy);
    default:
      return blocked<Row>(p, n_tok, w, r0, r1, y, ldy);
  }
}
}  // namespace

void dense_widen_fast_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                           int64_t r1, float* y, int64_t ldy) {
  widen_rows<Bf16Row>(x, n_tok, ldx, w, r0, r1, y, ldy);
}

void mxfp8_widen_fast_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                           int64_t r1, float* y, int64_t ldy) {
  widen_rows<Mxfp8Row>(x, n_tok, ldx, w, r0, r1, y, ldy);
}

#else

bool dense_widen_fast_available() {
  return false;
}
void set_dense_widen_fast_enabled(bool) {}
void dense_widen_fast_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                           int64_t r1, float* y, int64_t ldy) {
  dense_widen_fast_rows_ref(x, n_tok, ldx, w, r0, r1, y, ldy);
}
void mxfp8_widen_fast_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                           int64_t r1, float* y, int64_t ldy) {
  mxfp8_widen_fast_rows_ref(x, n_tok, ldx, w, r0, r1, y, ldy);
}

#endif

}  // namespace inkling
