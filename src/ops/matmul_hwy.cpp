// Dense matmul kernels (see matmul_hwy.h), one copy per Highway target via foreach_target.h.
// Buffers are thread_local and only grow, so steady-state calls allocate nothing.
#include "ops/matmul_hwy.h"

#include <algorithm>
#include <cstring>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/matmul_hwy.cpp"
#include <hwy/cache_control.h>
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "ops/affine_words-inl.h"
#include "ops/e2m1-inl.h"
#include "ops/e4m3-inl.h"

#include "base/aligned_scratch.h"
#include "ops/affine_words.h"
#include "ops/quant.h"
#include "ops/tuning.h"

HWY_BEFORE_NAMESPACE();
namespace inkling {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Weight element loaders: f32 as is; bf16 is the high half of an f32, so widen by a shift.
HWY_INLINE VF LoadW(DF df, const float* p) {
  return hn::LoadU(df, p);
}
HWY_INLINE VF LoadW(DF df, const uint16_t* p) {
  const hn::Rebind<uint16_t, DF> d16;
  const hn::RebindToUnsigned<DF> du;
  return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, p))));
}
// Weights may be misaligned for their type (safetensors data is not padded): the vector loads
// are LoadU and the scalar ones load_unaligned.
HWY_INLINE float ScalarW(const float* p, int64_t i) {
  return load_unaligned(p + i);
}
HWY_INLINE float ScalarW(const uint16_t* p, int64_t i) {
  return bits_to_f32(uint32_t(load_unaligned(p + i)) << 16);
}
// Group g's scale (or bias) from a row of them stored as `t`: bf16 inline, other dtypes through
// load_as_f32.
HWY_INLINE float GroupValue(DType t, const uint8_t* row, int64_t g) {
  return t == DType::BF16 ? ScalarW(reinterpret_cast<const uint16_t*>(row), g)
                          : load_as_f32(t, row, size_t(g));
}
HWY_INLINE float Sum(DF df, VF v) {
  return hn::GetLane(hn::SumOfLanes(df, v));
}

// ---- matvec ---------------------------------------------------------------------------------
// Few tokens (decode, speculative verification, batched decode: up to 16 tokens) are streamed
// through register tiles of weight rows x tokens. Every (row, token) dot is summed in one
// canonical order whatever the tile: four chains over groups of four vector chunks (chunk k of a
// group into chain k), any last single chunks into chain 0, (a0 + a1) + (a2 + a3) reduced by
// SumOfLanes, then the scalar tail in column order (Finish). So a row's result is bitwise the same
// computed alone (decode) or with up to 15 other tokens (verify, batched decode), which greedy
// speculative decoding relies on (ops/formats.h). One token streams one row at a time: one
// sequential stream per thread reached 0.9-0.95 of the read probe on the Zen 4 VM with 2 threads,
// where 4 rows interleaved reached 0.65-0.75.

// The canonical end of one (row, token) dot: the four chains combined, then the scalar tail
// [c, n) in column order.
template <typename WT>
HWY_INLINE float Finish(DF df, VF a0, VF a1, VF a2, VF a3, const float* x, const WT* w, int64_t c,
                        int64_t n) {
  float s = Sum(df, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)));
  for (int64_t k = c; k < n; ++k) s += x[k] * ScalarW(w, k);
  return s;
}

// R rows x NT tokens, the four chains in registers (4 x R x NT accumulators): the decode kernel
// (R = NT = 1). `ahead` (one token only, may be null): rows R apart from the same offsets,
// software-prefetched into L2 as these are read (decode tuning, ops/tuning.h; no effect on the
// arithmetic). Into L2, not L1: a row of 4096 bf16 is 8 KB, so rows ahead are used tens of KB of
// reads later, and into L1 they evicted the lines in use (T0 -> T1: the bf16 slice's exact
// decode 0.73-0.74 -> 0.80-0.86 of the read probe).
template <int R, int NT, typename WT>
HWY_INLINE void DotTile(DF df, const float* x, int64_t ldx, const WT* w, int64_t ld, int64_t n,
                        float* y, int64_t ldy, const WT* ahead = nullptr) {
  const int64_t N = int64_t(hn::Lanes(df));
  VF a[4][R][NT];
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k)
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) a[k][i][t] = hn::Zero(df);
  int64_t c = 0;
  for (; c + 4 * N <= n; c += 4 * N) {
    if (ahead) {
      constexpr int64_t kLine = 64 / int64_t(sizeof(WT));  // elements per cache line
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i)
        for (int64_t b = 0; b < 4 * N; b += kLine) __builtin_prefetch(ahead + i * ld + c + b, 0, 2);
    }
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      VF wv[R];
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) wv[i] = LoadW(df, w + i * ld + c + k * N);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const VF xv = hn::LoadU(df, x + t * ldx + c + k * N);
#pragma GCC unroll 4
        for (int i = 0; i < R; ++i) a[k][i][t] = hn::MulAdd(wv[i], xv, a[k][i][t]);
      }
    }
  }
  for (; c + N <= n; c += N) {
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
      const VF wv = LoadW(df, w + i * ld + c);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t)
        a[0][i][t] = hn::MulAdd(wv, hn::LoadU(df, x + t * ldx + c), a[0][i][t]);
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t)
      y[t * ldy + i] =
          Finish(df, a[0][i][t], a[1][i][t], a[2][i][t], a[3][i][t], x + t * ldx, w + i * ld, c, n);
}

