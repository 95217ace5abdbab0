// AVX512-BF16 + VBMI kernel for MLX affine codes of 1..6 bits (see quant_affine_bf16dot.h).
//
// Layout. A row is taken in blocks of 128 columns (16 * bits bytes of codes); f32 lane k of a
// block accumulates columns 8k .. 8k + 7, in 4 steps of one column pair: at step t, u16 lanes
// 2k and 2k + 1 hold columns 8k + 2t and 8k + 2t + 1 (VDPBF16PS adds the two products into f32
// lane k). Unpacking a step: qword i of the code vector must hold the pairs of f32 lanes 2i and
// 2i + 1 (columns 16i + 2t, +1 and 16i + 8 + 2t, +1); a byte permute of the block's bytes
// (VPERMB, or VPERMT2B over two registers when the block exceeds 64 bytes) puts the 4 bytes
// holding each pair into the qword's low and high halves, and VPMULTISHIFTQB moves each code to
// bits (7 - bits) .. 6 of its u16 lane's low byte. One VPTERNLOGD keeps those bits and ORs in the
// bf16 exponent of 2^bits: the lane is then exactly the bf16 number 2^bits + q (in the binade
// [2^bits, 2^(bits+1)) bf16 steps by 2^(bits-7) <= 1). x is prepared once per call in the same
// order as three bf16 parts, hi + mid + lo = x exactly, so every product is exact and only the f32
// accumulation rounds. The offset 2^bits is removed through the group sums of x, folded into the
// bias term: s * sum((2^bits + q) x) + (b - 2^bits s) * sum(x) = sum((s q + b) x). A block lies
// in 1 (group 128), 2 (64) or 4 (32) groups; f32 lane k takes the scale of group 8k / group (a
// permute of the row's scales).
#include "ops/quant_affine_bf16dot.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/aligned_scratch.h"
#include "base/dtype.h"
#include "ops/formats.h"
#include "ops/quant_q4_bf16dot.h"
#include "ops/tuning.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define INKLING_HAVE_AFFINE_BF16DOT 1
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // see quant_q4_bf16dot.cpp
#endif
#include <immintrin.h>

#include "ops/bf16dot-inl.h"
#else
#define INKLING_HAVE_AFFINE_BF16DOT 0
#endif

