// AVX512-BF16 kernel for 4-bit products (see quant_q4_bf16dot.h for the method).
//
// Layout. A 512-bit code vector holds 16 u32 words = 128 columns (MLX packs 8 nibbles per u32,
// NVFP4 two per byte, both low nibble first, so the layouts agree); as 32 u16 lanes, lane 2k
// holds columns 8k..8k+3 and lane 2k+1 columns 8k+4..8k+7. Affine: nibble j of every u16 lane,
// moved to bits 3..6 (one shift), masked and OR-ed with 0x4180 is the bf16 number 16 + q (one
// VPTERNLOGD): in the binade [16, 32) bf16 steps by 1/8, so mantissa 8q is exactly 16 + q. The
// smaller the offset, the less of f32's precision the accumulation spends on it: 16 keeps the
// accumulated magnitude within ~3x of the unbiased sum's, where 128 would cost ~18x. NVFP4:
// VPERMW maps the low 5 bits of each u16 lane to the E2M1 value's bf16 bits (the table repeats,
// so the nibble above does not matter). VDPBF16PS adds the products of u16 lanes 2k and 2k+1
// into f32 lane k, so x is prepared once per call as bf16 pairs (x[8k + j], x[8k + 4 + j]) per
// nibble step j, hi, mid and lo parts apart. f32 lane k of a block then holds columns of group
// (8k) / group only: groups below 128 columns take their scale per lane (a permute of the row's
// scales), larger groups one broadcast scale. Affine, per group:
// s * sum((16 + q) x) + (b - 16 s) * sum(x) = sum((s q + b) x). NVFP4, per 16-column block:
// (f32(e4m3) * scale2) * sum(e2m1 * x).
#include "ops/quant_q4_bf16dot.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/aligned_scratch.h"
#include "base/dtype.h"
#include "ops/formats.h"
#include "ops/kernel_switch.h"
#include "ops/tuning.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define INKLING_HAVE_BF16DOT 1
// GCC 12's AVX-512 headers build _mm512_undefined_*() from a self-initialised variable, which
// -Wmaybe-uninitialized reports at every use of setzero/reduce once inlined. (Clang has no
// such warning group and would reject the pragma under -Werror.)
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "ops/bf16dot-inl.h"
#else
#define INKLING_HAVE_BF16DOT 0
#endif