// Several tokens: a tile of R rows x NT tokens runs the four chains one after another (chain k
// reads chunk k of every group), so it needs one accumulator per (row, token) instead of four:
// R x NT accumulators, R + NT loads per R x NT FMAs (4 x 4 on AVX-512: 8 loads per 16 FMAs, where
// four chains in registers allowed only 2 x 2 tiles, 4 loads per 4 FMAs). Each chain's partial
// sums wait in `park` until the last chain is done; the per-(row, token) arithmetic is the
// decode kernel's, op for op.
#if HWY_TARGET <= HWY_AVX3
constexpr int kFewR = 4, kFewT = 4;  // 16 accumulators + 4 weight vectors + 1 x vector
#else
constexpr int kFewR = 2, kFewT = 4;  // 8 + 2 + 1 of 16 registers
#endif
constexpr int kFewMaxTok = 16;  // kFewMaxTokens (ops/formats.h)
// Columns per block: 4 rows of bf16 weights (8 KiB) stay in L1 while every token group passes.
constexpr int64_t kFewBlockCols = 1024;

// Parked chain sums of one row tile: [chain][row][token][lane].
struct Park {
  float* p;
  int64_t lanes;
  float* at(int k, int i, int t) const {
    return p + ((int64_t(k) * kFewR + i) * kFewMaxTok + t) * lanes;
  }
};

// Columns [c0, c1) (whole groups) of an R x NT tile, each chain continuing from its parked sums
// (or zero when `first`); `last` appends the single chunks [c1, c_end) to chain 0.
template <int R, int NT, typename WT>
HWY_INLINE void ChainBlock(DF df, const float* x, int64_t ldx, const WT* w, int64_t ld, int64_t c0,
                           int64_t c1, int64_t c_end, bool first, bool last, const Park& pk) {
  const int64_t N = int64_t(hn::Lanes(df));
#pragma GCC unroll 1
  for (int k = 0; k < 4; ++k) {
    VF a[R][NT];
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) a[i][t] = first ? hn::Zero(df) : hn::Load(df, pk.at(k, i, t));
    for (int64_t c = c0 + int64_t(k) * N; c < c1; c += 4 * N) {
      VF wv[R];
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) wv[i] = LoadW(df, w + i * ld + c);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const VF xv = hn::LoadU(df, x + t * ldx + c);
#pragma GCC unroll 4
        for (int i = 0; i < R; ++i) a[i][t] = hn::MulAdd(wv[i], xv, a[i][t]);
      }
    }
    if (k == 0 && last)
      for (int64_t c = c1; c < c_end; c += N) {
#pragma GCC unroll 4
        for (int i = 0; i < R; ++i) {
          const VF wv = LoadW(df, w + i * ld + c);
#pragma GCC unroll 4
          for (int t = 0; t < NT; ++t)
            a[i][t] = hn::MulAdd(wv, hn::LoadU(df, x + t * ldx + c), a[i][t]);
        }
      }
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) hn::Store(a[i][t], df, pk.at(k, i, t));
  }
}

// R rows x nt (1..NT) tokens.
template <int R, int NT, typename WT>
HWY_INLINE void ChainBlockN(DF df, int nt, const float* x, int64_t ldx, const WT* w, int64_t ld,
                            int64_t c0, int64_t c1, int64_t c_end, bool first, bool last,
                            const Park& pk) {
  if constexpr (NT > 1) {
    if (nt < NT)
      return ChainBlockN<R, NT - 1>(df, nt, x, ldx, w, ld, c0, c1, c_end, first, last, pk);
  }
  ChainBlock<R, NT>(df, x, ldx, w, ld, c0, c1, c_end, first, last, pk);
}

// nr (1..R) rows x nt tokens.
template <int R, typename WT>
HWY_INLINE void ChainBlockRows(DF df, int nr, int nt, const float* x, int64_t ldx, const WT* w,
                               int64_t ld, int64_t c0, int64_t c1, int64_t c_end, bool first,
                               bool last, const Park& pk) {
  if constexpr (R > 1) {
    if (nr < R)
      return ChainBlockRows<R - 1>(df, nr, nt, x, ldx, w, ld, c0, c1, c_end, first, last, pk);
  }
  ChainBlockN<R, kFewT>(df, nt, x, ldx, w, ld, c0, c1, c_end, first, last, pk);
}

// One token, R rows at a time (the per-row order is DotTile's whatever R), the rows `pf` rows
// ahead prefetched as these are read (0: none).
template <int R, typename WT>
void OneTokenRows(DF df, const float* x, const WT* w, int64_t ld, int64_t cols, int64_t r0,
                  int64_t r1, float* y, int pf) {
  int64_t r = r0;
  for (; r + R <= r1; r += R) {
    const WT* ahead = pf > 0 && r + pf + R <= r1 ? w + (r + pf) * ld : nullptr;
    DotTile<R, 1>(df, x, 0, w + r * ld, ld, cols, y + r, 0, ahead);
  }
  for (; r < r1; ++r) DotTile<1, 1>(df, x, 0, w + r * ld, ld, cols, y + r, 0);
}