namespace inkling {

bool affine_bf16dot_handles(const MatView& w, int64_t n_tok) {
  return n_tok >= 1 && n_tok <= kFewMaxTokens && w.format == WeightFormat::kAffine && w.bits >= 1 &&
         w.bits <= 6 && (w.group == 32 || w.group == 64 || w.group == 128) &&
         w.cols % w.group == 0 && w.scales && w.biases;
}

namespace {

#if INKLING_HAVE_AFFINE_BF16DOT

#define INK_AFFDOT \
  __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,avx512vbmi")))

constexpr int kMaxTok = 2;
constexpr int kRowsMax = 4;

// Permutes per 128-column block: one when each 4-byte window can hold the 8 codes a qword half
// needs for all 4 steps (8 * bits + 7 <= 32 bits, the 7 for the first code's bit offset), else
// one per pair of steps (4 codes per window; bits <= 6).
constexpr int Perms(int bits) {
  return 8 * bits + 7 <= 32 ? 1 : 2;
}

// Per width: the byte permutes and, per step t, the bit-field selects (see the top of the file).
// Permute p covers steps [p * 4 / Perms, (p + 1) * 4 / Perms): the low 4 bytes of qword i hold
// the codes of columns 16i + 2 * (first step) .., the high 4 bytes those 8 columns further on.
struct Tables {
  alignas(64) uint8_t perm[2][64];
  alignas(64) uint8_t shift[4][64];
};

Tables make_tables(int bits) {
  Tables T{};
  const int base = 7 - bits;        // where the code goes in its u16 lane's low byte
  const int spp = 4 / Perms(bits);  // steps per permute
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 8; ++i) {
      const int p = t / spp;
      // First bits of the two windows of permute p, and of this step's pairs in them.
      const int wa = (16 * i + 2 * p * spp) * bits, wb = (16 * i + 8 + 2 * p * spp) * bits;
      const int sa = (16 * i + 2 * t) * bits, sb = (16 * i + 8 + 2 * t) * bits;
      for (int b = 0; b < 4; ++b) {
        T.perm[p][8 * i + b] = uint8_t(wa / 8 + b);
        T.perm[p][8 * i + 4 + b] = uint8_t(wb / 8 + b);
      }
      for (int m = 0; m < 4; ++m) {  // u16 lane 4i + m: its low byte is byte 2m of the qword
        const int at =
            (m < 2 ? sa - wa / 8 * 8 : 32 + sb - wb / 8 * 8) + (m % 2) * bits;  // bit in qword
        T.shift[t][8 * i + 2 * m] = uint8_t((at - base) & 63);
        T.shift[t][8 * i + 2 * m + 1] = 0;
      }
    }
  return T;
}

const Tables& tables(int bits) {
  static const Tables all[7] = {make_tables(1), make_tables(1), make_tables(2), make_tables(3),
                                make_tables(4), make_tables(5), make_tables(6)};
  return all[bits];
}

// x of up to kMaxTok tokens in the kernel's order (3 bf16 parts) and per-group sums of x.
struct Prepared {
  AlignedScratch<uint16_t> xq;  // [nt][xs], on cache lines (every vector load of it is whole)
  std::vector<float> xsum;      // [nt][gs], zero padded
  std::vector<float> sf;        // per-row scratch: kRowsMax scale rows + one bias row, gs each
  int64_t xs = 0, gs = 0;
  // What xq / xsum were made from (consecutive products with the same activations reuse them;
  // a copy is compared, never a pointer).
  std::vector<float> src;
  int nt = 0, layout = -1;
  int64_t cols = 0, group = 0;
};

// Block geometry. Widths 1 and 2 (which divide 16) take the u16-word layout instead of the
// 128-column one: a block is one 64-byte vector of 32 u16 code words (16 / bits codes each), and
// step j decodes code j of every word with one shift; u16 lane m at step j is column
// m * (16 / bits) + j, so f32 lane k holds the 2 * (16 / bits) columns of words 2k and 2k + 1.
// Layout 0: the 128-column blocks (any width); layout 1 / 2: u16 words of 1 / 2-bit codes.
constexpr bool U16Layout(int bits) {
  return bits <= 2;
}
constexpr int64_t BlockCols(int layout) {
  return layout == 0 ? 128 : 512 / layout;
}
constexpr int Steps(int layout) {
  return layout == 0 ? 4 : 16 / layout;
}
// Where column e of a block goes: step and u16 lane.
inline void slot_of(int layout, int64_t e, int* step, int* lane) {
  if (layout == 0) {
    const int64_t k = e / 8;
    *step = int((e % 8) / 2), *lane = int(2 * k + e % 2);
  } else {
    const int64_t per = 16 / layout;
    *step = int(e % per), *lane = int(e / per);
  }
}

void prepare(const float* x, int nt, int64_t ldx, int64_t cols, int64_t group, int layout,
             Prepared& p) {
  const size_t n = size_t(cols);
  bool same = p.nt == nt && p.cols == cols && p.group == group && p.layout == layout;
  for (int t = 0; same && t < nt; ++t)
    same = std::memcmp(p.src.data() + size_t(t) * n, x + t * ldx, n * sizeof(float)) == 0;
  if (same) return;
  p.nt = nt, p.cols = cols, p.group = group, p.layout = layout;
  if (p.src.size() < size_t(nt) * n) p.src.resize(size_t(nt) * n);
  for (int t = 0; t < nt; ++t) std::memcpy(p.src.data() + size_t(t) * n, x + t * ldx, n * 4);
  const int64_t bc = BlockCols(layout), xblock = Steps(layout) * 96;  // 3 parts x 32 lanes
  const int64_t blocks = (cols + bc - 1) / bc;
  p.xs = blocks * xblock;
  p.gs = cols / group + 16;
  p.xq.get(size_t(nt * p.xs));
  if (p.xsum.size() < size_t(nt * p.gs)) p.xsum.resize(size_t(nt * p.gs));
  if (p.sf.size() < size_t((kRowsMax + 1) * p.gs)) p.sf.resize(size_t((kRowsMax + 1) * p.gs));
  for (int t = 0; t < nt; ++t) {
    const float* in = x + t * ldx;
    uint16_t* o = p.xq.data() + t * p.xs;
    float* xs = p.xsum.data() + t * p.gs;
    for (int64_t g = 0; g < p.gs; ++g) xs[g] = 0.f;
    for (int64_t c = 0; c < cols; ++c) xs[c / group] += in[c];
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t e = 0; e < bc; ++e) {
        const int64_t c = b * bc + e;
        int s = 0, lane = 0;
        slot_of(layout, e, &s, &lane);
        uint16_t hi = 0, mid = 0, lo = 0;  // x = hi + mid + lo exactly (3 x 8 bits)
        if (c < cols) {
          bf16dot::split3(in[c], &hi, &mid, &lo);
        }
        uint16_t* d = o + b * xblock + s * 96 + lane;
        d[0] = hi;
        d[32] = mid;
        d[64] = lo;
      }
  }
}

