// The AVX2 int8 kernel for affine 4-bit and NVFP4 weights in fast numerics (quant_q4_int8.h).
// x86 intrinsics behind a target attribute and a CPUID check, as the other x86-only kernels
// (Highway 1.0 has no u8 x s8 pairwise multiply); the split of x is plain C++ shared with the twin
// (quant_q4_int8_ref.cpp).
#include "ops/quant_q4_int8.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "base/dtype.h"
#include "ops/kernel_switch.h"
#include "ops/quant_q4_int8_prepared.h"
#include "ops/tuning.h"

#if defined(__x86_64__)
#define INKLING_HAVE_Q4INT8 1
#include <cpuid.h>
#include <immintrin.h>
#define INK_AVX2 __attribute__((target("avx2,fma")))
#define INK_AVX2_F16C __attribute__((target("avx2,fma,f16c")))
// GCC gives a lambda in a target function the target only when asked.
#define INK_AVX2_LAMBDA __attribute__((target("avx2,fma"), always_inline))
#else
#define INKLING_HAVE_Q4INT8 0
#endif

namespace inkling {

namespace {

constexpr int64_t kMaxTokens = 16;  // kFewMaxTokens: 17+ take the gemm

KernelSwitch g_switch{"INKLING_NO_Q4INT8"};
KernelSwitch g_wide_switch{"INKLING_NO_Q4INT8_512"};

int8_t clamp127(float v) {
  return int8_t(std::clamp(v, -127.f, 127.f));
}

}  // namespace

void q4_int8_split(const float* x, int64_t cols, int parts, int64_t group, int8_t* a, int8_t* c,
                   float* d, float* gsum) {
  for (int64_t s = 0; s < cols / 64; ++s) {
    float inv[2];  // 127 / M of the span's two blocks; 0 for parts 0
    for (int h = 0; h < 2; ++h) {
      const int64_t b = 2 * s + h;
      float m = 0.f;
      bool finite = true;
      for (int i = 0; i < 32; ++i) {
        finite = finite && std::isfinite(x[b * 32 + i]);
        m = std::max(m, std::fabs(x[b * 32 + i]));
      }
      const bool zero = !finite || m < kQ4Int8Tiny;
      d[b] = !finite ? std::numeric_limits<float>::quiet_NaN()
             : zero  ? 0.f
                     : (parts == 2 ? (m / 127.f) * 0x1p-8f : m / 127.f);
      inv[h] = zero ? 0.f : 127.f / m;
    }
    for (int i = 0; i < 64; ++i) {
      const int col = q4_int8_col(i);
      const size_t at = size_t(s * 64 + i);
      const float k = inv[col / 32];
      if (k == 0.f) {  // zero or non-finite block
        a[at] = 0;
        if (parts == 2) c[at] = 0;
        continue;
      }
      const float v = x[s * 64 + col] * k;
      const float q = std::nearbyint(v);
      a[at] = clamp127(q);
      // |v - q| <= 1/2 (exact in f32), so 256 (v - q) is in [-128, 128]: clamped to 127 on both
      // sides (the kernel moves NVFP4's sign onto x with VPSIGNB, which cannot negate -128).
      if (parts == 2) c[at] = clamp127(std::nearbyint((v - q) * 256.f));
    }
  }
  if (group > 0)
    for (int64_t g = 0; g < cols / group; ++g) {
      float lanes[8] = {};
      for (int64_t i = 0; i < group; ++i) lanes[i % 8] += x[g * group + i];
      gsum[g] = q4_int8_sum8(lanes);
    }
}

bool q4_int8_handles(const MatView& w, int64_t n_tok) {
  if (n_tok < 1 || n_tok > kMaxTokens || w.cols <= 0 || w.cols % 64 != 0) return false;
  if (w.format == WeightFormat::kNvfp4) return w.group == 16 && w.bits == 4;
  return w.format == WeightFormat::kAffine && w.bits == 4 && w.biases &&
         (w.group == 32 || w.group == 64 || w.group == 128) && w.cols % w.group == 0;
}

#if INKLING_HAVE_Q4INT8
namespace {

INK_AVX2 inline float sum8(__m256 v) {
  const __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 q = _mm_add_ps(h, _mm_movehl_ps(h, h));  // (v0+v4)+(v2+v6), (v1+v5)+(v3+v7)
  return _mm_cvtss_f32(_mm_add_ss(q, _mm_shuffle_ps(q, q, 1)));
}

INK_AVX2 inline float hmax8(__m256 v) {
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_max_ss(h, _mm_shuffle_ps(h, h, 1)));
}

// 32 int32 in column order -> 32 int8 in column order (values within +-127).
INK_AVX2 inline __m256i pack32(__m256i i0, __m256i i1, __m256i i2, __m256i i3) {
  const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
  return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Two blocks' bytes in column order (n0: columns 0-31, n1: 32-63) -> A (even columns) and B (odd).
INK_AVX2 inline void to_span_order(__m256i n0, __m256i n1, int8_t* out) {
  const __m256i eo = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, 0, 2, 4,
                                      6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  // Per 128-bit lane evens then odds; qwords 0,2,1,3: a block's 16 evens, then its 16 odds.
  n0 = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(n0, eo), 0xd8);
  n1 = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(n1, eo), 0xd8);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_permute2x128_si256(n0, n1, 0x20));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32),
                      _mm256_permute2x128_si256(n0, n1, 0x31));
}