namespace inkling {

bool q4_bf16dot_handles(const MatView& w, int64_t n_tok) {
  // Up to kFewMaxTokens tokens (pairs of tokens per pass over a block of rows), so decode, verify
  // and batched decode rows all take this one kernel (row-count invariance, ops/formats.h).
  if (n_tok > kFewMaxTokens) return false;
  if (w.format == WeightFormat::kNvfp4 && w.group == 16 && w.cols % 16 == 0 &&
      w.scale_dtype == DType::F8_E4M3)
    return true;
  return w.format == WeightFormat::kAffine && w.bits == 4 && w.group >= 8 &&
         (w.group & (w.group - 1)) == 0 && w.cols % w.group == 0;
}

namespace {

KernelSwitch g_switch{"INKLING_NO_BF16DOT"};

#if INKLING_HAVE_BF16DOT

// Tokens per pass over a block of rows. Each token adds three VDPBF16PS per 32 weights (one per
// part of x), so beyond a pair the shared unpacking stops paying off; callers with more tokens
// run several pairs over each block of rows (up to kFewMaxTokens), the gemm beyond.
constexpr int kMaxTok = 2;
constexpr int64_t kXBlock = 384;  // prepared bf16 per 128 columns (4 steps x 3 parts x 32)

// x of up to kMaxTok tokens in the kernel's order (3 bf16 parts), plus per-group sums of x.
struct Prepared {
  AlignedScratch<uint16_t> xq;  // [nt][xs], on cache lines (every vector load of it is whole)
  std::vector<float> xsum;      // [nt][gs], zero padded
  std::vector<float> sf;        // per-row scratch: kRowsMax scale rows + one bias row, gs each
  int64_t xs = 0, gs = 0;
  // What xq / xsum were made from: consecutive products with the same activations (gate and up,
  // every expert a decoded token visits) reuse them; a copy is compared, never a pointer.
  std::vector<float> src;
  int nt = 0, parts = 0;
  int64_t cols = 0, group = 0;
};

constexpr int kRowsMax = 4;

// parts 3: x split exactly (hi + mid + lo); 1 (fast numerics): hi = x rounded to bf16, mid = lo =
// 0.
void prepare(const float* x, int nt, int64_t ldx, int64_t cols, int64_t group, int parts,
             Prepared& p) {
  const size_t n = size_t(cols);
  bool same = p.nt == nt && p.cols == cols && p.group == group && p.parts == parts;
  for (int t = 0; same && t < nt; ++t)
    same = std::memcmp(p.src.data() + size_t(t) * n, x + t * ldx, n * sizeof(float)) == 0;
  if (same) return;
  p.nt = nt, p.cols = cols, p.group = group, p.parts = parts;
  if (p.src.size() < size_t(nt) * n) p.src.resize(size_t(nt) * n);
  for (int t = 0; t < nt; ++t) std::memcpy(p.src.data() + size_t(t) * n, x + t * ldx, n * 4);
  const int64_t blocks = (cols + 127) / 128;
  p.xs = blocks * kXBlock;
  const int64_t ngroups = cols / group;
  p.gs = ngroups + 16;
  p.xq.get(size_t(nt * p.xs));
  if (p.xsum.size() < size_t(nt * p.gs)) p.xsum.resize(size_t(nt * p.gs));
  if (p.sf.size() < size_t((kRowsMax + 1) * p.gs)) p.sf.resize(size_t((kRowsMax + 1) * p.gs));
  for (int t = 0; t < nt; ++t) {
    const float* in = x + t * ldx;
    uint16_t* o = p.xq.data() + t * p.xs;
    float* xs = p.xsum.data() + t * p.gs;
    for (int64_t g = 0; g < p.gs; ++g) xs[g] = 0.f;
    for (int64_t b = 0; b < blocks; ++b)
      for (int j = 0; j < 4; ++j)
        for (int k = 0; k < 16; ++k)
          for (int h = 0; h < 2; ++h) {  // u16 lane 2k + h: column 8k + 4h + j
            const int64_t c = b * 128 + 8 * k + 4 * h + j;
            uint16_t hi = 0, mid = 0, lo = 0;  // x = hi + mid + lo exactly (3 x 8 bits)
            if (c < cols) {
              if (parts == 1) {  // the product of bf16(x): its group sums too
                hi = f32_to_bf16(in[c]);
                xs[c / group] += bf16_to_f32(hi);
              } else {
                bf16dot::split3(in[c], &hi, &mid, &lo);
                xs[c / group] += in[c];
              }
            }
            uint16_t* s = o + b * kXBlock + j * 96 + 2 * k + h;
            s[0] = hi;
            s[32] = mid;
            s[64] = lo;
          }
  }
}

// NVFP4: row r's block factors f32(e4m3) * scale2 into s (zero padded to gs), computed 16 at a
// time: normal codes are rebuilt as f32 bits (exponent + 120, mantissa << 20), subnormals
// (exponent 0: m * 2^-9) as 2 * (that - 2^-7), 0x7f / 0xff as NaN, as e4m3_to_f32 defines them.
INK_BF16DOT void fp4_block_scales(const MatView& w, int64_t r, int64_t nblocks, int64_t gs,
                                  float* s) {
  const uint8_t* srow = w.scales + size_t(r * w.scale_stride);
  const __m512 s2 = _mm512_set1_ps(w.scale2), lowest = _mm512_set1_ps(1.f / 128.f);
  for (int64_t g = 0; g < nblocks; g += 16) {
    const int64_t n = std::min<int64_t>(16, nblocks - g);
    const __m512i b =
        _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(__mmask16((1u << n) - 1u), srow + g));
    const __m512i mag = _mm512_and_si512(b, _mm512_set1_epi32(0x7f));
    const __m512i bits =
        _mm512_or_si512(_mm512_add_epi32(_mm512_slli_epi32(mag, 20), _mm512_set1_epi32(120 << 23)),
                        _mm512_slli_epi32(_mm512_and_si512(b, _mm512_set1_epi32(0x80)), 24));
    __m512 f = _mm512_castsi512_ps(bits);
    const __mmask16 sub_m = _mm512_cmplt_epi32_mask(mag, _mm512_set1_epi32(8));
    // Subnormal: 2 * (|f| - 2^-7) with f's sign (zero stays +-0).
    const __m512 a = _mm512_abs_ps(f);
    const __m512 subv = _mm512_mul_ps(_mm512_sub_ps(a, lowest), _mm512_set1_ps(2.f));
    f = _mm512_mask_blend_ps(sub_m, f,
                             _mm512_castsi512_ps(_mm512_or_si512(
                                 _mm512_castps_si512(subv),
                                 _mm512_and_si512(bits, _mm512_set1_epi32(int(0x80000000u))))));
    const __mmask16 nan_m = _mm512_cmpeq_epi32_mask(mag, _mm512_set1_epi32(0x7f));
    f = _mm512_mask_blend_ps(nan_m, f, _mm512_set1_ps(__builtin_nanf("")));
    _mm512_storeu_ps(s + g, _mm512_mul_ps(f, s2));
  }
  for (int64_t g = nblocks; g < gs; ++g) s[g] = 0.f;
}

// Rows [r0, r1) in blocks of R rows for NT tokens.
// The rows `pf` blocks ahead are prefetched as a block is read (0: none; decode tuning).
// kOne (fast numerics): x in one bf16 part; the mid and lo products are skipped (their parts are
// zero), the sums kept in the same form, so the result is bitwise the exact kernel's on bf16(x).
template <int NT, int R, bool kFp4, bool kOne = false>
INK_BF16DOT void rows_kernel(const Prepared& p, int t0, const MatView& w, int64_t r0, int64_t r1,
                             float* y, int64_t ldy, int pf = 1) {
  const int64_t ngroups = w.cols / w.group, gs = p.gs, xs = p.xs;
  const int64_t W = w.cols / 8, WG = w.group / 8, B = std::max<int64_t>(16, WG);
  int wg_shift = 0;
  while ((int64_t(1) << wg_shift) < WG) ++wg_shift;
  alignas(64) int32_t idx_arr[16];
  for (int k = 0; k < 16; ++k) idx_arr[k] = k >> wg_shift;
  const __m512i idx = _mm512_load_si512(idx_arr);
  const __m512i nib = _mm512_set1_epi16(0x0078), magic = _mm512_set1_epi16(0x4180);
  // NVFP4: E2M1 code (bit 3 sign, bits 0-2 magnitude) -> its exact bf16 value, by VPERMW on the
  // low 5 bits of each u16 lane (the table repeats, so the bit above the nibble does not matter).
  alignas(64) uint16_t lut_arr[32];
  constexpr uint16_t kMag[8] = {0x0000, 0x3F00, 0x3F80, 0x3FC0, 0x4000, 0x4040, 0x4080, 0x40C0};
  for (int k = 0; k < 32; ++k) lut_arr[k] = uint16_t(kMag[k & 7] | ((k & 8) ? 0x8000 : 0));
  const __m512i lut = _mm512_load_si512(lut_arr);
  float* sfb = const_cast<float*>(p.sf.data());
  for (int64_t rb = r0; rb < r1; rb += R) {
    if constexpr (R > 1) {
      if (rb + R > r1) {
        rows_kernel<NT, 1, kFp4, kOne>(p, t0, w, rb, r1, y, ldy, pf);
        return;
      }
    }
    const uint32_t* codes[R];
    const char* ahead[R];  // the same row of the next block: prefetched as this one is read
    float bias[R][NT];
    _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i) {
      codes[i] = reinterpret_cast<const uint32_t*>(w.row(rb + i));
      const int64_t rn = std::min(rb + R * std::max(pf, 1) + i, r1 - 1);
      ahead[i] = reinterpret_cast<const char*>(w.row(rn));
      if (pf > 0) bf16dot::prefetch_scales(w, rn, ngroups);
      float* s = sfb + i * gs;
      float* bs = sfb + kRowsMax * gs;
      if constexpr (kFp4) {
        fp4_block_scales(w, rb + i, ngroups, gs, s);
        _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) bias[i][t] = 0.f;
        continue;
      }
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
    for (int64_t wb = 0; wb < W; wb += B) {
      __m512 acc_h[R][NT], acc_m[R][NT], acc_l[R][NT];
      _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i)
          _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) acc_h[i][t] = acc_m[i][t] =
              acc_l[i][t] = _mm512_setzero_ps();
      const int64_t wend = std::min(wb + B, W);
      for (int64_t wi = wb; wi < wend; wi += 16) {
        __m512i cw[R];
        if (wi + 16 <= W) {
          _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i) {
            cw[i] = _mm512_loadu_si512(codes[i] + wi);
            if (pf > 0) _mm_prefetch(ahead[i] + 4 * wi, _MM_HINT_T0);
          }
        } else {  // masked: never reads past the row
          const __mmask16 m = __mmask16((1u << (W - wi)) - 1u);
          _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i) cw[i] =
              _mm512_maskz_loadu_epi32(m, codes[i] + wi);
        }
        const uint16_t* xb = p.xq.data() + t0 * xs + (wi / 16) * kXBlock;
