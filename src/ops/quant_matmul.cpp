// Fused quantized matmul kernels (Highway, compiled for every target, picked at run time).
// Affine: per group, s * sum(x * q) + b * sum(x), with sum(x) per group computed once per call;
// NVFP4: per 16-block, (e4m3 * scale2) * sum(x * e2m1); MXFP8: per 32-block,
// 2^(e8m0 - 127) * sum(x * e4m3), the E4M3 bytes widened through f16. Codes are widened from bytes
// in registers; 4-bit codes pair with x deinterleaved (even/odd columns) by LoadInterleaved2.
// Tokens are processed in blocks of up to 4 so each decoded chunk feeds several products.
// Affine 4-bit with power-of-two groups (the MLX checkpoints) takes Affine4Words instead: x is
// permuted once per call to match whole u32 code words, and 4 / 2 rows share each x load.
#include "ops/quant_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/quant_matmul.cpp"
#include <hwy/cache_control.h>
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "ops/e2m1-inl.h"
#include "ops/e4m3-inl.h"

#include "base/aligned_scratch.h"
#include "base/dtype.h"
#include "ops/quant.h"

HWY_BEFORE_NAMESPACE();
namespace inkling {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace {  // internal linkage: other Highway files define their own per-target helpers

constexpr int kMaxTok = 4;  // tokens per block (accumulators held in registers)

// Scale / bias of group g in a row of scales stored as `t`.
inline float load_scale(DType t, const uint8_t* p, int64_t g) {
  return load_as_f32(t, p, size_t(g));
}

// Affine rows for NT tokens. xsum[t * ngroups + g] = sum of x over group g of token t.
template <int NT, int kBits>
void AffineRows(const float* x, int64_t ldx, const float* xsum, const inkling::MatView& w,
                int64_t r0, int64_t r1, float* y, int64_t ldy) {
  const hn::CappedTag<float, 16> d;
  const hn::RebindToUnsigned<decltype(d)> du;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::Rebind<uint8_t, decltype(d)> d8;
  const int64_t N = int64_t(hn::Lanes(d));
  const int64_t group = w.group, ngroups = w.cols / group;
  const size_t ssz = dtype_size(w.scale_dtype);
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* codes = w.row(r);
    const uint8_t* srow = w.scales + size_t(r * w.scale_stride) * ssz;
    const uint8_t* brow = w.biases + size_t(r * w.scale_stride) * ssz;
    decltype(hn::Zero(d)) tot[NT];
    float bsum[NT], tsum[NT];  // tsum: the groups' scalar tails (none for groups of 32k)
    for (int t = 0; t < NT; ++t) tot[t] = hn::Zero(d), bsum[t] = 0.f, tsum[t] = 0.f;
    bool tails = false;
    for (int64_t g = 0; g < ngroups; ++g) {
      decltype(hn::Zero(d)) acc[NT];
      for (int t = 0; t < NT; ++t) acc[t] = hn::Zero(d);
      const int64_t c_end = (g + 1) * group;
      int64_t c = g * group;  // whole vectors, then [c, c_end) one column at a time
      if constexpr (kBits == 4) {
        for (; c % 2 == 0 && c + 2 * N <= c_end; c += 2 * N) {
          const auto q = hn::PromoteTo(du, hn::LoadU(d8, codes + c / 2));
          const auto lo = hn::ConvertTo(d, hn::BitCast(di, hn::And(q, hn::Set(du, 15u))));
          const auto hi = hn::ConvertTo(d, hn::BitCast(di, hn::ShiftRight<4>(q)));
          for (int t = 0; t < NT; ++t) {
            decltype(hn::Zero(d)) xe, xo;
            hn::LoadInterleaved2(d, x + t * ldx + c, xe, xo);
            acc[t] = hn::MulAdd(xe, lo, acc[t]);
            acc[t] = hn::MulAdd(xo, hi, acc[t]);
          }
        }
      } else {
        for (; c + N <= c_end; c += N) {
          const auto q =
              hn::ConvertTo(d, hn::BitCast(di, hn::PromoteTo(du, hn::LoadU(d8, codes + c))));
          for (int t = 0; t < NT; ++t)
            acc[t] = hn::MulAdd(hn::LoadU(d, x + t * ldx + c), q, acc[t]);
        }
      }
      const float s = load_scale(w.scale_dtype, srow, g), b = load_scale(w.scale_dtype, brow, g);
      if (c < c_end) {  // a group that is not a whole number of vectors (or starts mid-byte)
        tails = true;
        for (int t = 0; t < NT; ++t) {
          float a = 0.f;
          for (int64_t k = c; k < c_end; ++k) {
            const int q = kBits == 4 ? (codes[k / 2] >> (4 * (k % 2))) & 15 : codes[k];
            a += x[t * ldx + k] * float(q);
          }
          tsum[t] += s * a;
        }
      }
      const auto vs = hn::Set(d, s);
      for (int t = 0; t < NT; ++t) {
        tot[t] = hn::MulAdd(vs, acc[t], tot[t]);
        bsum[t] += b * xsum[t * ngroups + g];
      }
    }
    for (int t = 0; t < NT; ++t) {
      const float v = hn::GetLane(hn::SumOfLanes(d, tot[t]));
      y[t * ldy + r] = (tails ? v + tsum[t] : v) + bsum[t];
    }
  }
}

// ---- 4-bit affine, word-lane layout -------------------------------------------------------
// Lane k of a u32 code vector holds the 8 nibbles of columns 8k..8k+7 (low nibble first).
// Nibble j of every lane is one shift + mask away, so x is permuted once per call into
// xp[blk * 8N + j * N + k] = x[blk * 8N + 8k + j] (N lanes per vector): each decoded nibble
// vector then meets one contiguous x vector. No deinterleaving in the inner loop, one wide code
// load per row and vector, R rows share every x load. The next R rows are prefetched at the same
// offsets as these are read (1.25-1.3x from DRAM: the hardware prefetcher alone fell behind).
// (ORing the nibble into the mantissa of 1.0 instead of converting measured 2-5% slower.)

template <int J, class DU, class VU>
HWY_INLINE VU Nibble(DU du, VU cw) {
  if constexpr (J == 0) return hn::And(cw, hn::Set(du, 15u));
  if constexpr (J == 7) return hn::ShiftRight<28>(cw);
  return hn::And(hn::ShiftRight<4 * J>(cw), hn::Set(du, 15u));
}

template <class D, class VU>
HWY_INLINE auto NibbleF(D d, VU q) {
  const hn::RebindToSigned<D> di;
  return hn::ConvertTo(d, hn::BitCast(di, q));
}

// Rows [r0, r1) in blocks of R. xp: NT permuted tokens, stride xps (zero padded to whole
// vectors). xsum[t * (ngroups + N) + g] (zero padded). sf: scratch of (R + 1) * (ngroups + N)
// floats.
template <int NT, int R>
void Affine4Words(const float* xp, int64_t xps, const float* xsum, const inkling::MatView& w,
                  int64_t r0, int64_t r1, float* y, int64_t ldy, float* sf) {
  const hn::CappedTag<float, 16> d;
  const hn::RebindToUnsigned<decltype(d)> du;
  using VF = decltype(hn::Zero(d));
  using VU = decltype(hn::Zero(du));
  const int64_t N = int64_t(hn::Lanes(d));
  const int64_t group = w.group, ngroups = w.cols / group;
  const int64_t W = w.cols / 8, WG = group / 8, B = std::max(N, WG);
  const int64_t sfs = ngroups + N;
  const size_t ssz = dtype_size(w.scale_dtype);
  // Lane k of a vector spanning several groups takes the scale of group k / WG.
  int32_t idx_arr[hn::MaxLanes(d)];
  int wg_shift = 0;
  while ((int64_t(1) << wg_shift) < WG) ++wg_shift;
  for (size_t k = 0; k < hn::MaxLanes(d); ++k) idx_arr[k] = int32_t(k >> wg_shift);
  const auto idx = hn::SetTableIndices(d, idx_arr);
  alignas(64) uint32_t tail[16] = {};
  for (int64_t rb = r0; rb < r1; rb += R) {
    if (rb + R > r1) {  // fewer than R rows left
      Affine4Words<NT, 1>(xp, xps, xsum, w, rb, r1, y, ldy, sf);
      return;
    }
    const uint8_t* codes[R];
    const uint8_t* ahead[R];  // the same row of the next block, prefetched as this one is read
    float bias[R][NT];
    _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i) {
      const int64_t r = rb + i;
      codes[i] = w.row(r);
      ahead[i] = w.row(std::min(rb + R + i, r1 - 1));
      const uint8_t* srow = w.scales + size_t(r * w.scale_stride) * ssz;
      const uint8_t* brow = w.biases + size_t(r * w.scale_stride) * ssz;
      float* s = sf + i * sfs;
      float* bs = sf + R * sfs;  // biases, then folded with the scales below
      if (w.scale_dtype == DType::BF16) {
        const uint16_t* s16 = reinterpret_cast<const uint16_t*>(srow);
        const uint16_t* b16 = reinterpret_cast<const uint16_t*>(brow);
        for (int64_t g = 0; g < ngroups; ++g) {
          s[g] = bits_to_f32(uint32_t(s16[g]) << 16);
          bs[g] = bits_to_f32(uint32_t(b16[g]) << 16);
        }
      } else {
        for (int64_t g = 0; g < ngroups; ++g) {
          s[g] = load_scale(w.scale_dtype, srow, g);
          bs[g] = load_scale(w.scale_dtype, brow, g);
        }
      }
      for (int64_t g = ngroups; g < sfs; ++g) bs[g] = 0.f;
      _Pragma("GCC unroll 8") for (int t = 0; t < NT;
                                   ++t) {  // bias term: dot(bs, xsum) in vectors (zero padded)
        const float* xs = xsum + t * sfs;
        VF a = hn::Zero(d);
        for (int64_t g = 0; g < ngroups; g += N)
          a = hn::MulAdd(hn::LoadU(d, bs + g), hn::LoadU(d, xs + g), a);
        bias[i][t] = hn::GetLane(hn::SumOfLanes(d, a));
      }
      for (int64_t g = ngroups; g < sfs; ++g) s[g] = 0.f;
    }
    VF tot[R][NT];
    _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i)
        _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) tot[i][t] = hn::Zero(d);
    for (int64_t wb = 0; wb < W; wb += B) {
      VF acc[R][NT];
      _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i)
          _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) acc[i][t] = hn::Zero(d);
      for (int64_t wi = wb; wi < wb + B && wi < W; wi += N) {
        VU cw[R];
        if (wi + N <= W) {
          _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i) {
            cw[i] = hn::LoadU(du, reinterpret_cast<const uint32_t*>(codes[i]) + wi);
            hwy::Prefetch(ahead[i] + 4 * wi);
          }
        } else {
          _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i) {
            std::memcpy(tail, codes[i] + 4 * wi, size_t(4 * (W - wi)));
            cw[i] = hn::Load(du, tail);
          }
        }
        const float* xv = xp + wi * 8;