// q4_int8_split with AVX2, bitwise: the same maxima, products, roundings (to nearest even, as
// std::nearbyint in the default mode) and clamps, the group sums in the same lane order. Spans with
// a non-finite element take the scalar split.
INK_AVX2 void split_avx2(const float* x, int64_t cols, int parts, int64_t group, int8_t* a,
                         int8_t* c, float* d, float* gsum) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 lim = _mm256_set1_ps(127.f), nlim = _mm256_set1_ps(-127.f);
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  for (int64_t s = 0; s < cols / 64; ++s) {
    const float* xs = x + s * 64;
    __m256 v[8];
    __m256 fin = _mm256_setzero_ps();
    for (int k = 0; k < 8; ++k) {
      v[k] = _mm256_loadu_ps(xs + 8 * k);
      fin = _mm256_or_ps(fin, _mm256_mul_ps(v[k], _mm256_setzero_ps()));  // NaN if inf / NaN
    }
    if (_mm256_movemask_ps(_mm256_cmp_ps(fin, fin, _CMP_UNORD_Q)) != 0) {
      q4_int8_split(xs, 64, parts, 0, a + s * 64, parts == 2 ? c + s * 64 : nullptr, d + 2 * s,
                    nullptr);
      continue;
    }
    __m256i qa[8], qc[8];
    for (int h = 0; h < 2; ++h) {
      __m256 mv = _mm256_max_ps(
          _mm256_max_ps(_mm256_and_ps(v[4 * h], abs_mask), _mm256_and_ps(v[4 * h + 1], abs_mask)),
          _mm256_max_ps(_mm256_and_ps(v[4 * h + 2], abs_mask),
                        _mm256_and_ps(v[4 * h + 3], abs_mask)));
      const float m = hmax8(mv);
      const bool zero = m < kQ4Int8Tiny;
      d[2 * s + h] = zero ? 0.f : (parts == 2 ? (m / 127.f) * 0x1p-8f : m / 127.f);
      const __m256 inv = _mm256_set1_ps(zero ? 0.f : 127.f / m);
      for (int k = 4 * h; k < 4 * h + 4; ++k) {
        const __m256 p = _mm256_mul_ps(v[k], inv);
        const __m256 q = _mm256_round_ps(p, kRound);
        qa[k] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(q, nlim), lim));
        if (parts == 2) {
          const __m256 r =
              _mm256_round_ps(_mm256_mul_ps(_mm256_sub_ps(p, q), _mm256_set1_ps(256.f)), kRound);
          qc[k] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(r, nlim), lim));
        }
      }
    }
    to_span_order(pack32(qa[0], qa[1], qa[2], qa[3]), pack32(qa[4], qa[5], qa[6], qa[7]),
                  a + s * 64);
    if (parts == 2)
      to_span_order(pack32(qc[0], qc[1], qc[2], qc[3]), pack32(qc[4], qc[5], qc[6], qc[7]),
                    c + s * 64);
  }
  if (group > 0)
    for (int64_t g = 0; g < cols / group; ++g) {
      __m256 acc = _mm256_setzero_ps();
      for (int64_t i = 0; i < group; i += 8)
        acc = _mm256_add_ps(acc, _mm256_loadu_ps(x + g * group + i));
      gsum[g] = sum8(acc);
    }
}

// [A of s, B of s, A of s+1, B of s+1] -> [A of s, A of s+1, B of s, B of s+1] for each whole
// pair of spans of one token's parts.
void to_pair_order(int8_t* v, int64_t cols) {
  for (int64_t q = 0; q + 128 <= cols; q += 128) {
    int8_t tmp[32];
    std::memcpy(tmp, v + q + 32, 32);
    std::memcpy(v + q + 32, v + q + 64, 32);
    std::memcpy(v + q + 64, tmp, 32);
  }
}

}  // namespace

