// NVFP4's weight factors for the 512-bit int8 kernels (quant_q4_int8_wide.cpp, the gemm over
// load-time tiles in quant_q4_int8_gemm.cpp): 16 E4M3 block scales as (f32(e4m3) * scale2) / 2,
// bitwise q4_int8_row_factors. Include after <immintrin.h>, inside those files' x86 guard.
#pragma once

#include <cstdint>
#include <limits>

namespace inkling::nvfp4_avx512 {

// The m-masked scales at s (E4M3 bytes) over 256: each moved into an f16's fields one place over
// (bias 15, subnormals included) so VCVTPH2PS widens it exactly; 0x7f / 0xff (E4M3's NaN) give a
// quiet NaN, as e4m3_to_f32.
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline __m512 e4m3_over256(const uint8_t* s,
                                                                                __mmask16 m) {
  const __m256i m7f = _mm256_set1_epi16(0x7f), m80 = _mm256_set1_epi16(0x80);
  const __m256i b = _mm256_cvtepu8_epi16(_mm_maskz_loadu_epi8(m, s));
  const __m256i mag = _mm256_and_si256(b, m7f);
  const __m256i h =
      _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(b, m80), 8), _mm256_slli_epi16(mag, 7));
  return _mm512_mask_blend_ps(_mm256_cmpeq_epi16_mask(mag, m7f), _mm512_cvtph_ps(h),
                              _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN()));
}

// (e4m3 x scale2) / 2 for the m-masked scales at s, k2 = scale2 in every lane.
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline __m512 half_factors16(const uint8_t* s,
                                                                                  __mmask16 m,
                                                                                  __m512 k2) {
  const __m512 v = _mm512_mul_ps(e4m3_over256(s, m), _mm512_set1_ps(256.f));
  return _mm512_mul_ps(_mm512_mul_ps(v, k2), _mm512_set1_ps(0.5f));
}

// half_factors16 in one product: (e4m3 / 256) x k128, k128 = 128 x scale2. Bitwise half_factors16
// where folds(scale2): 256 x (e4m3 / 256) is exact, and between 2^-17 and 2^9 x 2^100 no product
// leaves f32's normal range, so one rounding of (e4m3 / 256) x 128 x scale2 is the rounding of
// e4m3 x scale2 halved. NaN scales stay the same quiet NaN.
inline bool folds(float scale2) {
  const float a = scale2 < 0 ? -scale2 : scale2;
  return a >= 0x1p-100f && a <= 0x1p100f;
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) inline __m512 folded_factors16(
    const uint8_t* s, __m512 k128) {
  return _mm512_mul_ps(e4m3_over256(s, __mmask16(0xffff)), k128);
}

}  // namespace inkling::nvfp4_avx512