template <typename WT>
void MatvecT(const float* x, int64_t n_tok, int64_t ldx, const WT* w, int64_t ld, int64_t cols,
             int64_t r0, int64_t r1, float* y, int64_t ldy) {
  const DF df;
  // Several tokens: x rows not on cache lines (std::vector scratch) are copied to ones that are.
  // Each x vector is read once per row tile, and split loads cost the 16-token kernel 0.84x of its
  // speed in L2 (base/aligned_scratch.h); one token streams weights from memory and did not gain.
  // The values and their order are unchanged.
  if (n_tok > 1 &&
      (reinterpret_cast<uintptr_t>(x) % 64 != 0 || (ldx * int64_t(sizeof(float))) % 64 != 0)) {
    thread_local AlignedScratch<float> xa_buf;
    const int64_t lda = (cols + 15) / 16 * 16;
    float* xa = xa_buf.get(size_t(n_tok * lda));
    for (int64_t t = 0; t < n_tok; ++t)
      std::memcpy(xa + t * lda, x + t * ldx, size_t(cols) * sizeof(float));
    return MatvecT(xa, n_tok, lda, w, ld, cols, r0, r1, y, ldy);
  }
  if (n_tok == 1) {  // by default one sequential stream per thread (decode tuning may change it)
    const int rows = tuning(TuneParam::kDenseRows), pf = tuning(TuneParam::kDensePrefetch);
    if (rows >= 4) return OneTokenRows<4>(df, x, w, ld, cols, r0, r1, y, pf);
    if (rows == 3) return OneTokenRows<3>(df, x, w, ld, cols, r0, r1, y, pf);
    if (rows == 2) return OneTokenRows<2>(df, x, w, ld, cols, r0, r1, y, pf);
    return OneTokenRows<1>(df, x, w, ld, cols, r0, r1, y, pf);
  }
  if (n_tok > kFewMaxTok) {  // pieces of kFewMaxTok tokens (the registry binds gemm for these)
    for (int64_t t = 0; t < n_tok; t += kFewMaxTok)
      MatvecT(x + t * ldx, std::min<int64_t>(kFewMaxTok, n_tok - t), ldx, w, ld, cols, r0, r1,
              y + t * ldy, ldy);
    return;
  }
  // Several tokens: per kFewR rows, column blocks of kFewBlockCols; in each block every group of
  // kFewT tokens runs its four chains, the block's weights staying in L1 for all the tokens.
  const int64_t N = int64_t(hn::Lanes(df));
  const int64_t groups_end = cols / (4 * N) * (4 * N);
  int64_t c_end = groups_end;
  while (c_end + N <= cols) c_end += N;
  const int64_t block = std::max<int64_t>(4 * N, kFewBlockCols / (4 * N) * (4 * N));
  HWY_ALIGN float park[4 * kFewR * kFewMaxTok * hn::MaxLanes(DF())];
  const Park pk{park, N};
  for (int64_t r = r0; r < r1; r += kFewR) {
    const int nr = int(std::min<int64_t>(kFewR, r1 - r));
    const WT* wr = w + r * ld;
    for (int64_t c0 = 0;; c0 += block) {
      const int64_t c1 = std::min(c0 + block, groups_end);
      const bool last = c1 == groups_end;
      for (int64_t t = 0; t < n_tok; t += kFewT)
        ChainBlockRows<kFewR>(df, nr, int(std::min<int64_t>(kFewT, n_tok - t)), x + t * ldx, ldx,
                              wr, ld, c0, c1, c_end, c0 == 0, last, Park{pk.at(0, 0, int(t)), N});
      if (last) break;
    }
    for (int i = 0; i < nr; ++i)
      for (int64_t t = 0; t < n_tok; ++t)
        y[t * ldy + r + i] =
            Finish(df, hn::Load(df, pk.at(0, i, int(t))), hn::Load(df, pk.at(1, i, int(t))),
                   hn::Load(df, pk.at(2, i, int(t))), hn::Load(df, pk.at(3, i, int(t))),
                   x + t * ldx, wr + i * ld, c_end, cols);
  }
}

void MatvecRows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                int64_t r1, float* y, int64_t ldy) {
  if (w.dtype == DType::BF16)
    MatvecT(x, n_tok, ldx, reinterpret_cast<const uint16_t*>(w.data), w.row_stride, w.cols, r0, r1,
            y, ldy);
  else
    MatvecT(x, n_tok, ldx, reinterpret_cast<const float*>(w.data), w.row_stride, w.cols, r0, r1, y,
            ldy);
}

// ---- gemm: packed x^T panels, widened weight tiles, NR x MV register tile -------------------

#if HWY_TARGET <= HWY_AVX3
constexpr int kNR = 8;  // 32 zmm registers: 16 accumulators + 2 x vectors + broadcasts
#else
constexpr int kNR = 6;               // 16 registers: 12 accumulators + 2 x vectors + a broadcast
#endif
constexpr int64_t kKc = kGemmTileColumns;  // an x^T block of 256 x T floats stays in L2

