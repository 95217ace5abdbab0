// AVX512-VNNI kernel for MLX affine 4- and 8-bit codes (see quant_affine_vnni.h for the method and
// the layout). x is split once per call (affine_vnni_split) and packed per 64-byte chunk of codes:
// for each part, for each code vector of the chunk, the 64 s8 parts of the columns its bytes hold.
// Per span and row: the chunks' code vectors meet part a in VPDPBUSD, the i32 sums are shifted
// left by 8 and part c is added by VPDPBUSD into the same registers (exact: |sum| < 2^27). Where
// the widths allow (affine_vnni_fused: 1-6 bits), they are shifted by 8 again, part d is added
// the same way, and the sums are converted once and multiplied by 2^(E-16); otherwise (8 bits)
// they are converted, and part d's sums (own registers) are converted and added times 2^-8 (one
// FMA), then multiplied by 2^(E-8). The result is accumulated with the lane's group scale.
#include "ops/quant_affine_vnni.h"

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
#define INKLING_HAVE_VNNI 1
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // see quant_q4_bf16dot.cpp
#endif
#include <immintrin.h>
#else
#define INKLING_HAVE_VNNI 0
#endif

namespace inkling {

bool affine_vnni_handles(const MatView& w, int64_t n_tok) {
  const bool width = w.bits >= 1 && w.bits <= 8 && w.bits != 7;
  return n_tok >= 1 && n_tok <= kFewMaxTokens && w.format == WeightFormat::kAffine && width &&
         (w.group == 32 || w.group == 64 || w.group == 128) && w.cols % w.group == 0 && w.scales &&
         w.biases;
}

namespace {

KernelSwitch g_switch{"INKLING_NO_VNNI"};

#if INKLING_HAVE_VNNI

#define INK_VNNI \
  __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx512vbmi")))

constexpr int kMaxTok = 4;  // tokens per pass over a block of rows
constexpr int kRowsMax = 4;

// x of the call's tokens in the kernel's order, their group sums and scratch for row sidecars.
struct Prepared {
  // xq and fac on cache lines (base/aligned_scratch.h): every vector load of them is whole.
  AlignedScratch<int8_t> xq;  // [nt][xs]: per chunk, parts x V x 64 parts
  AlignedScratch<float> fac;  // [nt][fs]: per span, 16 lane factors 2^(E-8)
  std::vector<float> xsum;    // [nt][gs], zero padded
  std::vector<float> sf;      // kRowsMax scale rows + kRowsMax bias rows, gs each
  std::vector<float> tmp;     // a zero-padded copy of a partial last span
  int64_t xs = 0, fs = 0, gs = 0;
  // What the above were made from (consecutive products with the same activations, gate and up
  // or every expert a token visits, reuse them; a copy is compared, never a pointer).
  std::vector<float> src;
  int nt = 0, bits = 0, parts = 0;
  int64_t cols = 0, group = 0;
};

// One token's x split and packed in the kernel's order (o: spans x kXSpan bytes, fac: spans x
// 16), bitwise what affine_vnni_split gives: every step below is exact in f32 (scaling by powers
// of two, rounding to integers, differences of close values), as in that function's doubles.
// tmp: scratch of span floats (a partial last span is read through a zero-padded copy).
// kParts 1 (fast numerics): a = round(x 127 / M), factor M / 127 per lane set, in f32 as the twin.
template <int kParts>
INK_VNNI void split_pack(const float* in, int64_t cols, int bits, int64_t group, int8_t* o,
                         float* fac, float* tmp) {
  const int64_t span = affine_vnni_span(bits, int(group)), spans = (cols + span - 1) / span;
  const int V = bits == 4 ? 2 : 1, nz = int(span / 16);  // zmm of x per span: 4 or 8
  const int64_t C = 64 * V, cps = span / C;
  const __m512 zero = _mm512_setzero_ps(), c256 = _mm512_set1_ps(256.f);
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  constexpr int kNear = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  alignas(64) int32_t ip[kParts][128];
  alignas(64) float fe[128];
  for (int64_t sp = 0; sp < spans; ++sp) {
    const float* xs = in + sp * span;
    if (sp * span + span > cols) {
      for (int64_t i = 0; i < span; ++i) tmp[i] = sp * span + i < cols ? xs[i] : 0.f;
      xs = tmp;
    }
    __m512 xv[8], mv[8], bad[8];
    for (int j = 0; j < nz; ++j) {
      xv[j] = _mm512_loadu_ps(xs + 16 * j);
      // Per element, the max |x| and the sum of x * 0 (NaN if any is not finite) of its lane set:
      // 4 neighbours (a 128-bit lane), 8 for 4 bits (a 256-bit half).
      __m512 a = _mm512_abs_ps(xv[j]), z = _mm512_mul_ps(xv[j], zero);
      a = _mm512_max_ps(a, _mm512_permute_ps(a, 0xB1));
      z = _mm512_add_ps(z, _mm512_permute_ps(z, 0xB1));
      a = _mm512_max_ps(a, _mm512_permute_ps(a, 0x4E));
      z = _mm512_add_ps(z, _mm512_permute_ps(z, 0x4E));
      if (bits == 4) {
        a = _mm512_max_ps(a, _mm512_shuffle_f32x4(a, a, 0xB1));
        z = _mm512_add_ps(z, _mm512_shuffle_f32x4(z, z, 0xB1));
      }
      mv[j] = a, bad[j] = z;
    }
    if (cps == 2)  // 8 bits, group 128: the same quad of both chunks
      for (int j = 0; j < 4; ++j) {
        mv[j] = mv[j + 4] = _mm512_max_ps(mv[j], mv[j + 4]);
        bad[j] = bad[j + 4] = _mm512_add_ps(bad[j], bad[j + 4]);
      }
    for (int j = 0; j < nz; ++j) {
      const __m512 m = mv[j];
      const __mmask16 nonfin = _mm512_cmp_ps_mask(bad[j], bad[j], _CMP_UNORD_Q);
      if constexpr (kParts == 1) {  // one int8 part, scale M / 127 (zero below kVnniTiny)
        const __mmask16 tiny = _mm512_cmp_ps_mask(m, _mm512_set1_ps(kVnniTiny), _CMP_LT_OQ);
        const __mmask16 keep = __mmask16(~(nonfin | tiny));
        const __m512 inv = _mm512_div_ps(_mm512_set1_ps(127.f), m);
        const __m512 a = _mm512_roundscale_ps(_mm512_mul_ps(xv[j], inv), kNear);
        _mm512_store_si512(ip[0] + 16 * j, _mm512_maskz_cvtps_epi32(keep, a));
        const __m512 f = _mm512_maskz_div_ps(keep, m, _mm512_set1_ps(127.f));
        _mm512_store_ps(fe + 16 * j,
                        _mm512_mask_mov_ps(f, nonfin, _mm512_set1_ps(__builtin_nanf(""))));
        continue;
      }
      const __mmask16 is0 = _mm512_cmp_ps_mask(m, zero, _CMP_EQ_OQ);
      __m512 e = _mm512_sub_ps(_mm512_getexp_ps(m), _mm512_set1_ps(6.f));  // m 2^-e in [64, 128)
      const __m512 top = _mm512_roundscale_ps(_mm512_scalef_ps(m, _mm512_sub_ps(zero, e)), kNear);
      e = _mm512_mask_add_ps(e, _mm512_cmp_ps_mask(top, _mm512_set1_ps(126.f), _CMP_GT_OQ), e,
                             _mm512_set1_ps(1.f));
      e = _mm512_mask_mov_ps(_mm512_max_ps(e, _mm512_set1_ps(-140.f)), is0 | nonfin, zero);
      const __m512 v = _mm512_scalef_ps(xv[j], _mm512_sub_ps(zero, e));
      __m512 a = _mm512_roundscale_ps(v, kNear);
      const __m512 r = _mm512_mul_ps(_mm512_sub_ps(v, a), c256);
      __m512 c = _mm512_roundscale_ps(r, kNear);
      const __m512 d =
          _mm512_min_ps(_mm512_roundscale_ps(_mm512_mul_ps(_mm512_sub_ps(r, c), c256), kNear),
                        _mm512_set1_ps(127.f));
      const __mmask16 carry = _mm512_cmp_ps_mask(c, _mm512_set1_ps(127.f), _CMP_GT_OQ);
      c = _mm512_mask_sub_ps(c, carry, c, c256);
      a = _mm512_mask_add_ps(a, carry, a, _mm512_set1_ps(1.f));
      const __mmask16 keep = __mmask16(~nonfin);
      _mm512_store_si512(ip[0] + 16 * j, _mm512_maskz_cvtps_epi32(keep, a));
      if constexpr (kParts > 1)
        _mm512_store_si512(ip[1] + 16 * j, _mm512_maskz_cvtps_epi32(keep, c));
      if constexpr (kParts > 2)
        _mm512_store_si512(ip[kParts - 1] + 16 * j, _mm512_maskz_cvtps_epi32(keep, d));
      const __m512 f = _mm512_scalef_ps(_mm512_set1_ps(1.f), _mm512_sub_ps(e, _mm512_set1_ps(8.f)));
      _mm512_store_ps(fe + 16 * j,
                      _mm512_mask_mov_ps(f, nonfin, _mm512_set1_ps(__builtin_nanf(""))));
    }
    int8_t* os = o + sp * cps * kParts * V * 64;
    for (int k = 0; k < 16; ++k) fac[sp * 16 + k] = fe[bits == 4 ? 8 * k : 4 * k];
    for (int64_t ch = 0; ch < cps; ++ch)
      for (int pt = 0; pt < kParts; ++pt) {
        int8_t* dst = os + (ch * kParts + pt) * V * 64;
        const int32_t* src = ip[pt] + ch * 64 * V;
        if (V == 1) {
          for (int q = 0; q < 4; ++q)
            _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16 * q),
                             _mm512_cvtepi32_epi8(_mm512_load_si512(src + 16 * q)));
        } else {  // byte i of code vector v: column 2i + v
          for (int q = 0; q < 4; ++q) {
            const __m512i p0 = _mm512_load_si512(src + 32 * q),
                          p1 = _mm512_load_si512(src + 32 * q + 16);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16 * q),
                             _mm512_cvtepi32_epi8(_mm512_permutex2var_epi32(p0, even, p1)));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 64 + 16 * q),
                             _mm512_cvtepi32_epi8(_mm512_permutex2var_epi32(p0, odd, p1)));
          }
        }
      }
  }
}

