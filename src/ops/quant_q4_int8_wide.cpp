// The 512-bit form of the int8 4-bit kernel (quant_q4_int8.h), for CPUs with AVX512-VNNI (Ice
// Lake and later Xeons, Zen 4). A register holds a pair of spans: 64 bytes of codes, the low half
// span s, the high half span s + 1, and x's parts stored per pair as [A of s, A of s+1, B of s,
// B of s+1] (q4_int8_prepare with pairs), so the low nibbles meet one 64-byte load of parts and
// the high nibbles the next. VPDPBUSD sums 4 byte products per int32 lane: lane l of each half
// gets A's and B's bytes 4l..4l+3 of its span, the very integers the AVX2 form's VPMADDUBSW +
// VPMADDWD make (exact in both; 2 parts: 256 a-sums + c-sums). NVFP4 codes become |2 e2m1| by a
// VPSHUFB table and their sign bits negate x under a mask (the AVX2 form's VPSIGNB; x's parts are
// within +-127, and a -0 code has magnitude 0 either way). The f32 steps per lane are the AVX2
// form's: fma(f32(sums), w_l * d_l, acc) with the low half of acc the even-span chain and the
// high half the odd one; an odd last span goes into the even chain in 256 bits; then
// sum8(even + odd) and the affine bias term. So every (row, token) gets the AVX2 form's bits.
#include <algorithm>
#include <limits>

#include "ops/quant_q4_int8.h"
#include "ops/quant_q4_int8_prepared.h"

#if defined(__x86_64__)
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // see quant_q4_bf16dot.cpp
#pragma GCC diagnostic ignored "-Wuninitialized"        // the same, in the cast intrinsics
#endif
#include <immintrin.h>

#include "ops/nvfp4_factors_avx512-inl.h"

#define INK_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")))
// GCC gives a lambda in a target function the target only when asked.
#define INK_AVX512_LAMBDA \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma"), always_inline))

namespace inkling {

namespace {

// The weight factors of a pair of spans q (spans 2q, 2q+1) per lane, as the AVX2 form takes them
// for each span.
template <bool kNv, int kGroup>
INK_AVX512 inline __m512 pair_factors(const float* rs, int64_t q) {
  if constexpr (kNv) {  // 16 columns a factor: 2 lanes each, 8 per pair
    const __m512i idx = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    return _mm512_permutexvar_ps(idx, _mm512_castps256_ps512(_mm256_loadu_ps(rs + 8 * q)));
  } else if constexpr (kGroup == 32) {  // 4 lanes a group, 4 groups per pair
    const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(_mm_loadu_ps(rs + 4 * q)));
  } else if constexpr (kGroup == 64) {  // a group per span
    const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(_mm_castsi128_ps(_mm_loadl_epi64(
                                          reinterpret_cast<const __m128i*>(rs + 2 * q)))));
  } else {  // 128: one group per pair
    return _mm512_set1_ps(rs[q]);
  }
}

// The same for the odd last span s alone (the AVX2 form's factors of span s).
template <bool kNv, int kGroup>
INK_AVX512 inline __m256 span_factors(const float* rs, int64_t s) {
  if constexpr (kNv) {
    return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(rs + 4 * s)),
                                    _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
  } else if constexpr (kGroup == 32) {
    return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_castsi128_ps(_mm_loadl_epi64(
                                        reinterpret_cast<const __m128i*>(rs + 2 * s)))),
                                    _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1));
  } else {
    return _mm256_set1_ps(rs[s / (kGroup / 64)]);
  }
}

}  // namespace

// 16 E4M3 scales at a time: e4m3x8 in 512 bits (the same f16 fields, VCVTPH2PS, 2^8, NaN for
// 0x7f / 0xff, then * scale2 * 0.5). The AVX2 form's 8 at a time were 6.5% of Inkling 2 Mini's
// decode on an Ice Lake.
INK_AVX512 void q4_int8_wide_nvfp4_factors(const MatView& w, int64_t r, Q4Int8Prepared& p) {
  const uint8_t* s = w.scales + size_t(r * w.scale_stride);
  const int64_t n = int64_t(p.rs.size());
  const __m512 k2 = _mm512_set1_ps(w.scale2);
  for (int64_t k = 0; k < n; k += 16) {
    const __mmask16 m = n - k >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - k)) - 1);
    _mm512_mask_storeu_ps(p.rs.data() + k, m, nvfp4_avx512::half_factors16(s + k, m, k2));
  }
}