void q4_int8_prepare(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int parts,
                     bool pairs, Q4Int8Prepared& p) {
  const int64_t cols = w.cols, group = w.format == WeightFormat::kAffine ? w.group : 0;
  const int64_t ng = group ? cols / group : 0;
  int8_t* a = p.a.get(size_t(n_tok * cols));
  int8_t* c = parts == 2 ? p.c.get(size_t(n_tok * cols)) : nullptr;
  p.d.resize(size_t(n_tok * cols / 32));
  p.gsum.resize(size_t(n_tok * ng));
  for (int64_t t = 0; t < n_tok; ++t) {
    split_avx2(x + t * ldx, cols, parts, group, a + t * cols, c ? c + t * cols : nullptr,
               p.d.data() + t * cols / 32, p.gsum.data() + t * ng);
    if (pairs) {
      to_pair_order(a + t * cols, cols);
      if (c) to_pair_order(c + t * cols, cols);
    }
  }
  p.rs.resize(size_t(w.format == WeightFormat::kNvfp4 ? cols / 16 : ng));
  p.rb.resize(size_t(ng));
}

namespace {

// 8 E4M3 bytes -> f32, bitwise e4m3_to_f32: the sign, exponent and mantissa go into an f16's
// fields one place over (bias 15 for 7: the f16 is the value times 2^-8, subnormals included),
// VCVTPH2PS widens it exactly and 2^8 restores it; 0x7f / 0xff (E4M3's NaN) give e4m3_to_f32's
// positive quiet NaN. No table gathers: 256 of them per row of 4096 columns were two thirds of an
// L2-resident NVFP4 call.
INK_AVX2_F16C inline __m256 e4m3x8(const uint8_t* s) {
  const __m128i b = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s)));
  const __m128i mag = _mm_and_si128(b, _mm_set1_epi16(0x7f));
  const __m128i h = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(b, _mm_set1_epi16(0x80)), 8),
                                 _mm_slli_epi16(mag, 7));
  const __m256 v = _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.f));
  const __m256 nan =
      _mm256_castsi256_ps(_mm256_cvtepi16_epi32(_mm_cmpeq_epi16(mag, _mm_set1_epi16(0x7f))));
  return _mm256_blendv_ps(v, _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN()), nan);
}

// n group values of a row (bf16, f16 or f32) as f32, eight at a time.
INK_AVX2 void to_f32(DType t, const uint8_t* src, size_t first, size_t n, float* out) {
  size_t i = 0;
  if (t == DType::BF16) {
    const uint16_t* s = reinterpret_cast<const uint16_t*>(src) + first;
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(
          out + i,
          _mm256_castsi256_ps(_mm256_slli_epi32(
              _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))),
              16)));
  } else if (t == DType::F32) {
    const float* s = reinterpret_cast<const float*>(src) + first;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_loadu_ps(s + i));
  }
  for (; i < n; ++i) out[i] = load_as_f32(t, src, first + i);  // f16, and the tail
}

}  // namespace

// (The table holds twice each E2M1 value, hence NVFP4's / 2.)
INK_AVX2_F16C void q4_int8_row_factors(const MatView& w, int64_t r, Q4Int8Prepared& p) {
  if (w.format == WeightFormat::kNvfp4) {
    const uint8_t* s = w.scales + size_t(r * w.scale_stride);
    const size_t n = p.rs.size();
    const __m256 k2 = _mm256_set1_ps(w.scale2), half = _mm256_set1_ps(0.5f);
    size_t k = 0;
    for (; k + 8 <= n; k += 8)
      _mm256_storeu_ps(p.rs.data() + k, _mm256_mul_ps(_mm256_mul_ps(e4m3x8(s + k), k2), half));
    for (; k < n; ++k) p.rs[k] = (e4m3_to_f32(s[k]) * w.scale2) * 0.5f;
    return;
  }
  const size_t base = size_t(r * w.scale_stride);
  to_f32(w.scale_dtype, w.scales, base, p.rs.size(), p.rs.data());
  to_f32(w.scale_dtype, w.biases, base, p.rb.size(), p.rb.data());
}

bool q4_int8_cpu_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;  // CPUID.1:ECX bit 29 (clang's builtin has no "f16c")
  return __get_cpuid(1, &a, &b, &c, &d) && ((c >> 29) & 1);
}