#define INKLING_Q4_STEP(J)                                             \
  {                                                                    \
    VF xj[NT];                                                         \
    _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) xj[t] =       \
        hn::LoadU(d, xv + t * xps + (J)*N);                            \
    _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i) {              \
      const VF q = NibbleF(d, Nibble<J>(du, cw[i]));                   \
      _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) acc[i][t] = \
          hn::MulAdd(xj[t], q, acc[i][t]);                             \
    }                                                                  \
  }
        INKLING_Q4_STEP(0)
        INKLING_Q4_STEP(1)
        INKLING_Q4_STEP(2)
        INKLING_Q4_STEP(3)
        INKLING_Q4_STEP(4)
        INKLING_Q4_STEP(5)
        INKLING_Q4_STEP(6)
        INKLING_Q4_STEP(7)
#undef INKLING_Q4_STEP
      }
      _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i) {
        const float* s = sf + i * sfs + wb / WG;
        const VF sv = N > WG ? hn::TableLookupLanes(hn::LoadU(d, s), idx) : hn::Set(d, s[0]);
        _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) tot[i][t] =
            hn::MulAdd(sv, acc[i][t], tot[i][t]);
      }
    }
    _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i)
        _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) y[t * ldy + rb + i] =
            hn::GetLane(hn::SumOfLanes(d, tot[i][t])) + bias[i][t];
  }
}

