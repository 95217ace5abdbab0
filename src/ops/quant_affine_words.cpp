// MLX affine kernels for every code width in the word-lane layout (see ops/affine_words.h and
// quant_affine_words.h). Per block of N chunks (32 * N columns) and row: `bits` vectors of N
// code words, each decoded in `steps` steps; step j of word vector i meets the permuted x slots
// (i, j) and accumulates into one f32 vector per row and token; the vector is then scaled lane by
// lane by its chunk's group scale (a table lookup into the row's scales) and added to the row
// total. The bias term b * sum(x) is a dot product of the row's biases with per-group sums of x,
// once per row. When bits divides 32 the shifts are immediates; otherwise they come from the
// layout's per-lane table, and steps whose code may straddle two words OR in the next word
// (loaded one word further on). Rows are read in blocks of R with the next block prefetched.
// 8-bit codes are bytes and skip the layout (ByteRows: natural column order).
#include "ops/quant_affine_words.h"

#include <algorithm>
#include <cstring>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/quant_affine_words.cpp"
#include <hwy/cache_control.h>
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "ops/affine_words-inl.h"

#include "base/aligned_scratch.h"
#include "base/dtype.h"
#include "ops/affine_words.h"
#include "ops/tuning.h"

HWY_BEFORE_NAMESPACE();
namespace inkling {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace {  // internal linkage: other Highway files define their own per-target helpers

using DF = hn::CappedTag<float, 16>;
using DU = hn::RebindToUnsigned<DF>;
using VF = hn::Vec<DF>;
using VU = hn::Vec<DU>;

constexpr int kMaxTok = 4;  // tokens per pass (accumulators held in registers)

using affine_words::CodesF;
using affine_words::Steps;
using affine_words::Unroll;

// What one call prepares for every row.
struct Call {
  const AffineWordLayout* L;
  const float* xp;  // NT tokens in slot order, xps apart
  int64_t xps;
  const float* xsum;  // per token, per group sums of x, sfs apart, zero padded
  int64_t sfs;
  int64_t blocks;     // blocks of 32 * N columns in a row (the last may be partial)
  int64_t row_words;  // u32 code words per row
  bool lookup;        // a block spans whole groups: lane scales by a table lookup
};

// Group scales (f32) of row r into s[0, sfs) and its bias term per token into bias[t].
template <int NT>
HWY_INLINE void RowSidecars(const inkling::MatView& w, int64_t r, const Call& c, float* s,
                            float* bs, float* bias) {
  const DF df;
  const int64_t N = int64_t(hn::Lanes(df)), ng = w.cols / w.group;
  const size_t ssz = dtype_size(w.scale_dtype);
  const uint8_t* srow = w.scales + size_t(r * w.scale_stride) * ssz;
  const uint8_t* brow = w.biases + size_t(r * w.scale_stride) * ssz;
  if (w.scale_dtype == DType::BF16) {
    const uint16_t* s16 = reinterpret_cast<const uint16_t*>(srow);
    const uint16_t* b16 = reinterpret_cast<const uint16_t*>(brow);
    for (int64_t g = 0; g < ng; ++g) {
      s[g] = bits_to_f32(uint32_t(load_unaligned(s16 + g)) << 16);
      bs[g] = bits_to_f32(uint32_t(load_unaligned(b16 + g)) << 16);
    }
  } else {
    for (int64_t g = 0; g < ng; ++g) {
      s[g] = load_as_f32(w.scale_dtype, srow, size_t(g));
      bs[g] = load_as_f32(w.scale_dtype, brow, size_t(g));
    }
  }
  for (int64_t g = ng; g < c.sfs; ++g) s[g] = bs[g] = 0.f;
  for (int t = 0; t < NT; ++t) {  // sum_g b_g * xsum_g in vectors (zero padded)
    const float* xs = c.xsum + t * c.sfs;
    VF a = hn::Zero(df);
    for (int64_t g = 0; g < ng; g += N)
      a = hn::MulAdd(hn::LoadU(df, bs + g), hn::LoadU(df, xs + g), a);
    bias[t] = hn::GetLane(hn::SumOfLanes(df, a));
  }
}

// Rows [r0, r1) in blocks of R rows for NT tokens. sf: scratch of (R + 1) * sfs floats.
template <int kBits, int NT, int R>
void WordRows(const Call& c, const inkling::MatView& w, int64_t r0, int64_t r1, float* y,
              int64_t ldy, float* sf) {
  constexpr int S = Steps(kBits);
  const DF df;
  const DU du;
  const int64_t N = int64_t(hn::Lanes(df));
  const AffineWordLayout& L = *c.L;
  const int64_t vw = N;          // words per vector
  const int64_t bw = kBits * N;  // words per block
  const int64_t per = 32 * N;    // columns per block
  const int64_t group = w.group;
  int gshift = 0;
  while ((int64_t(32) << gshift) < group) ++gshift;
  // Lane scale indices per word vector i of a block: the group of the lane's chunk.
  using Idx = decltype(hn::SetTableIndices(df, static_cast<const int32_t*>(nullptr)));
  Idx idx[8];
  if (c.lookup) {
    alignas(64) int32_t tmp[hn::MaxLanes(df)];
    for (int i = 0; i < kBits; ++i) {
      for (int64_t k = 0; k < N; ++k) tmp[k] = L.chunk[size_t(i * N + k)] >> gshift;
      idx[i] = hn::SetTableIndices(df, tmp);
    }
  }
  alignas(64) uint32_t tail[R][8 * 16 + 16];
  alignas(64) float lane_scale[hn::MaxLanes(df)];
  for (int64_t rb = r0; rb < r1; rb += R) {
    if (rb + R > r1) {  // fewer than R rows left
      WordRows<kBits, NT, 1>(c, w, rb, r1, y, ldy, sf);
      return;
    }
    const uint32_t* codes[R];
    const uint8_t* ahead[R];  // the same row of the next block of rows, prefetched as this is read
    float bias[R][NT];
    float* bs = sf + R * c.sfs;
    _Pragma("GCC unroll 4") for (int i = 0; i < R; ++i) {
      codes[i] = reinterpret_cast<const uint32_t*>(w.row(rb + i));
      ahead[i] = w.row(std::min(rb + R + i, r1 - 1));
      RowSidecars<NT>(w, rb + i, c, sf + i * c.sfs, bs, bias[i]);
    }
    VF tot[R][NT];
    _Pragma("GCC unroll 4") for (int i = 0; i < R; ++i)
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; ++t) tot[i][t] = hn::Zero(df);
    for (int64_t b = 0; b < c.blocks; ++b) {
      const int64_t w0 = b * bw;
      const uint32_t* src[R];
      // The last block reads through a zero-padded copy when it is partial, and in the view's
      // last row (straddling steps load one word past the vector; past a row's end that word is
      // the next row's, which only the last row lacks).
      const bool last = b + 1 == c.blocks;
      _Pragma("GCC unroll 4") for (int i = 0; i < R; ++i) {
        src[i] = codes[i] + w0;
        if (last && (w0 + bw > c.row_words || rb + i == w.rows - 1)) {
          const int64_t n = std::min(bw, c.row_words - w0);
          std::memset(tail[i], 0, sizeof(tail[i]));
          std::memcpy(tail[i], codes[i] + w0, size_t(n) * 4);
          src[i] = tail[i];
        }
      }
      const int64_t g0 = b * per / group;  // first group of the block
      const float* xb = c.xp + b * L.slots;
      for (int vi = 0; vi < kBits; ++vi) {
        VU cw[R], cn[R];
        _Pragma("GCC unroll 4") for (int i = 0; i < R; ++i) {
          cw[i] = hn::LoadU(du, src[i] + vi * vw);
          if constexpr (32 % kBits != 0)
            cn[i] = hn::LoadU(du, src[i] + vi * vw + 1);
          else
            cn[i] = cw[i];
          hwy::Prefetch(ahead[i] + 4 * (w0 + vi * vw));
        }
        VF acc[R][NT];
        _Pragma("GCC unroll 4") for (int i = 0; i < R; ++i)
            _Pragma("GCC unroll 4") for (int t = 0; t < NT; ++t) acc[i][t] = hn::Zero(df);
        const float* xv = xb + vi * S * N;
        const uint32_t* shv = L.shift.data() + vi * S * N;
        Unroll(std::make_integer_sequence<int, S>(), [&](auto jc) HWY_ATTR {
          constexpr int J = decltype(jc)::value;
          VF xj[NT];
          _Pragma("GCC unroll 4") for (int t = 0; t < NT; ++t) xj[t] =
              hn::LoadU(df, xv + t * c.xps + J * N);
          const VU sh = 32 % kBits == 0 ? hn::Zero(du) : hn::LoadU(du, shv + J * N);
          _Pragma("GCC unroll 4") for (int i = 0; i < R; ++i) {
            const VF q = CodesF<kBits, J>(df, cw[i], cn[i], sh);
            _Pragma("GCC unroll 4") for (int t = 0; t < NT; ++t) acc[i][t] =
                hn::MulAdd(xj[t], q, acc[i][t]);
          }
        });
        _Pragma("GCC unroll 4") for (int i = 0; i < R; ++i) {
          const float* s = sf + i * c.sfs;
          VF sv;
          if (c.lookup) {
            sv = hn::TableLookupLanes(hn::LoadU(df, s + g0), idx[vi]);
          } else {
            for (int64_t k = 0; k < N; ++k)
              lane_scale[k] = s[(b * per + 32 * L.chunk[size_t(vi * N + k)]) / group];
            sv = hn::Load(df, lane_scale);
          }
          _Pragma("GCC unroll 4") for (int t = 0; t < NT; ++t) tot[i][t] =
              hn::MulAdd(sv, acc[i][t], tot[i][t]);
        }
      }
    }
    _Pragma("GCC unroll 4") for (int i = 0; i < R; ++i)
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; ++t) y[t * ldy + rb + i] =
            hn::GetLane(hn::SumOfLanes(df, tot[i][t])) + bias[i][t];
  }
}