Q4Int8Prefetch q4_int8_prefetch(const MatView& w) {
  Q4Int8Prefetch pf;
  pf.dist = 4 * int64_t(tuning(TuneParam::kQ4Prefetch));
  pf.scale_elem = int64_t(dtype_size(w.scale_dtype));
  pf.scale_bytes =
      (w.format == WeightFormat::kNvfp4 ? w.cols / 16 : w.cols / w.group) * pf.scale_elem;
  return pf;
}

const char* q4_int8_prefetch_ahead(const MatView& w, const Q4Int8Prefetch& pf, int64_t r,
                                   int64_t r_end) {
  if (pf.dist <= 0 || r + pf.dist >= r_end) return nullptr;
  const int64_t off = (r + pf.dist) * w.scale_stride * pf.scale_elem;
  for (int64_t b = 0; b < pf.scale_bytes; b += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(w.scales) + off + b, _MM_HINT_T0);
    if (w.biases) _mm_prefetch(reinterpret_cast<const char*>(w.biases) + off + b, _MM_HINT_T0);
  }
  return reinterpret_cast<const char*>(w.row(r + pf.dist));
}

INK_AVX2 float q4_int8_bias(const float* rb, const float* gs, int64_t ng) {
  __m256 bl = _mm256_setzero_ps();
  int64_t g = 0;
  for (; g + 8 <= ng; g += 8)
    bl = _mm256_fmadd_ps(_mm256_loadu_ps(rb + g), _mm256_loadu_ps(gs + g), bl);
  float bsum = sum8(bl);
  for (; g < ng; ++g) bsum = std::fma(rb[g], gs[g], bsum);
  return bsum;
}

namespace {

// A's and B's pair sums of one part x (NVFP4: x takes the codes' signs sa / sb) in int16:
// |sum| <= 4 x 15 x 127 < 2^15, exact.
template <bool kSigned>
INK_AVX2 inline __m256i pair_sums(__m256i qa, __m256i qb, __m256i sa, __m256i sb, const int8_t* x) {
  __m256i xa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
  __m256i xb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32));
  if constexpr (kSigned) xa = _mm256_sign_epi8(xa, sa), xb = _mm256_sign_epi8(xb, sb);
  return _mm256_add_epi16(_mm256_maddubs_epi16(qa, xa), _mm256_maddubs_epi16(qb, xb));
}

// Sums of a span's 64 codes (A: low nibbles, B: high ones; NVFP4: their magnitudes, with the signs
// sa / sb to move onto x) times one token's parts at a (and c), as 8 int32 lanes.
template <int kParts, bool kSigned>
INK_AVX2 inline __m256i span_sums(__m256i qa, __m256i qb, __m256i sa, __m256i sb, const int8_t* a,
                                  const int8_t* c) {
  const __m256i pa = pair_sums<kSigned>(qa, qb, sa, sb, a);
  if constexpr (kParts == 1) return _mm256_madd_epi16(pa, _mm256_set1_epi16(1));
  return _mm256_add_epi32(
      _mm256_madd_epi16(pa, _mm256_set1_epi16(256)),
      _mm256_madd_epi16(pair_sums<kSigned>(qa, qb, sa, sb, c), _mm256_set1_epi16(1)));
}