// Permutes NT tokens of x into the word-lane layout (see above), zero padded.
void PermuteX(const float* x, int64_t ldx, int nt, int64_t cols, int64_t N, float* xp,
              int64_t xps) {
  for (int t = 0; t < nt; ++t) {
    float* o = xp + t * xps;
    const float* in = x + t * ldx;
    const int64_t full = cols / (8 * N) * (8 * N);
    for (int64_t b = 0; b < full; b += 8 * N)  // whole vectors
      for (int64_t k = 0; k < N; ++k)
        for (int64_t j = 0; j < 8; ++j) o[b + j * N + k] = in[b + 8 * k + j];
    for (int64_t c = full; c < xps; ++c) o[c] = 0.f;
    for (int64_t c = full; c < cols; ++c) {
      const int64_t wi = (c - full) / 8, j = c % 8;
      o[full + j * N + wi] = in[c];
    }
  }
}

// NVFP4 rows for NT tokens.
template <int NT>
void Nvfp4Rows(const float* x, int64_t ldx, const inkling::MatView& w, int64_t r0, int64_t r1,
               float* y, int64_t ldy) {
  const hn::CappedTag<float, 8> d;  // 2N <= 16: a chunk never straddles two blocks
  const hn::RebindToUnsigned<decltype(d)> du;
  const hn::Rebind<uint8_t, decltype(d)> d8;
  const int64_t N = int64_t(hn::Lanes(d));
  const int64_t nblocks = w.cols / 16;
  const auto zero = hn::Zero(d);
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* codes = w.row(r);
    const uint8_t* srow = w.scales + size_t(r * w.scale_stride);
    decltype(hn::Zero(d)) tot[NT];
    for (int t = 0; t < NT; ++t) tot[t] = zero;
    for (int64_t blk = 0; blk < nblocks; ++blk) {
      decltype(hn::Zero(d)) acc[NT];
      for (int t = 0; t < NT; ++t) acc[t] = zero;
      for (int64_t c = blk * 16; c < blk * 16 + 16; c += 2 * N) {
        const auto q = hn::PromoteTo(du, hn::LoadU(d8, codes + c / 2));
        // Codes decode to twice their value; the factor 1/2 is folded into the block scale.
        const auto lo = TwiceE2m1(d, q), hi = TwiceE2m1(d, hn::ShiftRight<4>(q));
        for (int t = 0; t < NT; ++t) {
          decltype(hn::Zero(d)) xe, xo;
          hn::LoadInterleaved2(d, x + t * ldx + c, xe, xo);
          acc[t] = hn::MulAdd(xe, lo, acc[t]);
          acc[t] = hn::MulAdd(xo, hi, acc[t]);
        }
      }
      const auto vs = hn::Set(d, 0.5f * (e4m3_to_f32(srow[blk]) * w.scale2));
      for (int t = 0; t < NT; ++t) tot[t] = hn::MulAdd(vs, acc[t], tot[t]);
    }
    for (int t = 0; t < NT; ++t) y[t * ldy + r] = hn::GetLane(hn::SumOfLanes(d, tot[t]));
  }
}