// acc[j][m] (+)= sum_k wt[j * ldw + k] * xt[k * ldt + m * N], k < kc; stored into ct rows ldc
// apart. `first` starts from zero instead of the partial sums in ct.
template <int NR, int MV>
HWY_INLINE void Micro(DF df, const float* HWY_RESTRICT wt, int64_t ldw, int64_t kc,
                      const float* HWY_RESTRICT xt, int64_t ldt, float* HWY_RESTRICT ct,
                      int64_t ldc, bool first) {
  const size_t N = hn::Lanes(df);
  // Fully unrolled so that acc[][] lives in registers (GCC -O2 keeps loop-indexed arrays of
  // vectors on the stack otherwise, which halves the FMA rate).
  VF acc[NR][MV];
#pragma GCC unroll 16
  for (int j = 0; j < NR; ++j)
#pragma GCC unroll 4
    for (int m = 0; m < MV; ++m)
      acc[j][m] = first ? hn::Zero(df) : hn::LoadU(df, ct + j * ldc + m * N);
  for (int64_t k = 0; k < kc; ++k) {
    VF xv[MV];
#pragma GCC unroll 4
    for (int m = 0; m < MV; ++m) xv[m] = hn::LoadU(df, xt + k * ldt + m * N);
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) {
      const VF b = hn::Set(df, ScalarW(wt, j * ldw + k));  // wt may be the mapped weights
#pragma GCC unroll 4
      for (int m = 0; m < MV; ++m) acc[j][m] = hn::MulAdd(b, xv[m], acc[j][m]);
    }
  }
#pragma GCC unroll 16
  for (int j = 0; j < NR; ++j)
#pragma GCC unroll 4
    for (int m = 0; m < MV; ++m) hn::StoreU(acc[j][m], df, ct + j * ldc + m * N);
}

template <int NR>
HWY_INLINE void MicroRow(DF df, const float* wt, int64_t ldw, int64_t kc, const float* xt,
                         int64_t Tp, int64_t ldt, float* ct, bool first) {
  const int64_t N = int64_t(hn::Lanes(df));
  int64_t tv = 0;
  for (; tv + 2 * N <= Tp; tv += 2 * N)
    Micro<NR, 2>(df, wt, ldw, kc, xt + tv, ldt, ct + tv, Tp, first);
  for (; tv < Tp; tv += N) Micro<NR, 1>(df, wt, ldw, kc, xt + tv, ldt, ct + tv, Tp, first);
}

template <int NR>
void MicroRows(DF df, int nr, const float* wt, int64_t ldw, int64_t kc, const float* xt, int64_t Tp,
               int64_t ldt, float* ct, bool first) {
  if constexpr (NR > 1) {
    if (nr < NR) return MicroRows<NR - 1>(df, nr, wt, ldw, kc, xt, Tp, ldt, ct, first);
  }
  MicroRow<NR>(df, wt, ldw, kc, xt, Tp, ldt, ct, first);
}

// Widens rows [r, r + nr) x columns [k0, k0 + kc) of bf16 weights into wt (row stride kc).
void WidenTile(DF df, const uint16_t* w, int64_t ld, int64_t r, int nr, int64_t k0, int64_t kc,
               float* wt) {
  const int64_t N = int64_t(hn::Lanes(df));
  for (int j = 0; j < nr; ++j) {
    const uint16_t* src = w + (r + j) * ld + k0;
    float* dst = wt + j * kc;
    int64_t c = 0;
    for (; c + N <= kc; c += N) hn::StoreU(LoadW(df, src + c), df, dst + c);
    for (; c < kc; ++c) dst[c] = ScalarW(src, c);
  }
}

// Where the gemm's weight tiles come from. A source gives rows [r, r + nr) x packed columns
// [k0, k0 + kc) as f32 (its own storage or a buffer it fills), the original column of packed
// column k (x^T is packed in the same order), and the bytes of a row run to prefetch.
template <typename WT>
struct DenseTiles {                       // f32 rows used in place; bf16 widened once per tile
  static constexpr bool kInOrder = true;  // packed column k is column k
  const WT* w;
  int64_t ld;
  int64_t step() const { return kKc; }
  int64_t col(int64_t k) const { return k; }
  const uint8_t* run(int64_t r, int64_t k0) const {
    return reinterpret_cast<const uint8_t*>(w + r * ld + k0);
  }
  int64_t run_bytes(int64_t kc) const { return kc * int64_t(sizeof(WT)); }
  const float* tile(DF df, int64_t r, int nr, int64_t k0, int64_t kc, float* buf,
                    int64_t* ldw) const {
    if constexpr (sizeof(WT) == 2) {
      WidenTile(df, w, ld, r, nr, k0, kc, buf);
      *ldw = kc;
      return buf;
    } else {
      *ldw = ld;
      return w + r * ld + k0;
    }
  }
};