INK_AFFDOT inline __mmask64 bytes_mask(int64_t n) {
  return n >= 64 ? ~__mmask64(0) : (n <= 0 ? __mmask64(0) : (__mmask64(1) << n) - 1);
}

// Rows [r0, r1) in blocks of R rows for NT tokens. 128-column blocks of more than 4 bits span two
// registers.
template <int kBits, int NT, int R>
INK_AFFDOT void rows_kernel(const Prepared& p, int t0, const MatView& w, int64_t r0, int64_t r1,
                            float* y, int64_t ldy, int pf = 1) {  // pf: blocks ahead prefetched
  constexpr int kLayout = U16Layout(kBits) ? kBits : 0;
  constexpr int64_t kCols = BlockCols(kLayout);
  constexpr int kSteps = Steps(kLayout);
  constexpr int64_t kBlockBytes = kCols * kBits / 8;
  constexpr bool kTwo = kBlockBytes > 64;
  const int64_t ngroups = w.cols / w.group, gs = p.gs, xs = p.xs;
  const int64_t blocks = (w.cols + kCols - 1) / kCols, row_bytes = w.cols * kBits / 8;
  const Tables& T = tables(kBits);
  alignas(64) int32_t idx_arr[16];
  for (int k = 0; k < 16; ++k)  // f32 lane k: the group of the block's column (kCols / 16) k
    idx_arr[k] = int32_t(kCols / 16 * k / w.group);
  const __m512i idx = _mm512_load_si512(idx_arr);
  const int64_t groups_per_block = kCols / w.group;
  const __m512i keep = _mm512_set1_epi16(int16_t(((1 << kBits) - 1) << (7 - kBits)));
  const __m512i expo = _mm512_set1_epi16(int16_t((127 + kBits) << 7));
  float* sfb = const_cast<float*>(p.sf.data());
  for (int64_t rb = r0; rb < r1; rb += R) {
    if constexpr (R > 1) {
      if (rb + R > r1) {
        rows_kernel<kBits, NT, 1>(p, t0, w, rb, r1, y, ldy, pf);
        return;
      }
    }
    const uint8_t* codes[R];
    const char* ahead[R];  // the same row of the next block of rows: prefetched as this is read
    float bias[R][NT];
    _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i) {
      codes[i] = w.row(rb + i);
      const int64_t rn = std::min(rb + R * std::max(pf, 1) + i, r1 - 1);
      ahead[i] = reinterpret_cast<const char*>(w.row(rn));
      if (pf > 0) bf16dot::prefetch_scales(w, rn, ngroups);
      float* s = sfb + i * gs;
      float* bs = sfb + kRowsMax * gs;
      bf16dot::affine_row_scales(w, rb + i, ngroups, gs, s, bs);
      _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) {
        const float* xsum = p.xsum.data() + (t0 + t) * gs;
        __m512 a = _mm512_setzero_ps();
        for (int64_t g = 0; g < ngroups; g += 16)
          a = _mm512_fmadd_ps(_mm512_loadu_ps(bs + g), _mm512_loadu_ps(xsum + g), a);
        bias[i][t] = _mm512_reduce_add_ps(a);
      }
    }
    __m512 tot[R][NT];
    _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i)
        _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) tot[i][t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t off = b * kBlockBytes;
      // Masked loads: never read past the row (the last block may be partial).
      const __mmask64 m0 = bytes_mask(row_bytes - off), m1 = bytes_mask(row_bytes - off - 64);
      // The block's codes, and (128-column layout) every permute's windows at once, so the
      // loaded registers die before the steps: 4 rows stay within the 32 vector registers.
      constexpr int kPerms = kLayout == 0 ? Perms(kBits) : 1;
      constexpr int kSpp = kSteps / kPerms;  // steps per permute
      __m512i win[kPerms][R];
      _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i) {
        const __m512i src0 = _mm512_maskz_loadu_epi8(m0, codes[i] + off);
        __m512i src1 = src0;
        if constexpr (kTwo) src1 = _mm512_maskz_loadu_epi8(m1, codes[i] + off + 64);
        if (pf > 0) {
          _mm_prefetch(ahead[i] + off, _MM_HINT_T0);
          if constexpr (kTwo) _mm_prefetch(ahead[i] + off + 64, _MM_HINT_T0);
        }
        _Pragma("GCC unroll 2") for (int pm = 0; pm < kPerms; ++pm) {
          if constexpr (kLayout != 0) {
            win[pm][i] = src0;
          } else {
            const __m512i perm = _mm512_load_si512(T.perm[pm]);
            win[pm][i] = kTwo ? _mm512_permutex2var_epi8(src0, perm, src1)
                              : _mm512_permutexvar_epi8(perm, src0);
          }
        }
      }
      // Two f32 chains per row and token (hi and lo parts in one, mid in the other): enough to
      // hide VDPBF16PS latency with 4 rows, and two registers fewer per row than three.
      __m512 acc_a[R][NT], acc_b[R][NT];
      _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i)
          _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) acc_a[i][t] = acc_b[i][t] =
              _mm512_setzero_ps();
      const uint16_t* xb = p.xq.data() + t0 * xs + b * (kSteps * 96);
      _Pragma("GCC unroll 16") for (int st = 0; st < kSteps; ++st) {
        const __m512i shift = _mm512_load_si512(T.shift[st % 4]);
        __m512i xh[NT], xm[NT], xl[NT];
        _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) {
          xh[t] = _mm512_loadu_si512(xb + t * xs + st * 96);
          xm[t] = _mm512_loadu_si512(xb + t * xs + st * 96 + 32);
          xl[t] = _mm512_loadu_si512(xb + t * xs + st * 96 + 64);
        }
        _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i) {
          const __m512i wv = win[st / kSpp][i];
          __m512i v;
          if constexpr (kLayout != 0) {  // code st of every u16 word to bits 7-kBits .. 6
            constexpr int kTo = 7 - kBits;
            const int from = st * kBits;
            v = from < kTo ? _mm512_slli_epi16(wv, unsigned(kTo - from))
                           : _mm512_srli_epi16(wv, unsigned(from - kTo));
            (void)shift;
          } else {
            v = _mm512_multishift_epi64_epi8(shift, wv);
          }
          const __m512bh q = (__m512bh)_mm512_ternarylogic_epi32(v, keep, expo, 0xEA);
          _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) {
            acc_a[i][t] = _mm512_dpbf16_ps(acc_a[i][t], q, (__m512bh)xh[t]);
            acc_b[i][t] = _mm512_dpbf16_ps(acc_b[i][t], q, (__m512bh)xm[t]);
            acc_a[i][t] = _mm512_dpbf16_ps(acc_a[i][t], q, (__m512bh)xl[t]);
          }
        }
      }
      _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i) {
        const float* s = sfb + i * gs + b * groups_per_block;
        const __m512 sv = groups_per_block > 1 ? _mm512_permutexvar_ps(idx, _mm512_loadu_ps(s))
                                               : _mm512_set1_ps(s[0]);
        _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) tot[i][t] =
            _mm512_fmadd_ps(_mm512_add_ps(acc_a[i][t], acc_b[i][t]), sv, tot[i][t]);
      }
    }
    _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i)
        _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) y[t * ldy + rb + i] =
            _mm512_reduce_add_ps(tot[i][t]) + bias[i][t];
  }
}

