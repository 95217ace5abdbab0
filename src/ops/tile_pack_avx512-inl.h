// The weight packing step of the tile gemm in AVX-512F (shared by amx_gemm.cpp and
// bf16_tile_gemm.cpp, whose tile ops offer them to the driver as pack_pairs16 and split32): 16
// weight rows x 32 bf16 columns into one B tile, a 16 x 16 transpose of 32-bit column pairs in 64
// shuffles; 32 values of x split into their bf16 parts.
// Include after <immintrin.h> with INK_TILE_FN defined (a target that has avx512f). The
// Bf16TileOps tests check it bitwise against the scalar packing on AVX-512 hosts.
#pragma once

#include <cstdint>

namespace inkling::tile_gemm {
namespace {

// out[k * 16 + n] = pair k of row n, rows `ld` bytes apart from `src`.
INK_TILE_FN inline void pack_pairs16_avx512(const uint8_t* src, int64_t ld, uint16_t* out) {
  __m512i r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(src + i * ld);
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    r[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i + 0], t[4 * i + 2]);
    r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i + 0], t[4 * i + 2]);
    r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i) {
      t[8 * h + i] = _mm512_shuffle_i32x4(r[8 * h + i], r[8 * h + 4 + i], 0x88);
      t[8 * h + 4 + i] = _mm512_shuffle_i32x4(r[8 * h + i], r[8 * h + 4 + i], 0xdd);
    }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_i32x4(t[i], t[8 + i], 0x88);
    r[8 + i] = _mm512_shuffle_i32x4(t[i], t[8 + i], 0xdd);
  }
  for (int i = 0; i < 16; ++i) _mm512_storeu_si512(out + i * 32, r[i]);
}

// f32_to_bf16 (base/dtype.h) on 16 lanes, as u32 lanes holding the bf16 bits: round to nearest
// even, NaN kept NaN.
INK_TILE_FN inline __m512i bf16_bits16(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i r =
      _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  return _mm512_mask_mov_epi32(r, nan,
                               _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
}

// split_parts (tile_gemm-inl.h) of 32 values: part i of in[c] to out[i * part_stride + c].
INK_TILE_FN inline void split32_avx512(const float* in, int parts, uint16_t* out,
                                       int64_t part_stride) {
  for (int h = 0; h < 32; h += 16) {
    __m512 r = _mm512_loadu_ps(in + h);
    for (int i = 0; i < parts; ++i) {
      const __m512i b = bf16_bits16(r);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i * part_stride + h),
                          _mm512_cvtepi32_epi16(b));
      r = _mm512_sub_ps(r, _mm512_castsi512_ps(_mm512_slli_epi32(b, 16)));
    }
  }
}

}  // namespace
}  // namespace inkling::tile_gemm
