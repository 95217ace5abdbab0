// The tile gemm driver over AVX512-BF16 (see bf16_tile_gemm.h). A and B "tiles" are the packed
// buffers themselves (pointer and stride); C tiles live in a 4 KiB array. dp<C, A, B>: per row m
// of C, for each pair k, VDPBF16PS(C[m], broadcast A[m] pair k, B row k), eight rows at a time
// (eight independent chains hide the instruction's latency), B's 16 rows held in registers.
#include "ops/bf16_tile_gemm.h"

#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#define INKLING_HAVE_BF16TILE 1
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // see quant_q4_bf16dot.cpp
#pragma GCC diagnostic ignored "-Wuninitialized"        // the same, in the unpack intrinsics
#endif
#include <immintrin.h>
#define INK_TILE_FN \
  __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))
#include "ops/tile_gemm-inl.h"
#include "ops/tile_pack_avx512-inl.h"
#endif

namespace inkling {

#if INKLING_HAVE_BF16TILE
namespace {

struct Bf16TileOps {
  const uint8_t* ptr[8] = {};
  int64_t stride[8] = {};
  alignas(64) float c[4][16][16];

  INK_TILE_FN void config(const tile_gemm::TileConfig&) {}
  template <int T>
  INK_TILE_FN void zero() {
    static_assert(T < 4);
    std::memset(c[T], 0, sizeof(c[T]));
  }
  template <int T>
  INK_TILE_FN void load(const void* p, int64_t s) {
    if constexpr (T < 4) {
      for (int m = 0; m < 16; ++m)
        _mm512_store_ps(c[T][m], _mm512_loadu_ps(static_cast<const float*>(p) + m * s / 4));
    } else {
      ptr[T] = static_cast<const uint8_t*>(p);
      stride[T] = s;
    }
  }
  template <int T>
  INK_TILE_FN void store(void* p, int64_t s) {
    static_assert(T < 4);
    for (int m = 0; m < 16; ++m)
      _mm512_storeu_ps(static_cast<float*>(p) + m * s / 4, _mm512_load_ps(c[T][m]));
  }
  template <int C, int A, int B>
  INK_TILE_FN void dp() {
    __m512bh b[16];
    for (int k = 0; k < 16; ++k) b[k] = (__m512bh)_mm512_loadu_si512(ptr[B] + k * stride[B]);
    const uint8_t* a = ptr[A];
    const int64_t sa = stride[A];
    for (int m0 = 0; m0 < 16; m0 += 8) {
      __m512 acc[8];
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) acc[i] = _mm512_load_ps(c[C][m0 + i]);
#pragma GCC unroll 16
      for (int k = 0; k < 16; ++k)
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
          int32_t pair;
          std::memcpy(&pair, a + (m0 + i) * sa + 4 * k, 4);
          acc[i] = _mm512_dpbf16_ps(acc[i], (__m512bh)_mm512_set1_epi32(pair), b[k]);
        }
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) _mm512_store_ps(c[C][m0 + i], acc[i]);
    }
  }
  INK_TILE_FN void release() {}
  INK_TILE_FN static void pack_pairs16(const uint8_t* src, int64_t ld, uint16_t* out) {
    tile_gemm::pack_pairs16_avx512(src, ld, out);
  }
  INK_TILE_FN static void split32(const float* in, int parts, uint16_t* out, int64_t stride) {
    tile_gemm::split32_avx512(in, parts, out, stride);
  }
};

bool cpu_has_avx512bf16() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
}

}  // namespace
#endif

bool bf16_tile_gemm_available() {
#if INKLING_HAVE_BF16TILE
  static const bool has = cpu_has_avx512bf16();
  return has;
#else
  return false;
#endif
}

void bf16_tile_gemm_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                         int64_t r1, float* y, int64_t ldy, int parts) {
#if INKLING_HAVE_BF16TILE
  thread_local Bf16TileOps ops;
  tile_gemm::Driver<Bf16TileOps>::run(ops, x, n_tok, ldx, reinterpret_cast<const uint16_t*>(w.data),
                                      w.row_stride, w.cols, r0, r1, y, ldy, parts);
#else
  (void)x, (void)n_tok, (void)ldx, (void)w, (void)r0, (void)r1, (void)y, (void)ldy, (void)parts;
#endif
}

void bf16_tile_gemm_fast_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w,
                              int64_t r0, int64_t r1, float* y, int64_t ldy) {
  bf16_tile_gemm_rows(x, n_tok, ldx, w, r0, r1, y, ldy, 1);
}

}  // namespace inkling