// Per-group sums of x in the order the twin uses: 16 lanes over the group, then vnni_sum16.
INK_VNNI void group_sums(const float* in, int64_t cols, int64_t group, float* xs) {
  for (int64_t g = 0; g < cols / group; ++g) {
    __m512 acc = _mm512_setzero_ps();
    for (int64_t j = 0; j < group; j += 16)
      acc = _mm512_add_ps(acc, _mm512_loadu_ps(in + g * group + j));
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, acc);
    xs[g] = vnni_sum16(lanes);
  }
}

void prepare(const float* x, int nt, int64_t ldx, int64_t cols, int bits, int64_t group, int parts,
             Prepared& p) {
  const size_t n = size_t(cols);
  bool same =
      p.nt == nt && p.cols == cols && p.group == group && p.bits == bits && p.parts == parts;
  for (int t = 0; same && t < nt; ++t)
    same = std::memcmp(p.src.data() + size_t(t) * n, x + t * ldx, n * sizeof(float)) == 0;
  if (same) return;
  p.nt = nt, p.cols = cols, p.group = group, p.bits = bits, p.parts = parts;
  if (p.src.size() < size_t(nt) * n) p.src.resize(size_t(nt) * n);
  for (int t = 0; t < nt; ++t) std::memcpy(p.src.data() + size_t(t) * n, x + t * ldx, n * 4);
  const int64_t V = bits == 4 ? 2 : 1, C = 64 * V;
  const int64_t span = affine_vnni_span(bits, int(group)), spans = (cols + span - 1) / span;
  p.xs = spans * (span / C) * parts * V * 64;  // whole spans (1 or 2 chunks each)
  p.fs = spans * 16;
  p.gs = cols / group + 16;
  p.xq.get(size_t(nt * p.xs));
  p.fac.get(size_t(nt * p.fs));
  if (p.xsum.size() < size_t(nt * p.gs)) p.xsum.resize(size_t(nt * p.gs));
  if (p.sf.size() < size_t(2 * kRowsMax * p.gs)) p.sf.resize(size_t(2 * kRowsMax * p.gs));
  if (p.tmp.size() < size_t(span)) p.tmp.resize(size_t(span));
  for (int t = 0; t < nt; ++t) {
    const float* in = x + t * ldx;
    float* xs = p.xsum.data() + t * p.gs;
    for (int64_t g = 0; g < p.gs; ++g) xs[g] = 0.f;
    group_sums(in, cols, group, xs);
    int8_t* xq = p.xq.data() + t * p.xs;
    float* fac = p.fac.data() + t * p.fs;
    if (parts == 1)
      split_pack<1>(in, cols, bits, group, xq, fac, p.tmp.data());
    else if (parts == 2)
      split_pack<2>(in, cols, bits, group, xq, fac, p.tmp.data());
    else
      split_pack<kVnniParts>(in, cols, bits, group, xq, fac, p.tmp.data());
  }
}