// MLX affine 4-bit (s * q + b) and NVFP4 (e2m1 * (e4m3 * scale2)) rows dequantized once per tile
// in f32, exactly as dequant_row() defines them. Packed column order is the
// code words' lane order: within each block of 8N columns, packed column j * N + l is original
// column 8l + j, so nibble j of N words is one shift + mask + convert and one contiguous store.
// Needs group % 8 == 0 and K a multiple of 8N (q4_gemm_supported).
struct Affine4Tiles {
  static constexpr bool kInOrder = false;
  const inkling::MatView* w;
  int64_t N;
  int64_t step() const { return kKc; }
  int64_t col(int64_t k) const {
    const int64_t b = k / (8 * N) * (8 * N), j = (k - b) / N, l = (k - b) % N;
    return b + 8 * l + j;
  }
  const uint8_t* run(int64_t r, int64_t k0) const { return w->row(r) + k0 / 2; }
  int64_t run_bytes(int64_t kc) const { return kc / 2; }
  const float* tile(DF df, int64_t r, int nr, int64_t k0, int64_t kc, float* buf,
                    int64_t* ldw) const {
    const hn::RebindToUnsigned<DF> du;
    const hn::RebindToSigned<DF> di;
    const size_t ssz = dtype_size(w->scale_dtype);
    const bool fp4 = w->format == inkling::WeightFormat::kNvfp4;
    alignas(64) float sc[hn::MaxLanes(df)] = {}, bi[hn::MaxLanes(df)] = {};
    // The affine groups the tile's columns fall in, [g0, g1): their scales and biases as f32 once
    // per row (the per-lane lookups below then stay in registers and L1; group % 8 == 0).
    const int64_t g0 = k0 / w->group, g1 = (k0 + kc - 1) / w->group + 1;
    // Zero-padded so that a whole vector can be loaded from any group of the tile.
    alignas(64) float gs[kKc / 8 + 1 + hn::MaxLanes(df)] = {};
    alignas(64) float gb[kKc / 8 + 1 + hn::MaxLanes(df)] = {};
    // Blocks of 8N columns start at multiples of 8N. When 8N is a multiple of the group, a block
    // starts a group and lane l's group is the block's first plus 8l / group: a permutation of one
    // vector load. When the group is a multiple of 8N, a block lies in one group. Otherwise the
    // lanes look their groups up one by one.
    const bool lookup = (8 * N) % w->group == 0, whole = w->group % (8 * N) == 0;
    alignas(64) int32_t lane_group[hn::MaxLanes(df)] = {};
    for (int64_t l = 0; l < N; ++l) lane_group[l] = int32_t(lookup ? 8 * l / w->group : 0);
    const auto perm = hn::SetTableIndices(df, lane_group);
    for (int i = 0; i < nr; ++i) {
      const uint32_t* words = reinterpret_cast<const uint32_t*>(w->row(r + i)) + k0 / 8;
      const uint8_t* srow = w->scales + size_t((r + i) * w->scale_stride) * ssz;
      const uint8_t* brow = fp4 ? nullptr : w->biases + size_t((r + i) * w->scale_stride) * ssz;
      float* dst = buf + i * kc;
      for (int64_t g = g0; !fp4 && g < g1; ++g) {
        gs[g - g0] = GroupValue(w->scale_dtype, srow, g);
        gb[g - g0] = GroupValue(w->scale_dtype, brow, g);
      }
      for (int64_t v = 0; v < kc; v += 8 * N) {
        const auto cw = hn::LoadU(du, words + v / 8);
        const auto m15 = hn::Set(du, 15u);
        if (fp4) {
          for (int64_t l = 0; l < N; ++l)  // lane l: columns k0 + v + 8l .. + 7, one 16-block
            sc[l] = 0.5f * (e4m3_to_f32(srow[(k0 + v + 8 * l) / 16]) * w->scale2);
          const VF vs = hn::Load(df, sc);  // 1/2 folded in: TwiceE2m1 gives twice the value
#pragma GCC unroll 8
          for (int j = 0; j < 8; ++j) {
            const auto q = hn::And(hn::ShiftRightSame(cw, 4 * j), m15);
            hn::StoreU(hn::Mul(TwiceE2m1(df, q), vs), df, dst + v + j * N);
          }
          continue;
        }
        VF vs, vb;
        const int64_t gv = (k0 + v) / w->group - g0;
        if (lookup) {
          vs = hn::TableLookupLanes(hn::LoadU(df, gs + gv), perm);
          vb = hn::TableLookupLanes(hn::LoadU(df, gb + gv), perm);
        } else if (whole) {
          vs = hn::Set(df, gs[gv]);
          vb = hn::Set(df, gb[gv]);
        } else {
          for (int64_t l = 0; l < N; ++l) {  // lane l: original columns k0 + v + 8l .. + 7
            const int64_t g = (k0 + v + 8 * l) / w->group - g0;
            sc[l] = gs[g];
            bi[l] = gb[g];
          }
          vs = hn::Load(df, sc), vb = hn::Load(df, bi);
        }
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) {
          const auto q = hn::And(hn::ShiftRightSame(cw, 4 * j), m15);
          const VF qf = hn::ConvertTo(df, hn::BitCast(di, q));
          hn::StoreU(hn::Add(hn::Mul(qf, vs), vb), df, dst + v + j * N);  // 2 roundings
        }
      }
    }
    *ldw = kc;
    return buf;
  }
};