// Row r for tokens t0 .. t0 + NT - 1.
template <bool kNv, int kGroup, int kParts, int NT>
INK_AVX2 inline void row_kernel(const Q4Int8Prepared& p, int64_t t0, const MatView& w, int64_t r,
                                float* y, int64_t ldy, const char* ahead) {
  const int64_t cols = w.cols, ns = cols / 64;
  const uint8_t* codes = w.row(r);
  const int8_t* a[NT];
  const int8_t* c[NT];
  const float* dl[NT];
  for (int t = 0; t < NT; ++t) {
    a[t] = p.a.data() + (t0 + t) * cols;
    c[t] = kParts == 2 ? p.c.data() + (t0 + t) * cols : nullptr;
    dl[t] = p.dl.data() + (t0 + t) * cols / 8;
  }
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m256i lut = _mm256_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12, 0,
                                       1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
  const __m256i nv_pick = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
  const __m256i g32_pick = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
  const float* rs = p.rs.data();
  // Span s: its codes' weight factors and lane sums into acc (acc[t][s % 2] of the caller).
  auto step = [&](int64_t s, __m256* accs) INK_AVX2_LAMBDA {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + 32 * s));
    __m256i qa = _mm256_and_si256(v, m4), qb = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    __m256i sa = qa, sb = qb;
    __m256 wf;
    if constexpr (kNv) {
      sa = _mm256_shuffle_epi8(lut, qa), sb = _mm256_shuffle_epi8(lut, qb);
      qa = _mm256_abs_epi8(sa), qb = _mm256_abs_epi8(sb);
      wf = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(rs + 4 * s)), nv_pick);
    } else if constexpr (kGroup == 32) {
      wf = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_castsi128_ps(_mm_loadl_epi64(
                                        reinterpret_cast<const __m128i*>(rs + 2 * s)))),
                                    g32_pick);
    } else {
      wf = _mm256_broadcast_ss(rs + s / (kGroup / 64));
    }
    for (int t = 0; t < NT; ++t) {
      const __m256i sums = span_sums<kParts, kNv>(qa, qb, sa, sb, a[t] + 64 * s,
                                                  kParts == 2 ? c[t] + 64 * s : nullptr);
      accs[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums),
                                _mm256_mul_ps(wf, _mm256_loadu_ps(dl[t] + 8 * s)), accs[t]);
    }
  };
  // Two accumulators per token, even and odd spans (two FMA chains), named so they stay in
  // registers.
  __m256 even[NT], odd[NT];
  for (int t = 0; t < NT; ++t) even[t] = odd[t] = _mm256_setzero_ps();
  int64_t s = 0;
  for (; s + 2 <= ns; s += 2) {
    if (ahead) _mm_prefetch(ahead + 32 * s, _MM_HINT_T0);
    step(s, even);
    step(s + 1, odd);
  }
  if (s < ns) {
    if (ahead) _mm_prefetch(ahead + 32 * s, _MM_HINT_T0);
    step(s, even);
  }
  for (int t = 0; t < NT; ++t) {
    float v = sum8(_mm256_add_ps(even[t], odd[t]));
    if constexpr (!kNv) {
      const int64_t ng = cols / kGroup;
      v += q4_int8_bias(p.rb.data(), p.gsum.data() + (t0 + t) * ng, ng);
    }
    y[(t0 + t) * ldy + r] = v;
  }
}

bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && q4_int8_cpu_f16c();
}

}  // namespace
#endif  // INKLING_HAVE_Q4INT8

bool q4_int8_available() {
#if INKLING_HAVE_Q4INT8
  static const bool has = cpu_has_avx2();
  return has;
#else
  return false;
#endif
}

bool q4_int8_enabled() {
  return g_switch.enabled(q4_int8_available());
}

void set_q4_int8_enabled(bool on) {
  g_switch.set(on, q4_int8_available());
}

bool q4_int8_wide_enabled() {
#if INKLING_HAVE_Q4INT8
  static const bool has = q4_int8_wide_cpu();
  return g_wide_switch.enabled(has);
#else
  return false;
#endif
}

void set_q4_int8_wide_enabled(bool on) {
#if INKLING_HAVE_Q4INT8
  g_wide_switch.set(on, q4_int8_wide_cpu());
#else
  (void)on;
#endif
}

void q4_int8_parts_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                        int64_t r1, float* y, int64_t ldy, int parts) {
#if INKLING_HAVE_Q4INT8
  thread_local Q4Int8Prepared p;
  const bool wide = q4_int8_wide_enabled();
  q4_int8_prepare(x, n_tok, ldx, w, parts, wide, p);
  // Per span, the x factor of each of its 8 lanes (lanes 0-3: the span's first block).
  const size_t nl = size_t(n_tok * w.cols / 8);
  float* dl = p.dl.get(nl);
  for (size_t s = 0; s < nl / 8; ++s)
    for (size_t l = 0; l < 8; ++l) dl[8 * s + l] = p.d[2 * s + l / 4];
  // A (row, token) result depends on neither the rows nor the tokens of the call, nor on the form.
  if (wide) return q4_int8_wide_rows(p, n_tok, w, r0, r1, y, ldy, parts);
  q4_int8_dispatch(w, parts, [&](auto nv, auto group, auto np) {
    q4_int8_row_passes(
        p, n_tok, w, r0, r1,
        [&](auto nt, int64_t t0, int64_t r, const char* pf) {
          row_kernel<nv(), group(), np(), nt()>(p, t0, w, r, y, ldy, pf);
        },
        q4_int8_row_factors);
  });
#else
  (void)x, (void)n_tok, (void)ldx, (void)w, (void)r0, (void)r1, (void)y, (void)ldy, (void)parts;
#endif
}

void q4_int8_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                  int64_t r1, float* y, int64_t ldy) {
  q4_int8_parts_rows(x, n_tok, ldx, w, r0, r1, y, ldy, 1);
}

void q4_int8_fine_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                       int64_t r1, float* y, int64_t ldy) {
  q4_int8_parts_rows(x, n_tok, ldx, w, r0, r1, y, ldy, 2);
}

}  // namespace inkling