INK_VNNI inline __mmask64 bytes_mask(int64_t n) {
  return n >= 64 ? ~__mmask64(0) : (n <= 0 ? __mmask64(0) : (__mmask64(1) << n) - 1);
}

// Row r's group scales and biases as f32 (zero padded to gs).
INK_VNNI inline void row_sidecars(const MatView& w, int64_t r, int64_t ngroups, int64_t gs,
                                  float* s, float* b) {
  const size_t ssz = dtype_size(w.scale_dtype);
  const uint8_t* srow = w.scales + size_t(r * w.scale_stride) * ssz;
  const uint8_t* brow = w.biases + size_t(r * w.scale_stride) * ssz;
  if (w.scale_dtype == DType::BF16) {
    const uint16_t* s16 = reinterpret_cast<const uint16_t*>(srow);
    const uint16_t* b16 = reinterpret_cast<const uint16_t*>(brow);
    for (int64_t g = 0; g < ngroups; g += 16) {
      const __mmask16 m = __mmask16((1u << std::min<int64_t>(16, ngroups - g)) - 1u);
      _mm512_storeu_ps(s + g,
                       _mm512_castsi512_ps(_mm512_slli_epi32(
                           _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, s16 + g)), 16)));
      _mm512_storeu_ps(b + g,
                       _mm512_castsi512_ps(_mm512_slli_epi32(
                           _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, b16 + g)), 16)));
    }
  } else {
    for (int64_t g = 0; g < ngroups; ++g) {
      s[g] = load_as_f32(w.scale_dtype, srow, size_t(g));
      b[g] = load_as_f32(w.scale_dtype, brow, size_t(g));
    }
  }
  for (int64_t g = ngroups; g < gs; ++g) s[g] = b[g] = 0.f;
}

