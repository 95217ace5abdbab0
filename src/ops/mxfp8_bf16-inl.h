// One MXFP8 block (32 E4M3 codes, one E8M0 exponent) as 32 bf16 numbers in a register, as
// mxfp8_bf16_bits (ops/quant.h) builds each: normal codes by moving their fields ((m << 4) +
// (120 << 7): the value's bf16 bits), the seven subnormals by VPERMW from a table, e - 127 added to
// the exponent field of nonzero values with signed saturation and the result clamped at zero
// (values below bf16's normals read as zero), the sign last. AVX-512BW only, so both the
// AVX512-BF16 kernel (dense_bf16dot.cpp) and the widening one (dense_widen_fast.cpp) use it.
// Include after <immintrin.h>, inside those files' x86 guard.
#pragma once

#include <cstdint>

namespace inkling::mxfp8_avx512 {

__attribute__((target("avx512f,avx512bw"))) inline __m512i bf16x32(const uint8_t* codes,
                                                                   uint8_t e) {
  const __m512i b =
      _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes)));
  const __m512i mag = _mm512_and_si512(b, _mm512_set1_epi16(0x7f));
  __m512i t = _mm512_add_epi16(_mm512_slli_epi16(mag, 4), _mm512_set1_epi16(120 << 7));
  const __m512i sub =
      _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                       0x3C60, 0x3C40, 0x3C20, 0x3C00, 0x3BC0, 0x3B80, 0x3B00, 0);
  t = _mm512_mask_permutexvar_epi16(t, _mm512_cmplt_epu16_mask(mag, _mm512_set1_epi16(8)), mag,
                                    sub);
  const __m512i d = _mm512_set1_epi16(int16_t((int(e) - 127) * 128));
  t = _mm512_mask_adds_epi16(t, _mm512_test_epi16_mask(mag, mag), t, d);
  t = _mm512_max_epi16(t, _mm512_setzero_si512());
  // t | (b << 8 & 0x8000): the sign bit.
  return _mm512_ternarylogic_epi32(t, _mm512_slli_epi16(b, 8), _mm512_set1_epi16(int16_t(0x8000)),
                                   0xF8);
}

}  // namespace inkling::mxfp8_avx512