// 8 bits: a code is a byte, so no word-lane layout is needed. Columns in natural order: N bytes
// widen to u32 lanes and meet x as it lies; a vector lies within one group (groups of 32, 64, 128
// are whole vectors), so each group's products gather in f32 and take its scale as a broadcast.
// R rows share each x load; two chains per row and token cover FMA latency for one token, and
// every token count keeps them so a row's sum has one order (row-count invariance, formats.h).
template <int NT, int R>
void ByteRows(const Call& c, const float* x, int64_t ldx, const inkling::MatView& w, int64_t r0,
              int64_t r1, float* y, int64_t ldy, float* sf, int pf = 1) {  // pf: blocks ahead
  constexpr int C = 2;  // chains per row and token
  const DF df;
  const DU du;
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<uint8_t, DF> d8;
  const int64_t N = int64_t(hn::Lanes(df)), group = w.group, ngroups = w.cols / group;
  for (int64_t rb = r0; rb < r1; rb += R) {
    if (rb + R > r1) {  // fewer than R rows left
      ByteRows<NT, 1>(c, x, ldx, w, rb, r1, y, ldy, sf, pf);
      return;
    }
    const uint8_t* codes[R];
    const uint8_t* ahead[R];  // the same row of the next block of rows, prefetched as this is read
    float bias[R][NT];
    float* bs = sf + R * c.sfs;
    _Pragma("GCC unroll 4") for (int i = 0; i < R; ++i) {
      codes[i] = w.row(rb + i);
      ahead[i] = w.row(std::min(rb + R * std::max(pf, 1) + i, r1 - 1));
      RowSidecars<NT>(w, rb + i, c, sf + i * c.sfs, bs, bias[i]);
    }
    VF tot[R][NT];
    _Pragma("GCC unroll 4") for (int i = 0; i < R; ++i)
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; ++t) tot[i][t] = hn::Zero(df);
    for (int64_t g = 0; g < ngroups; ++g) {
      const int64_t c0 = g * group;
      if (pf > 0) {
        _Pragma("GCC unroll 4") for (int i = 0; i < R; ++i) {
          hwy::Prefetch(ahead[i] + c0);
          if (group > 64) hwy::Prefetch(ahead[i] + c0 + 64);
        }
      }
      VF acc[C][R][NT];
      _Pragma("GCC unroll 2") for (int ch = 0; ch < C; ++ch)
          _Pragma("GCC unroll 4") for (int i = 0; i < R; ++i)
              _Pragma("GCC unroll 4") for (int t = 0; t < NT; ++t) acc[ch][i][t] = hn::Zero(df);
      for (int64_t v = c0; v < c0 + group; v += C * N) {
        _Pragma("GCC unroll 2") for (int ch = 0; ch < C; ++ch) {
          VF q[R];
          _Pragma("GCC unroll 4") for (int i = 0; i < R; ++i) q[i] = hn::ConvertTo(
              df, hn::BitCast(di, hn::PromoteTo(du, hn::LoadU(d8, codes[i] + v + ch * N))));
          _Pragma("GCC unroll 4") for (int t = 0; t < NT; ++t) {
            const VF xv = hn::LoadU(df, x + t * ldx + v + ch * N);
            _Pragma("GCC unroll 4") for (int i = 0; i < R; ++i) acc[ch][i][t] =
                hn::MulAdd(xv, q[i], acc[ch][i][t]);
          }
        }
      }
      _Pragma("GCC unroll 4") for (int i = 0; i < R; ++i) {
        const VF sv = hn::Set(df, sf[i * c.sfs + g]);
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; ++t) {
          VF a = acc[0][i][t];
          if constexpr (C == 2) a = hn::Add(a, acc[C - 1][i][t]);
          tot[i][t] = hn::MulAdd(sv, a, tot[i][t]);
        }
      }
    }
    _Pragma("GCC unroll 4") for (int i = 0; i < R; ++i)
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; ++t) y[t * ldy + rb + i] =
            hn::GetLane(hn::SumOfLanes(df, tot[i][t])) + bias[i][t];
  }
}