#define INKLING_BF16DOT_STEP(J)                                                                  \
  {                                                                                              \
    __m512i xh[NT], xm[NT], xl[NT];                                                              \
    _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) {                                       \
      xh[t] = _mm512_loadu_si512(xb + t * xs + (J)*96);                                          \
      if constexpr (!kOne) {                                                                     \
        xm[t] = _mm512_loadu_si512(xb + t * xs + (J)*96 + 32);                                   \
        xl[t] = _mm512_loadu_si512(xb + t * xs + (J)*96 + 64);                                   \
      }                                                                                          \
    }                                                                                            \
    _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i) {                                        \
      const __m512i v =                                                                          \
          kFp4 ? ((J) == 0 ? cw[i] : _mm512_srli_epi16(cw[i], 4 * (J)))                          \
               : ((J) == 0 ? _mm512_slli_epi16(cw[i], 3) : _mm512_srli_epi16(cw[i], 4 * (J)-3)); \
      const __m512bh q = kFp4 ? (__m512bh)_mm512_permutexvar_epi16(v, lut)                       \
                              : (__m512bh)_mm512_ternarylogic_epi32(v, nib, magic, 0xEA);        \
      _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) {                                     \
        acc_h[i][t] = _mm512_dpbf16_ps(acc_h[i][t], q, (__m512bh)xh[t]);                         \
        if constexpr (!kOne) {                                                                   \
          acc_m[i][t] = _mm512_dpbf16_ps(acc_m[i][t], q, (__m512bh)xm[t]);                       \
          acc_l[i][t] = _mm512_dpbf16_ps(acc_l[i][t], q, (__m512bh)xl[t]);                       \
        }                                                                                        \
      }                                                                                          \
    }                                                                                            \
  }
        INKLING_BF16DOT_STEP(0)
        INKLING_BF16DOT_STEP(1)
        INKLING_BF16DOT_STEP(2)
        INKLING_BF16DOT_STEP(3)