// MXFP8 rows for NT tokens: per block of 32 columns, sum(x * e4m3) in f32 lanes over two
// accumulators (even and odd vectors of the block: two FMA chains), then the block's power-of-two
// factor (exact, so the order of the two only matters at the range's ends). Each (row, token)
// sums in the same order whatever NT is. One row at a time: on AVX2 (2 vCPU EPYC) two or four
// rows sharing each x load measured 0.6x and 0.5x of it (register spills).
template <int NT>
void Mxfp8Rows(const float* x, int64_t ldx, const inkling::MatView& w, int64_t r0, int64_t r1,
               float* y, int64_t ldy) {
  const hn::CappedTag<float, 16> d;  // N divides 32: a vector never straddles two blocks
  using VF = decltype(hn::Zero(d));
  const int64_t N = int64_t(hn::Lanes(d));
  const int64_t nblocks = w.cols / 32;
  const auto zero = hn::Zero(d);
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* codes = w.row(r);
    const uint8_t* srow = w.scales + size_t(r * w.scale_stride);
    VF tot[NT];
    for (int t = 0; t < NT; ++t) tot[t] = zero;
    for (int64_t blk = 0; blk < nblocks; ++blk) {
      VF acc[2][NT];
      for (int t = 0; t < NT; ++t) acc[0][t] = acc[1][t] = zero;
      for (int64_t c = blk * 32; c < blk * 32 + 32; c += 2 * N)  // 2N <= 32 divides 32
        for (int j = 0; j < 2; ++j) {
          const VF q = E4m3Over256(d, codes + c + j * N);
          for (int t = 0; t < NT; ++t)
            acc[j][t] = hn::MulAdd(hn::LoadU(d, x + t * ldx + c + j * N), q, acc[j][t]);
        }
      float f1, f2;
      mxfp8_block_factor(srow[blk], &f1, &f2);
      const auto vs = hn::Set(d, f1), v2 = hn::Set(d, f2);
      for (int t = 0; t < NT; ++t) {
        const VF a = hn::Add(acc[0][t], acc[1][t]);
        tot[t] = f2 == 1.f ? hn::MulAdd(vs, a, tot[t]) : hn::MulAdd(v2, hn::Mul(vs, a), tot[t]);
      }
    }
    for (int t = 0; t < NT; ++t) y[t * ldy + r] = hn::GetLane(hn::SumOfLanes(d, tot[t]));
  }
}