// Tokens [t0, t0 + nt) of p (nt 1 or 2) over rows [r0, r1).
template <int kBits>
void width_rows(const Prepared& p, int t0, int nt, const MatView& w, int64_t r0, int64_t r1,
                float* y, int64_t ldy) {
  if (nt == 1)
    rows_kernel<kBits, 1, 4>(p, t0, w, r0, r1, y, ldy, tuning(TuneParam::kAffinePrefetch));
  else
    rows_kernel<kBits, 2, 2>(p, t0, w, r0, r1, y, ldy);
}

bool cpu_has_affine_bf16dot() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512vbmi");
}

#endif  // INKLING_HAVE_AFFINE_BF16DOT

}  // namespace

bool affine_bf16dot_available() {
#if INKLING_HAVE_AFFINE_BF16DOT
  static const bool has = cpu_has_affine_bf16dot();
  return has;
#else
  return false;
#endif
}

void affine_bf16dot_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                         int64_t r1, float* y, int64_t ldy) {
#if INKLING_HAVE_AFFINE_BF16DOT
  thread_local Prepared p;
  // Every token prepared once; blocks of rows (in L1) visited by each pair of tokens, so the
  // codes come from memory once for all tokens. A (row, token) result depends on neither the
  // pairing nor the block (formats.h: row-count invariance).
  prepare(x, int(n_tok), ldx, w.cols, w.group, U16Layout(w.bits) ? w.bits : 0, p);
  const int64_t block = n_tok == 1 ? r1 - r0 : 16;
  for (int64_t rb = r0; rb < r1; rb += block) {
    const int64_t re = std::min(r1, rb + block);
    for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxTok) {
      const int nt = int(std::min<int64_t>(kMaxTok, n_tok - t0));
      float* yb = y + t0 * ldy;
      switch (w.bits) {
        case 1:
          width_rows<1>(p, int(t0), nt, w, rb, re, yb, ldy);
          break;
        case 2:
          width_rows<2>(p, int(t0), nt, w, rb, re, yb, ldy);
          break;
        case 3:
          width_rows<3>(p, int(t0), nt, w, rb, re, yb, ldy);
          break;
        case 4:
          width_rows<4>(p, int(t0), nt, w, rb, re, yb, ldy);
          break;
        case 5:
          width_rows<5>(p, int(t0), nt, w, rb, re, yb, ldy);
          break;
        default:
          width_rows<6>(p, int(t0), nt, w, rb, re, yb, ldy);
          break;
      }
    }
  }
#else
  (void)x, (void)n_tok, (void)ldx, (void)w, (void)r0, (void)r1, (void)y, (void)ldy;
#endif
}

}  // namespace inkling