void BytesPass(int nt, const Call& c, const float* x, int64_t ldx, const inkling::MatView& w,
               int64_t r0, int64_t r1, float* y, int64_t ldy, float* sf) {
  switch (nt) {
    case 1:
      return ByteRows<1, 4>(c, x, ldx, w, r0, r1, y, ldy, sf,
                            tuning(inkling::TuneParam::kBytesPrefetch));
    case 2:
      return ByteRows<2, 4>(c, x, ldx, w, r0, r1, y, ldy, sf);
    case 3:
      return ByteRows<3, 2>(c, x, ldx, w, r0, r1, y, ldy, sf);
    default:
      return ByteRows<4, 2>(c, x, ldx, w, r0, r1, y, ldy, sf);
  }
}

template <int kBits>
void WordsPass(int nt, const Call& c, const inkling::MatView& w, int64_t r0, int64_t r1, float* y,
               int64_t ldy, float* sf) {
  switch (nt) {
    case 1:
      return WordRows<kBits, 1, 4>(c, w, r0, r1, y, ldy, sf);
    case 2:
      return WordRows<kBits, 2, 2>(c, w, r0, r1, y, ldy, sf);
    case 3:
      return WordRows<kBits, 3, 2>(c, w, r0, r1, y, ldy, sf);
    default:
      return WordRows<kBits, 4, 2>(c, w, r0, r1, y, ldy, sf);
  }
}