template <int NT>
void AffineDispatch(const float* x, int64_t ldx, const float* xsum, const inkling::MatView& w,
                    int64_t r0, int64_t r1, float* y, int64_t ldy) {
  if (w.bits == 4)
    AffineRows<NT, 4>(x, ldx, xsum, w, r0, r1, y, ldy);
  else
    AffineRows<NT, 8>(x, ldx, xsum, w, r0, r1, y, ldy);
}

void QuantMatmulRows(const float* x, int64_t n_tok, int64_t ldx, const inkling::MatView& w,
                     int64_t r0, int64_t r1, float* y, int64_t ldy) {
  thread_local std::vector<float> xsum, sf, xs;
  thread_local AlignedScratch<float> xp_buf;  // permuted x on cache lines (base/aligned_scratch.h)
  const bool affine = w.format == inkling::WeightFormat::kAffine;
  const int64_t ngroups = affine ? w.cols / w.group : 0;
  for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxTok) {
    const int nt = int(std::min<int64_t>(kMaxTok, n_tok - t0));
    const float* xb = x + t0 * ldx;
    float* yb = y + t0 * ldy;
    if (w.format == inkling::WeightFormat::kMxfp8) {
      switch (nt) {
        case 1:
          Mxfp8Rows<1>(xb, ldx, w, r0, r1, yb, ldy);
          break;
        case 2:
          Mxfp8Rows<2>(xb, ldx, w, r0, r1, yb, ldy);
          break;
        case 3:
          Mxfp8Rows<3>(xb, ldx, w, r0, r1, yb, ldy);
          break;
        default:
          Mxfp8Rows<4>(xb, ldx, w, r0, r1, yb, ldy);
          break;
      }
      continue;
    }
    if (!affine) {
      switch (nt) {
        case 1:
          Nvfp4Rows<1>(xb, ldx, w, r0, r1, yb, ldy);
          break;
        case 2:
          Nvfp4Rows<2>(xb, ldx, w, r0, r1, yb, ldy);
          break;
        case 3:
          Nvfp4Rows<3>(xb, ldx, w, r0, r1, yb, ldy);
          break;
        default:
          Nvfp4Rows<4>(xb, ldx, w, r0, r1, yb, ldy);
          break;
      }
      continue;
    }
    // Per-group sums of x (the bias term), once per token block.
    if (xsum.size() < size_t(nt * ngroups)) xsum.resize(size_t(nt * ngroups));
    for (int t = 0; t < nt; ++t)
      for (int64_t g = 0; g < ngroups; ++g) {
        const float* xg = xb + t * ldx + g * w.group;
        float s = 0.f;
        for (int64_t c = 0; c < w.group; ++c) s += xg[c];
        xsum[size_t(t * ngroups + g)] = s;
      }
    const hn::CappedTag<float, 16> d;
    const int64_t N = int64_t(hn::Lanes(d)), WG = w.group / 8;
    if (w.bits == 4 && w.group % 8 == 0 && (WG & (WG - 1)) == 0) {
      const int64_t xps = (w.cols + 8 * N - 1) / (8 * N) * (8 * N);
      float* const xp = xp_buf.get(size_t(nt * xps));
      if (sf.size() < size_t(5 * (ngroups + N))) sf.resize(size_t(5 * (ngroups + N)));
      PermuteX(xb, ldx, nt, w.cols, N, xp, xps);
      const int64_t sfs = ngroups + N;  // xsum again, padded per token
      if (xs.size() < size_t(nt * sfs)) xs.resize(size_t(nt * sfs));
      for (int t = 0; t < nt; ++t)
        for (int64_t g = 0; g < sfs; ++g)
          xs[size_t(t * sfs + g)] = g < ngroups ? xsum[size_t(t * ngroups + g)] : 0.f;
      switch (nt) {
        case 1:
          Affine4Words<1, 4>(xp, xps, xs.data(), w, r0, r1, yb, ldy, sf.data());
          break;
        case 2:
          Affine4Words<2, 2>(xp, xps, xs.data(), w, r0, r1, yb, ldy, sf.data());
          break;
        case 3:
          Affine4Words<3, 2>(xp, xps, xs.data(), w, r0, r1, yb, ldy, sf.data());
          break;
        default:
          Affine4Words<4, 2>(xp, xps, xs.data(), w, r0, r1, yb, ldy, sf.data());
          break;
      }
      continue;
    }
    switch (nt) {
      case 1:
        AffineDispatch<1>(xb, ldx, xsum.data(), w, r0, r1, yb, ldy);
        break;
      case 2:
        AffineDispatch<2>(xb, ldx, xsum.data(), w, r0, r1, yb, ldy);
        break;
      case 3:
        AffineDispatch<3>(xb, ldx, xsum.data(), w, r0, r1, yb, ldy);
        break;
      default:
        AffineDispatch<4>(xb, ldx, xsum.data(), w, r0, r1, yb, ldy);
        break;
    }
  }
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace inkling
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "inkling/status.h"
#include "ops/quant.h"

namespace inkling {

HWY_EXPORT(QuantMatmulRows);

void quant_matmul_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                       int64_t r1, float* y, int64_t ldy) {
  INK_CHECK(w.format == WeightFormat::kNvfp4 ||
            (w.format == WeightFormat::kMxfp8 && w.cols % 32 == 0) ||
            (w.format == WeightFormat::kAffine && (w.bits == 4 || w.bits == 8)));
  HWY_DYNAMIC_DISPATCH(QuantMatmulRows)(x, n_tok, ldx, w, r0, r1, y, ldy);
}

void quant_matmul_rows_ref(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                           int64_t r1, float* y, int64_t ldy) {
  std::vector<float> row(size_t(w.cols));
  for (int64_t r = r0; r < r1; ++r) {
    dequant_row(w, r, row.data());
    for (int64_t t = 0; t < n_tok; ++t) {
      double acc = 0;
      for (int64_t c = 0; c < w.cols; ++c) acc += double(x[t * ldx + c]) * double(row[size_t(c)]);
      y[t * ldy + r] = float(acc);
    }
  }
}

}  // namespace inkling
#endif  // HWY_ONCE