INK_VNNI inline void prefetch_sidecars(const MatView& w, int64_t r, int64_t ngroups) {
  const size_t ssz = dtype_size(w.scale_dtype), off = size_t(r * w.scale_stride) * ssz;
  for (size_t b = 0; b < size_t(ngroups) * ssz; b += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(w.scales + off + b), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(w.biases + off + b), _MM_HINT_T0);
  }
}

// Rows [r0, r1) in blocks of R rows for NT tokens [t0, t0 + NT) of p; kCps chunks per span.
// pf: the rows pf blocks ahead are prefetched as a block is read (0: none; decode tuning).
template <int kBits, int kCps, int NT, int R, int kParts>
INK_VNNI void rows_kernel(const Prepared& p, int t0, const MatView& w, int64_t r0, int64_t r1,
                          float* y, int64_t ldy, int pf) {
  constexpr int V = kBits == 4 ? 2 : 1;
  // Bytes of codes per chunk of 64 V columns; widths other than 4 and 8 are unpacked to bytes by
  // VPERMB (qword i gets the `bits` bytes of columns 8i .. 8i + 7) and VPMULTISHIFTQB (byte j of
  // a qword: the bits from j * bits on), then an AND.
  constexpr int64_t kChunkBytes = kBits == 4 ? 64 : 8 * kBits;
  constexpr bool kVbmi = kBits != 4 && kBits != 8;
  constexpr int64_t kSpanBytes = kChunkBytes * kCps;
  constexpr int64_t kXSpan = int64_t(kCps) * kParts * V * 64;  // parts bytes per span
  // 65536 A + 256 C + D in one int32 (span: 64 V kCps columns, 4 V kCps per lane set).
  constexpr bool kFused = kParts == 3 && affine_vnni_fused(kBits, 64 * V * kCps);
  const int64_t ngroups = w.cols / w.group, gs = p.gs;
  const int64_t span = affine_vnni_span(kBits, w.group), spans = (w.cols + span - 1) / span;
  const int64_t gps = span / w.group;  // groups per span: 1, 2 or 4
  const int64_t row_bytes = w.cols * kBits / 8;
  alignas(64) int32_t idx_arr[16];
  for (int k = 0; k < 16; ++k)
    idx_arr[k] = int32_t(affine_vnni_lane_col(kBits, span, k, 0) / w.group);
  const __m512i idx = _mm512_load_si512(idx_arr);
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const __m512i code_mask = _mm512_set1_epi8(char((1 << kBits) - 1));
  alignas(64) uint8_t perm_arr[64], shift_arr[64];
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) {
      perm_arr[8 * i + j] = uint8_t(i * kBits + j);
      shift_arr[8 * i + j] = uint8_t(j * kBits);
    }
  const __m512i perm = _mm512_load_si512(perm_arr), shifts = _mm512_load_si512(shift_arr);
  const __m512 inv256 = _mm512_set1_ps(1.f / 256.f);
  float* sfb = const_cast<float*>(p.sf.data());
  // p's buffers and strides in locals: the compiler otherwise reloads them (a thread_local) in
  // every span.
  const int8_t* const xq = p.xq.data();
  const float* const facs = p.fac.data();
  const float* const xsums = p.xsum.data();
  const int64_t xq_stride = p.xs, fac_stride = p.fs;
  // Every span but the last lies whole inside the row: its chunks load under a constant mask.
  __mmask64 last_mask[kCps];
  for (int ch = 0; ch < kCps; ++ch)
    last_mask[ch] = bytes_mask(
        std::min(kChunkBytes, row_bytes - ((spans - 1) * kSpanBytes + ch * kChunkBytes)));
  constexpr __mmask64 kFullMask =
      kChunkBytes >= 64 ? ~__mmask64(0) : (__mmask64(1) << kChunkBytes) - 1;
  for (int64_t rb = r0; rb < r1; rb += R) {
    if constexpr (R > 1) {
      if (rb + R > r1) {
        rows_kernel<kBits, kCps, NT, 1, kParts>(p, t0, w, rb, r1, y, ldy, pf);
        return;
      }
    }
    const uint8_t* codes[R];
    const char* ahead[R];  // the same row of a block further on: prefetched as this is read
    float bias[R][NT];
    _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i) {
      codes[i] = w.row(rb + i);
      const int64_t rn = std::min(rb + R * std::max(pf, 1) + i, r1 - 1);
      ahead[i] = reinterpret_cast<const char*>(w.row(rn));
      if (pf > 0) prefetch_sidecars(w, rn, ngroups);
      float* s = sfb + i * gs;
      float* b = sfb + (kRowsMax + i) * gs;
      row_sidecars(w, rb + i, ngroups, gs, s, b);
      _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) {
        const float* xsum = xsums + (t0 + t) * gs;
        __m512 a = _mm512_setzero_ps();
        for (int64_t g = 0; g < ngroups; g += 16)
          a = _mm512_fmadd_ps(_mm512_loadu_ps(b + g), _mm512_loadu_ps(xsum + g), a);
        alignas(64) float lanes[16];
        _mm512_store_ps(lanes, a);
        bias[i][t] = vnni_sum16(lanes);
      }
    }
    __m512 tot[R][NT];
    _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i)
        _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) tot[i][t] = _mm512_setzero_ps();
    for (int64_t sp = 0; sp < spans; ++sp) {
      // The span's code vectors of every row (masked loads: never past the row's end).
      __m512i q[kCps][V][R];
      const bool last = sp + 1 == spans;
      _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i) {
        _Pragma("GCC unroll 2") for (int ch = 0; ch < kCps; ++ch) {
          const int64_t off = sp * kSpanBytes + ch * kChunkBytes;
          const __m512i raw =
              _mm512_maskz_loadu_epi8(last ? last_mask[ch] : kFullMask, codes[i] + off);
          if (pf > 0) _mm_prefetch(ahead[i] + off, _MM_HINT_T0);
          if constexpr (kVbmi) {
            q[ch][0][i] = _mm512_and_si512(
                _mm512_multishift_epi64_epi8(shifts, _mm512_permutexvar_epi8(perm, raw)),
                code_mask);
          } else if constexpr (V == 1) {
            q[ch][0][i] = raw;
          } else {
            q[ch][0][i] = _mm512_and_si512(raw, low4);
            q[ch][V - 1][i] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
          }
        }
      }
      __m512 sv[R];
      _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i) {
        const float* s = sfb + i * gs + sp * gps;
        sv[i] = gps > 1 ? _mm512_permutexvar_ps(idx, _mm512_loadu_ps(s)) : _mm512_set1_ps(s[0]);
      }
      _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) {
        const int8_t* xb = xq + (t0 + t) * xq_stride + sp * kXSpan;
        __m512i xa[kCps][V], xc[kCps][V], xd[kCps][V];
        _Pragma("GCC unroll 2") for (int ch = 0; ch < kCps; ++ch)
            _Pragma("GCC unroll 2") for (int v = 0; v < V; ++v) {
          xa[ch][v] = _mm512_loadu_si512(xb + ((ch * kParts + 0) * V + v) * 64);
          if constexpr (kParts > 1)
            xc[ch][v] = _mm512_loadu_si512(xb + ((ch * kParts + 1) * V + v) * 64);
          if constexpr (kParts > 2)
            xd[ch][v] = _mm512_loadu_si512(xb + ((ch * kParts + 2) * V + v) * 64);
        }
        __m512 fac = _mm512_loadu_ps(facs + (t0 + t) * fac_stride + sp * 16);
        if constexpr (kFused) fac = _mm512_mul_ps(fac, inv256);  // 2^(E-16), for every row
        _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i) {
          __m512i acc = _mm512_setzero_si512();
          _Pragma("GCC unroll 2") for (int ch = 0; ch < kCps; ++ch)
              _Pragma("GCC unroll 2") for (int v = 0; v < V; ++v) acc =
                  _mm512_dpbusd_epi32(acc, q[ch][v][i], xa[ch][v]);
          if constexpr (kParts == 1) {  // fast: one part, times its lane factor M / 127
            tot[i][t] =
                _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(acc), fac), sv[i], tot[i][t]);
            continue;
          }
          acc = _mm512_slli_epi32(acc, 8);
          _Pragma("GCC unroll 2") for (int ch = 0; ch < kCps; ++ch)
              _Pragma("GCC unroll 2") for (int v = 0; v < V; ++v) acc =
                  _mm512_dpbusd_epi32(acc, q[ch][v][i], xc[ch][v]);
          __m512 f;
          if constexpr (kFused) {  // part d into the same sums: 65536 A + 256 C + D < 2^31
            acc = _mm512_slli_epi32(acc, 8);
            _Pragma("GCC unroll 2") for (int ch = 0; ch < kCps; ++ch)
                _Pragma("GCC unroll 2") for (int v = 0; v < V; ++v) acc =
                    _mm512_dpbusd_epi32(acc, q[ch][v][i], xd[ch][v]);
            f = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), fac);
          } else {
            f = _mm512_cvtepi32_ps(acc);
            if constexpr (kParts > 2) {  // part d in its own sums (65536 A would overflow)
              __m512i lo = _mm512_setzero_si512();
              _Pragma("GCC unroll 2") for (int ch = 0; ch < kCps; ++ch)
                  _Pragma("GCC unroll 2") for (int v = 0; v < V; ++v) lo =
                      _mm512_dpbusd_epi32(lo, q[ch][v][i], xd[ch][v]);
              f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(lo), inv256, f);
            }
            f = _mm512_mul_ps(f, fac);
          }
          tot[i][t] = _mm512_fmadd_ps(f, sv[i], tot[i][t]);
        }
      }
    }
    _Pragma("GCC unroll 8") for (int i = 0; i < R; ++i)
        _Pragma("GCC unroll 8") for (int t = 0; t < NT; ++t) {
      alignas(64) float lanes[16];
      _mm512_store_ps(lanes, tot[i][t]);
      y[t * ldy + rb + i] = vnni_sum16(lanes) + bias[i][t];
    }
  }
}

