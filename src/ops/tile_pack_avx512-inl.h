// The weight packing step of the tile gemm in AVX-512F (shared by amx_gemm.cpp and
// bf16_tile_gemm.cpp, whose tile ops offer it to the driver as pack_pairs16): 16 weight rows x 32
// bf16 columns into one B tile, a 16 x 16 transpose of 32-bit column pairs in 64 shuffles.
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

}  // namespace
}  // namespace inkling::tile_gemm
