// Pieces shared by the AVX512-BF16 kernels (quant_q4_bf16dot.cpp, quant_affine_bf16dot.cpp):
// the exact 3-part bf16 split of x, a row's affine scales with the code offset folded into its
// biases, and the prefetch of a row's sidecars. Include after <immintrin.h>, inside those files'
// x86 guard (it uses AVX-512 intrinsics behind a target attribute).
#pragma once

#include <algorithm>
#include <cstdint>

#include "base/dtype.h"
#include "ops/weight_view.h"

#define INK_BF16DOT \
  __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))

namespace inkling::bf16dot {

// x = hi + mid + lo exactly: three bf16 parts of 8 significant bits each cover an f32's 24.
inline void split3(float x, uint16_t* hi, uint16_t* mid, uint16_t* lo) {
  *hi = f32_to_bf16(x);
  const float r = x - bf16_to_f32(*hi);
  *mid = f32_to_bf16(r);
  *lo = f32_to_bf16(r - bf16_to_f32(*mid));
}

// Row r's scales (f32, zero padded to gs) into s, and b - 2^bits s into bs: the kernels multiply
// the bf16 number 2^bits + q, so the offset comes back out through the group sums of x.
INK_BF16DOT inline void affine_row_scales(const MatView& w, int64_t r, int64_t ngroups, int64_t gs,
                                          float* s, float* bs) {
  const size_t ssz = dtype_size(w.scale_dtype);
  const uint8_t* srow = w.scales + size_t(r * w.scale_stride) * ssz;
  const uint8_t* brow = w.biases + size_t(r * w.scale_stride) * ssz;
  const float off = float(1 << w.bits);
  if (w.scale_dtype == DType::BF16) {
    const uint16_t* s16 = reinterpret_cast<const uint16_t*>(srow);
    const uint16_t* b16 = reinterpret_cast<const uint16_t*>(brow);
    for (int64_t g = 0; g < ngroups; g += 16) {
      const int64_t n = std::min<int64_t>(16, ngroups - g);
      const __mmask16 m = __mmask16((1u << n) - 1u);
      const __m512 sv = _mm512_castsi512_ps(
          _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, s16 + g)), 16));
      const __m512 bv = _mm512_castsi512_ps(
          _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, b16 + g)), 16));
      _mm512_storeu_ps(s + g, sv);
      _mm512_storeu_ps(bs + g, _mm512_fnmadd_ps(_mm512_set1_ps(off), sv, bv));
    }
  } else {
    for (int64_t g = 0; g < ngroups; ++g) {
      s[g] = load_as_f32(w.scale_dtype, srow, size_t(g));
      bs[g] = load_as_f32(w.scale_dtype, brow, size_t(g)) - off * s[g];
    }
  }
  for (int64_t g = ngroups; g < gs; ++g) s[g] = bs[g] = 0.f;
}

// Starts loading row r's scales (and biases, if any).
INK_BF16DOT inline void prefetch_scales(const MatView& w, int64_t r, int64_t ngroups) {
  const size_t ssz = dtype_size(w.scale_dtype), off = size_t(r * w.scale_stride) * ssz;
  for (size_t b = 0; b < size_t(ngroups) * ssz; b += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(w.scales + off + b), _MM_HINT_T0);
    if (w.biases) _mm_prefetch(reinterpret_cast<const char*>(w.biases + off + b), _MM_HINT_T0);
  }
}

}  // namespace inkling::bf16dot