namespace {

// Row r for tokens t0 .. t0 + NT - 1.
template <bool kNv, int kGroup, int kParts, int NT>
INK_AVX512 inline void wide_row(const Q4Int8Prepared& p, int64_t t0, const MatView& w, int64_t r,
                                float* y, int64_t ldy, const char* ahead) {
  const int64_t cols = w.cols, ns = cols / 64, np = ns / 2;
  const uint8_t* codes = w.row(r);
  const int8_t* a[NT];
  const int8_t* c[NT];
  const float* dl[NT];
  for (int t = 0; t < NT; ++t) {
    a[t] = p.a.data() + (t0 + t) * cols;
    c[t] = kParts == 2 ? p.c.data() + (t0 + t) * cols : nullptr;
    dl[t] = p.dl.data() + (t0 + t) * cols / 8;
  }
  const float* rs = p.rs.data();
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  const __m512i mag = _mm512_broadcast_i32x4(
      _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, 1, 2, 3, 4, 6, 8, 12));  // |2 e2m1| of code & 7
  const __m512i sign_bit = _mm512_set1_epi8(0x08);
  const __m512i zero = _mm512_setzero_si512();
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t q = 0; q < np; ++q) {
    const __m512i v = _mm512_loadu_si512(codes + 64 * q);
    if (ahead) _mm_prefetch(ahead + 64 * q, _MM_HINT_T0);
    __m512i qa = _mm512_and_si512(v, m4), qb = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
    __mmask64 na = 0, nb = 0;
    if constexpr (kNv) {
      na = _mm512_test_epi8_mask(qa, sign_bit), nb = _mm512_test_epi8_mask(qb, sign_bit);
      qa = _mm512_shuffle_epi8(mag, qa), qb = _mm512_shuffle_epi8(mag, qb);
    }
    const __m512 wf = pair_factors<kNv, kGroup>(rs, q);
    for (int t = 0; t < NT; ++t) {
      auto part_sums = [&](__m512i sums, const int8_t* x) INK_AVX512_LAMBDA {
        __m512i xa = _mm512_load_si512(x + 128 * q), xb = _mm512_load_si512(x + 128 * q + 64);
        if constexpr (kNv)
          xa = _mm512_mask_sub_epi8(xa, na, zero, xa), xb = _mm512_mask_sub_epi8(xb, nb, zero, xb);
        return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(sums, qa, xa), qb, xb);
      };
      __m512i sums = part_sums(zero, a[t]);
      if constexpr (kParts == 2) sums = part_sums(_mm512_slli_epi32(sums, 8), c[t]);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums),
                               _mm512_mul_ps(wf, _mm512_loadu_ps(dl[t] + 16 * q)), acc[t]);
    }
  }
  __m256 even[NT], odd[NT];
  for (int t = 0; t < NT; ++t) {
    even[t] = _mm512_castps512_ps256(acc[t]);
    odd[t] = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[t]), 1));
  }
  if (ns % 2) {  // the last span, [A, B] in its parts, into the even chain
    const int64_t s = ns - 1;
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + 32 * s));
    if (ahead) _mm_prefetch(ahead + 32 * s, _MM_HINT_T0);
    const __m256i m4h = _mm256_set1_epi8(0x0f);
    __m256i qa = _mm256_and_si256(v, m4h), qb = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4h);
    __mmask32 na = 0, nb = 0;
    if constexpr (kNv) {
      const __m256i sb = _mm256_set1_epi8(0x08), mh = _mm512_castsi512_si256(mag);
      na = _mm256_test_epi8_mask(qa, sb), nb = _mm256_test_epi8_mask(qb, sb);
      qa = _mm256_shuffle_epi8(mh, qa), qb = _mm256_shuffle_epi8(mh, qb);
    }
    const __m256 wf = span_factors<kNv, kGroup>(rs, s);
    for (int t = 0; t < NT; ++t) {
      auto part_sums = [&](__m256i sums, const int8_t* x) INK_AVX512_LAMBDA {
        __m256i xa = _mm256_load_si256(reinterpret_cast<const __m256i*>(x + 64 * s));
        __m256i xb = _mm256_load_si256(reinterpret_cast<const __m256i*>(x + 64 * s + 32));
        if constexpr (kNv) {
          const __m256i z = _mm256_setzero_si256();
          xa = _mm256_mask_sub_epi8(xa, na, z, xa), xb = _mm256_mask_sub_epi8(xb, nb, z, xb);
        }
        return _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(sums, qa, xa), qb, xb);
      };
      __m256i sums = part_sums(_mm256_setzero_si256(), a[t]);
      if constexpr (kParts == 2) sums = part_sums(_mm256_slli_epi32(sums, 8), c[t]);
      even[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums),
                                _mm256_mul_ps(wf, _mm256_loadu_ps(dl[t] + 8 * s)), even[t]);
    }
  }
  for (int t = 0; t < NT; ++t) {
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, _mm256_add_ps(even[t], odd[t]));
    float v = q4_int8_sum8(lanes);
    if constexpr (!kNv) {
      const int64_t ng = cols / kGroup;
      v += q4_int8_bias(p.rb.data(), p.gsum.data() + (t0 + t) * ng, ng);
    }
    y[(t0 + t) * ldy + r] = v;
  }
}

}  // namespace

bool q4_int8_wide_cpu() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
         __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

void q4_int8_wide_rows(Q4Int8Prepared& p, int64_t n_tok, const MatView& w, int64_t r0, int64_t r1,
                       float* y, int64_t ldy, int parts) {
  q4_int8_dispatch(w, parts, [&](auto nv, auto group, auto np) {
    q4_int8_row_passes(
        p, n_tok, w, r0, r1,
        [&](auto nt, int64_t t0, int64_t r, const char* pf) {
          wide_row<nv(), group(), np(), nt()>(p, t0, w, r, y, ldy, pf);
        },
        nv() ? q4_int8_wide_nvfp4_factors : q4_int8_row_factors);
  });
}

}  // namespace inkling

#endif  // __x86_64__