// MXFP8 rows (E4M3 bytes, a power-of-two E8M0 factor per 32 columns) dequantized once per tile in
// natural column order: each value is e4m3 * 2^(e - 127) as dequant_row() gives it (exact products
// of powers of two). Needs cols % 32 == 0 (the tile width 256 is a multiple of every block).
struct Mxfp8Tiles {
  static constexpr bool kInOrder = true;
  const inkling::MatView* w;
  int64_t step() const { return kKc; }
  int64_t col(int64_t k) const { return k; }
  const uint8_t* run(int64_t r, int64_t k0) const { return w->row(r) + k0; }
  int64_t run_bytes(int64_t kc) const { return kc; }
  const float* tile(DF df, int64_t r, int nr, int64_t k0, int64_t kc, float* buf,
                    int64_t* ldw) const {
    const int64_t N = int64_t(hn::Lanes(df));
    for (int i = 0; i < nr; ++i) {
      const uint8_t* codes = w->row(r + i);
      const uint8_t* srow = w->scales + size_t((r + i) * w->scale_stride);
      float* dst = buf + i * kc;
      for (int64_t b = k0; b < k0 + kc; b += 32) {
        float f1, f2;
        mxfp8_block_factor(srow[b / 32], &f1, &f2);
        const VF v1 = hn::Set(df, f1), v2 = hn::Set(df, f2);
        for (int64_t c = b; c < b + 32; c += N) {
          const VF q = hn::Mul(E4m3Over256(df, codes + c), v1);
          hn::StoreU(f2 == 1.f ? q : hn::Mul(q, v2), df, dst + (c - k0));
        }
      }
    }
    *ldw = kc;
    return buf;
  }
};

// MLX affine rows of any other width (1, 2, 3, 5, 6, 8 bits) dequantized once per tile, s * q + b
// rounded as dequant_row() rounds it, in the word-lane layout of ops/affine_words.h with vectors
// of up to 8 lanes: each 256 columns (8 chunks of 32) become 8 * bits * steps packed columns, the
// layout's empty slots included (their x is zero, so their values do not matter).
template <int kBits>
struct AffineWordTiles {
  static constexpr bool kInOrder = false;
  using D8 = hn::CappedTag<float, 8>;
  const inkling::MatView* w;
  const AffineWordLayout* L;  // for Lanes(D8())
  int64_t step() const { return 256 / (32 * L->lanes) * L->slots; }
  int64_t col(int64_t k) const {
    const int32_t c = L->column[size_t(k % L->slots)];
    const int64_t col = k / L->slots * 32 * L->lanes + c;
    return c < 0 || col >= w->cols ? -1 : col;
  }
  int64_t block_bytes() const { return int64_t(kBits) * L->lanes * 4; }
  const uint8_t* run(int64_t r, int64_t k0) const {
    return w->row(r) + k0 / L->slots * block_bytes();
  }
  int64_t run_bytes(int64_t kc) const { return kc / L->slots * block_bytes(); }
  const float* tile(DF, int64_t r, int nr, int64_t k0, int64_t kc, float* buf, int64_t* ldw) const {
    constexpr int S = affine_words::Steps(kBits);
    const D8 d8;
    const hn::RebindToUnsigned<D8> du;
    const int64_t N = int64_t(hn::Lanes(d8)), bw = kBits * N, per = 32 * N;
    const int64_t row_words = w->cols * kBits / 32;
    const size_t ssz = dtype_size(w->scale_dtype);
    alignas(32) float sc[8][hn::MaxLanes(d8)], bi[8][hn::MaxLanes(d8)];
    float cs[hn::MaxLanes(d8)], cb[hn::MaxLanes(d8)];
    alignas(32) uint32_t tail[8 * 8 + 8];
    for (int i = 0; i < nr; ++i) {
      const int64_t row = r + i;
      const uint32_t* words = reinterpret_cast<const uint32_t*>(w->row(row));
      const uint8_t* srow = w->scales + size_t(row * w->scale_stride) * ssz;
      const uint8_t* brow = w->biases + size_t(row * w->scale_stride) * ssz;
      float* dst = buf + i * kc;
      for (int64_t b = k0 / L->slots; b < (k0 + kc) / L->slots; ++b, dst += L->slots) {
        const int64_t w0 = b * bw;
        const uint32_t* src = words + w0;
        // Partial block, or the view's last row (straddling steps read one word further on): a
        // zero-padded copy.
        if (w0 + bw >= row_words && (w0 + bw > row_words || row == w->rows - 1)) {
          std::memset(tail, 0, sizeof(tail));
          std::memcpy(tail, src, size_t(std::min(bw, row_words - w0)) * 4);
          src = tail;
        }
        // The block's N chunks of 32 columns each lie in one group (32 | group): their scales and
        // biases as f32 once, then lane k of word vector vi takes its chunk's.
        for (int64_t ch = 0; ch < N; ++ch) {
          const int64_t g = std::min(b * per + 32 * ch, w->cols - 1) / w->group;
          cs[ch] = GroupValue(w->scale_dtype, srow, g);
          cb[ch] = GroupValue(w->scale_dtype, brow, g);
        }
        for (int vi = 0; vi < kBits; ++vi)
          for (int64_t k = 0; k < N; ++k) {  // lane k: its chunk's group
            const int32_t ch = L->chunk[size_t(vi * N + k)];
            sc[vi][k] = cs[ch];
            bi[vi][k] = cb[ch];
          }
        for (int vi = 0; vi < kBits; ++vi) {
          const auto cw = hn::LoadU(du, src + vi * N);
          const auto cn = 32 % kBits == 0 ? cw : hn::LoadU(du, src + vi * N + 1);
          const auto vs = hn::Load(d8, sc[vi]), vb = hn::Load(d8, bi[vi]);
          const uint32_t* shv = L->shift.data() + vi * S * N;
          float* out = dst + vi * S * N;
          affine_words::Unroll(std::make_integer_sequence<int, S>(), [&](auto jc) HWY_ATTR {
            constexpr int J = decltype(jc)::value;
            const auto sh = 32 % kBits == 0 ? hn::Zero(du) : hn::LoadU(du, shv + J * N);
            const auto qf = affine_words::CodesF<kBits, J>(d8, cw, cn, sh);
            hn::StoreU(hn::Add(hn::Mul(qf, vs), vb), d8, out + J * N);  // 2 roundings
          });
        }
      }
    }
    *ldw = kc;
    return buf;
  }
};

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
// dst[j * ldd + i] = src[i * lds + j] for an 8 x 8 block (8 tokens' 8 columns -> 8 rows of x^T).
HWY_INLINE void Transpose8x8(const float* src, int64_t lds, float* dst, int64_t ldd) {
  __m256 r[8], t[8], u[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * lds);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int j = 0; j < 4; ++j) {
    _mm256_storeu_ps(dst + j * ldd, _mm256_permute2f128_ps(u[j], u[j + 4], 0x20));
    _mm256_storeu_ps(dst + (j + 4) * ldd, _mm256_permute2f128_ps(u[j], u[j + 4], 0x31));
  }
}
#endif