#undef INKLING_BF16DOT_STEP
      }
      _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i) {
        const float* s = sfb + i * gs + wb / WG;
        const __m512 sv =
            WG < 16 ? _mm512_permutexvar_ps(idx, _mm512_loadu_ps(s)) : _mm512_set1_ps(s[0]);
        _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) tot[i][t] = _mm512_fmadd_ps(
            _mm512_add_ps(acc_h[i][t], _mm512_add_ps(acc_m[i][t], acc_l[i][t])), sv, tot[i][t]);
      }
    }
    _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i)
        _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) y[t * ldy + rb + i] =
            _mm512_reduce_add_ps(tot[i][t]) + bias[i][t];
  }
}

bool cpu_has_bf16dot() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
}

#endif  // INKLING_HAVE_BF16DOT

}  // namespace

bool q4_bf16dot_available() {
#if INKLING_HAVE_BF16DOT
  static const bool has = cpu_has_bf16dot();
  return has;
#else
  return false;
#endif
}

bool bf16dot_preferred() {
  static const bool preferred = [] {
    if (const char* e = std::getenv("INKLING_BF16DOT_PREFER"); e && *e)
      return std::strcmp(e, "0") != 0;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return !__builtin_cpu_is("intel");
#else
    return true;
#endif
  }();
  return preferred;
}