// Tokens [t0, t0 + nt) (nt 1 to 4) of p over rows [r0, r1), with p's parts of x.
template <int kBits, int kCps, int kParts>
void pass_parts(const Prepared& p, int t0, int nt, const MatView& w, int64_t r0, int64_t r1,
                float* y, int64_t ldy, int pf) {
  if (nt == 1)
    rows_kernel<kBits, kCps, 1, 4, kParts>(p, t0, w, r0, r1, y, ldy, pf);
  else if (nt == 2)
    rows_kernel<kBits, kCps, 2, 2, kParts>(p, t0, w, r0, r1, y, ldy, pf);
  else if (nt == 3)
    rows_kernel<kBits, kCps, 3, 1, kParts>(p, t0, w, r0, r1, y, ldy, pf);
  else
    rows_kernel<kBits, kCps, 4, 1, kParts>(p, t0, w, r0, r1, y, ldy, pf);
}

template <int kBits, int kCps>
void pass(const Prepared& p, int t0, int nt, const MatView& w, int64_t r0, int64_t r1, float* y,
          int64_t ldy, int pf) {
  if (p.parts == 1)
    pass_parts<kBits, kCps, 1>(p, t0, nt, w, r0, r1, y, ldy, pf);
  else if (p.parts == 2)
    pass_parts<kBits, kCps, 2>(p, t0, nt, w, r0, r1, y, ldy, pf);
  else
    pass_parts<kBits, kCps, kVnniParts>(p, t0, nt, w, r0, r1, y, ldy, pf);
}