template <class Src>
void GemmT(const float* x, int64_t n_tok, int64_t ldx, const Src& src, int64_t K, int64_t r0,
           int64_t r1, float* y, int64_t ldy) {
  const DF df;
  const int64_t N = int64_t(hn::Lanes(df));
  const int64_t Tp = (n_tok + N - 1) / N * N, nrows = r1 - r0;
  // x^T rows a cache line more than Tp apart: rows a multiple of 4 KiB apart would share a few L1
  // sets, so a strip of x^T the micro-kernel reads would not stay in L1 across weight rows.
  const int64_t Ts = Tp + 16;
  thread_local AlignedScratch<float> xt_buf, ct_buf, wt_buf;  // rows of x^T / ct on cache lines
  const int64_t kstep = src.step();                           // packed columns per weight tile
  float* const xt = xt_buf.get(size_t(K * Ts));
  float* const ct = ct_buf.get(size_t(nrows * Tp));
  float* const wt = wt_buf.get(size_t(kNR * kstep));
  // x^T: [K, Tp] (rows Ts apart) in the source's column order, zero-padded tokens; 8 tokens at a
  // time keeps the writes contiguous.
  // (Tp is a multiple of the lane count only: with 4 lanes the last group may be narrower than 8.)
  for (int64_t t0 = 0; t0 < Tp; t0 += 8) {
    const int64_t tn = std::min<int64_t>(8, n_tok - t0), tw = std::min<int64_t>(8, Tp - t0);
    int64_t k = 0;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
    // Eight whole tokens of a source in column order: 8 x 8 blocks transposed in registers.
    if constexpr (Src::kInOrder)
      if (tn == 8 && tw == 8)
        for (; k + 8 <= K; k += 8) Transpose8x8(x + t0 * ldx + k, ldx, xt + k * Ts + t0, Ts);
#endif
    for (; k < K; ++k) {
      float* dst = xt + k * Ts + t0;
      const int64_t c = src.col(k);  // -1: an empty slot of the source's packing
      for (int64_t i = 0; i < tw; ++i) dst[i] = i < tn && c >= 0 ? x[(t0 + i) * ldx + c] : 0.f;
    }
  }
  for (int64_t k0 = 0; k0 < K; k0 += kstep) {
    const int64_t kc = std::min(kstep, K - k0);
    for (int64_t rr = 0; rr < nrows; rr += kNR) {
      const int nr = int(std::min<int64_t>(kNR, nrows - rr));
      // Each tile is kc columns of rows ld apart: short runs the hardware prefetcher does not
      // follow. Request the next group's runs now; the micro-kernel below hides their latency.
      const int64_t rn = rr + kNR < nrows ? rr + kNR : (k0 + kstep < K ? 0 : nrows);
      const int64_t kn = rr + kNR < nrows ? k0 : k0 + kstep;
      for (int64_t j = rn; j < std::min<int64_t>(rn + kNR, nrows); ++j) {
        const uint8_t* run = src.run(r0 + j, kn);
        for (int64_t b = 0; b < src.run_bytes(std::min(kstep, K - kn)); b += 64)
          hwy::Prefetch(run + b);
      }
      int64_t ldw = 0;
      const float* tile = src.tile(df, r0 + rr, nr, k0, kc, wt, &ldw);
      MicroRows<kNR>(df, nr, tile, ldw, kc, xt + k0 * Ts, Tp, Ts, ct + rr * Tp, k0 == 0);
      if (k0 + kc == K) {  // tile done: its nr results per token go out while still in L1
        const float* c = ct + rr * Tp;
        for (int64_t t = 0; t < n_tok; ++t) {
          float* yt = y + t * ldy + r0 + rr;
          for (int j = 0; j < nr; ++j) yt[j] = c[j * Tp + t];
        }
      }
    }
  }
}