bool q4_bf16dot_enabled() {
  return g_switch.enabled(q4_bf16dot_available());
}

void set_q4_bf16dot_enabled(bool on) {
  g_switch.set(on, q4_bf16dot_available());
}

namespace {
template <bool kOne>
void q4_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0, int64_t r1,
             float* y, int64_t ldy) {
#if INKLING_HAVE_BF16DOT
  thread_local Prepared p;
  const bool fp4 = w.format == WeightFormat::kNvfp4;
  const int parts = kOne ? 1 : 3;
  if (n_tok == 1) {  // rows per block and prefetch distance from the decode tuning
    prepare(x, 1, ldx, w.cols, w.group, parts, p);
    const int rows = tuning(TuneParam::kQ4Rows), pf = tuning(TuneParam::kQ4Prefetch);
    if (rows >= 4)
      fp4 ? rows_kernel<1, 4, true, kOne>(p, 0, w, r0, r1, y, ldy, pf)
          : rows_kernel<1, 4, false, kOne>(p, 0, w, r0, r1, y, ldy, pf);
    else if (rows >= 2)
      fp4 ? rows_kernel<1, 2, true, kOne>(p, 0, w, r0, r1, y, ldy, pf)
          : rows_kernel<1, 2, false, kOne>(p, 0, w, r0, r1, y, ldy, pf);
    else
      fp4 ? rows_kernel<1, 1, true, kOne>(p, 0, w, r0, r1, y, ldy, pf)
          : rows_kernel<1, 1, false, kOne>(p, 0, w, r0, r1, y, ldy, pf);
    return;
  }
  // Every token prepared once; then blocks of rows (in L1) visited by each pair of tokens, so the
  // codes come from memory once for all tokens. A (row, token) result depends on neither the
  // pairing nor the block: the same instructions on the same values.
  prepare(x, int(n_tok), ldx, w.cols, w.group, parts, p);
  constexpr int64_t kRowBlock = 16;
  for (int64_t rb = r0; rb < r1; rb += kRowBlock) {
    const int64_t re = std::min(r1, rb + kRowBlock);
    for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxTok) {
      float* yb = y + t0 * ldy;
      if (n_tok - t0 == 1)
        fp4 ? rows_kernel<1, 4, true, kOne>(p, int(t0), w, rb, re, yb, ldy)
            : rows_kernel<1, 4, false, kOne>(p, int(t0), w, rb, re, yb, ldy);
      else
        fp4 ? rows_kernel<2, 2, true, kOne>(p, int(t0), w, rb, re, yb, ldy)
            : rows_kernel<2, 2, false, kOne>(p, int(t0), w, rb, re, yb, ldy);
    }
  }
#else
  (void)x, (void)n_tok, (void)ldx, (void)w, (void)r0, (void)r1, (void)y, (void)ldy;
#endif
}
}  // namespace

void q4_bf16dot_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                     int64_t r1, float* y, int64_t ldy) {
  q4_rows<false>(x, n_tok, ldx, w, r0, r1, y, ldy);
}

void q4_bf16dot_fast_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                          int64_t r1, float* y, int64_t ldy) {
  q4_rows<true>(x, n_tok, ldx, w, r0, r1, y, ldy);
}

}  // namespace inkling