void AffineWordsRows(const float* x, int64_t n_tok, int64_t ldx, const inkling::MatView& w,
                     int64_t r0, int64_t r1, float* y, int64_t ldy) {
  thread_local std::vector<float> xs, sf;
  thread_local AlignedScratch<float> xp;  // permuted x on cache lines (base/aligned_scratch.h)
  const DF df;
  const int64_t N = int64_t(hn::Lanes(df));
  const AffineWordLayout& L = affine_word_layout(w.bits, int(N));
  const int64_t ngroups = w.cols / w.group;
  Call c;
  c.L = &L;
  c.xps = affine_words_packed_cols(L, w.cols);
  c.sfs = ngroups + N;
  c.blocks = (w.cols + 32 * N - 1) / (32 * N);
  c.row_words = w.cols * w.bits / 32;
  c.lookup = (32 * N) % w.group == 0;
  if (sf.size() < size_t(5 * c.sfs)) sf.resize(size_t(5 * c.sfs));
  for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxTok) {
    const int nt = int(std::min<int64_t>(kMaxTok, n_tok - t0));
    const float* xb = x + t0 * ldx;
    if (xs.size() < size_t(nt * c.sfs)) xs.resize(size_t(nt * c.sfs));
    if (w.bits != 8) {
      affine_words_permute_x(L, xb, nt, ldx, w.cols, xp.get(size_t(nt * c.xps)), c.xps);
    }
    for (int t = 0; t < nt; ++t) {  // per-group sums of x (the bias term), zero padded
      for (int64_t g = 0; g < c.sfs; ++g) {
        float s = 0.f;
        if (g < ngroups) {
          const float* xg = xb + t * ldx + g * w.group;
          for (int64_t k = 0; k < w.group; ++k) s += xg[k];
        }
        xs[size_t(t * c.sfs + g)] = s;
      }
    }
    c.xp = xp.data();
    c.xsum = xs.data();
    float* yb = y + t0 * ldy;
    switch (w.bits) {
      case 1:
        WordsPass<1>(nt, c, w, r0, r1, yb, ldy, sf.data());
        break;
      case 2:
        WordsPass<2>(nt, c, w, r0, r1, yb, ldy, sf.data());
        break;
      case 3:
        WordsPass<3>(nt, c, w, r0, r1, yb, ldy, sf.data());
        break;
      case 4:
        WordsPass<4>(nt, c, w, r0, r1, yb, ldy, sf.data());
        break;
      case 5:
        WordsPass<5>(nt, c, w, r0, r1, yb, ldy, sf.data());
        break;
      case 6:
        WordsPass<6>(nt, c, w, r0, r1, yb, ldy, sf.data());
        break;
      default:  // 8
        BytesPass(nt, c, xb, ldx, w, r0, r1, yb, ldy, sf.data());
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

namespace inkling {

HWY_EXPORT(AffineWordsRows);

bool affine_words_supported(const MatView& w) {
  const bool width = w.bits >= 1 && w.bits <= 8 && w.bits != 7;
  const bool group = w.group == 32 || w.group == 64 || w.group == 128;
  return w.format == WeightFormat::kAffine && width && group && w.cols % w.group == 0 && w.scales &&
         w.biases;
}

void affine_words_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                       int64_t r1, float* y, int64_t ldy) {
  INK_CHECK(affine_words_supported(w));
  HWY_DYNAMIC_DISPATCH(AffineWordsRows)(x, n_tok, ldx, w, r0, r1, y, ldy);
}

}  // namespace inkling
#endif  // HWY_ONCE