// A width other than 4 bits: group 128 spans two 64-column chunks, smaller groups one.
template <int kBits>
void pass_width(bool g128, const Prepared& p, int t0, int nt, const MatView& w, int64_t r0,
                int64_t r1, float* y, int64_t ldy, int pf) {
  if (g128)
    pass<kBits, 2>(p, t0, nt, w, r0, r1, y, ldy, pf);
  else
    pass<kBits, 1>(p, t0, nt, w, r0, r1, y, ldy, pf);
}

bool cpu_has_vnni() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vbmi");
}

#endif  // INKLING_HAVE_VNNI

}  // namespace

bool affine_vnni_available() {
#if INKLING_HAVE_VNNI
  static const bool has = cpu_has_vnni();
  return has;
#else
  return false;
#endif
}

bool affine_vnni_enabled() {
  return g_switch.enabled(affine_vnni_available());
}

void set_affine_vnni_enabled(bool on) {
  g_switch.set(on, affine_vnni_available());
}

void affine_vnni_parts_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w,
                            int64_t r0, int64_t r1, float* y, int64_t ldy, int parts) {
#if INKLING_HAVE_VNNI
  thread_local Prepared p;
  prepare(x, int(n_tok), ldx, w.cols, w.bits, w.group, parts, p);
  const int pf = tuning(w.bits == 8   ? TuneParam::kBytesPrefetch
                        : w.bits == 4 ? TuneParam::kQ4Prefetch
                                      : TuneParam::kAffinePrefetch);
  // One token: every row in one pass. More: blocks of rows (in L1) visited by up to 4 tokens at a
  // time (one row x 4 tokens; 2 rows x 2 tokens for a pair: 4-token passes measured 1.2x the
  // pairs' GB/s at 4 and 16 tokens in L2 and 1.3x at 4 from DRAM on Ice Lake), so the codes come
  // from memory once. A (row, token) result depends on neither.
  const int64_t block = n_tok == 1 ? r1 - r0 : 16;
  for (int64_t rb = r0; rb < r1; rb += block) {
    const int64_t re = std::min(r1, rb + block);
    for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxTok) {
      const int nt = int(std::min<int64_t>(kMaxTok, n_tok - t0));
      float* yb = y + t0 * ldy;
      const bool g128 = w.group == 128;  // two 64-column chunks per span (not for 4 bits)
      switch (w.bits) {
        case 1:
          pass_width<1>(g128, p, int(t0), nt, w, rb, re, yb, ldy, pf);
          break;
        case 2:
          pass_width<2>(g128, p, int(t0), nt, w, rb, re, yb, ldy, pf);
          break;
        case 3:
          pass_width<3>(g128, p, int(t0), nt, w, rb, re, yb, ldy, pf);
          break;
        case 4:
          pass<4, 1>(p, int(t0), nt, w, rb, re, yb, ldy, pf);
          break;
        case 5:
          pass_width<5>(g128, p, int(t0), nt, w, rb, re, yb, ldy, pf);
          break;
        case 6:
          pass_width<6>(g128, p, int(t0), nt, w, rb, re, yb, ldy, pf);
          break;
        default:
          pass_width<8>(g128, p, int(t0), nt, w, rb, re, yb, ldy, pf);
          break;
      }
    }
  }
#else
  (void)x, (void)n_tok, (void)ldx, (void)w, (void)r0, (void)r1, (void)y, (void)ldy, (void)parts;
#endif
}

void affine_vnni_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                      int64_t r1, float* y, int64_t ldy) {
  affine_vnni_parts_rows(x, n_tok, ldx, w, r0, r1, y, ldy, kVnniParts);
}

void affine_vnni_fast_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                           int64_t r1, float* y, int64_t ldy) {
  affine_vnni_parts_rows(x, n_tok, ldx, w, r0, r1, y, ldy, 1);
}

void affine_vnni_fine_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                           int64_t r1, float* y, int64_t ldy) {
  affine_vnni_parts_rows(x, n_tok, ldx, w, r0, r1, y, ldy, 2);
}

}  // namespace inkling