void GemmRows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0, int64_t r1,
              float* y, int64_t ldy) {
  if (w.format == inkling::WeightFormat::kAffine && w.bits != 4) {
    const AffineWordLayout& L =
        affine_word_layout(w.bits, int(hn::Lanes(hn::CappedTag<float, 8>())));
    const int64_t K = affine_words_packed_cols(L, w.cols);
    switch (w.bits) {
      case 1:
        return GemmT(x, n_tok, ldx, AffineWordTiles<1>{&w, &L}, K, r0, r1, y, ldy);
      case 2:
        return GemmT(x, n_tok, ldx, AffineWordTiles<2>{&w, &L}, K, r0, r1, y, ldy);
      case 3:
        return GemmT(x, n_tok, ldx, AffineWordTiles<3>{&w, &L}, K, r0, r1, y, ldy);
      case 5:
        return GemmT(x, n_tok, ldx, AffineWordTiles<5>{&w, &L}, K, r0, r1, y, ldy);
      case 6:
        return GemmT(x, n_tok, ldx, AffineWordTiles<6>{&w, &L}, K, r0, r1, y, ldy);
      default:  // 8 (hwy_gemm_affine_supported)
        return GemmT(x, n_tok, ldx, AffineWordTiles<8>{&w, &L}, K, r0, r1, y, ldy);
    }
  }
  if (w.format == inkling::WeightFormat::kMxfp8) {
    GemmT(x, n_tok, ldx, Mxfp8Tiles{&w}, w.cols, r0, r1, y, ldy);
  } else if (w.format != inkling::WeightFormat::kDense) {
    const Affine4Tiles src{&w, int64_t(hn::Lanes(DF()))};
    GemmT(x, n_tok, ldx, src, w.cols, r0, r1, y, ldy);
  } else if (w.dtype == DType::BF16) {
    const DenseTiles<uint16_t> src{reinterpret_cast<const uint16_t*>(w.data), w.row_stride};
    GemmT(x, n_tok, ldx, src, w.cols, r0, r1, y, ldy);
  } else {
    const DenseTiles<float> src{reinterpret_cast<const float*>(w.data), w.row_stride};
    GemmT(x, n_tok, ldx, src, w.cols, r0, r1, y, ldy);
  }
}

size_t GemmColumnBlock() {
  return 8 * hn::Lanes(DF());
}

}  // namespace HWY_NAMESPACE
}  // namespace inkling
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "inkling/status.h"

namespace inkling {

HWY_EXPORT(MatvecRows);
HWY_EXPORT(GemmRows);
HWY_EXPORT(GemmColumnBlock);

bool hwy_dense_supported(DType t) {
  return t == DType::F32 || t == DType::BF16;
}

bool hwy_gemm_affine_supported(const MatView& w) {
  const bool width = w.bits >= 1 && w.bits <= 8 && w.bits != 4 && w.bits != 7;
  return w.format == WeightFormat::kAffine && width &&
         (w.group == 32 || w.group == 64 || w.group == 128) && w.cols % w.group == 0;
}

bool hwy_gemm_mxfp8_supported(const MatView& w) {
  return w.format == WeightFormat::kMxfp8 && w.group == 32 && w.cols % 32 == 0 &&
         kGemmTileColumns % 32 == 0;
}

bool hwy_gemm_q4_supported(const MatView& w) {
  const int64_t block = int64_t(HWY_DYNAMIC_DISPATCH(GemmColumnBlock)());
  const bool affine4 = w.format == WeightFormat::kAffine && w.bits == 4 && w.group % 8 == 0;
  const bool nvfp4 = w.format == WeightFormat::kNvfp4 && w.group == 16;
  return (affine4 || nvfp4) && w.cols % block == 0 && kGemmTileColumns % block == 0;
}

void hwy_matvec_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                     int64_t r1, float* y, int64_t ldy) {
  HWY_DYNAMIC_DISPATCH(MatvecRows)(x, n_tok, ldx, w, r0, r1, y, ldy);
}

void hwy_gemm_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                   int64_t r1, float* y, int64_t ldy) {
  INK_CHECK(w.format == WeightFormat::kDense || hwy_gemm_q4_supported(w) ||
            hwy_gemm_affine_supported(w) || hwy_gemm_mxfp8_supported(w));
  HWY_DYNAMIC_DISPATCH(GemmRows)(x, n_tok, ldx, w, r0, r1, y, ldy);
}

}  // namespace inkling
#endif  // HWY_ONCE
