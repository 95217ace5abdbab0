// mxfp8_via_bf16_rows (ops/mxfp8_via_bf16.h): rows converted in blocks by the same conversion the
// 1..16-token kernels run in registers (ops/mxfp8_bf16-inl.h; the scalar mxfp8_bf16_bits off
// x86), then the bf16 view's fast gemm.
#include "ops/mxfp8_via_bf16.h"

#include <algorithm>
#include <vector>

#include "ops/formats.h"
#include "ops/quant.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define INKLING_HAVE_MXFP8_SIMD 1
#include <immintrin.h>

#include "ops/mxfp8_bf16-inl.h"
#else
#define INKLING_HAVE_MXFP8_SIMD 0
#endif

namespace inkling {

namespace {

// Rows per conversion: about 1M bf16 numbers (2 MB), whole 16-row tiles, at least one tile; each
// block is one call of the gemm, which prepares x once per call.
int64_t block_rows(int64_t cols) {
  return std::max<int64_t>(16, (int64_t(1) << 20) / std::max<int64_t>(cols, 1) / 16 * 16);
}

#if INKLING_HAVE_MXFP8_SIMD
bool cpu_has_avx512bw() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
}

__attribute__((target("avx512f,avx512bw"))) void row_simd(const MatView& w, int64_t r,
                                                          uint16_t* out) {
  const uint8_t* codes = w.row(r);
  const uint8_t* e = w.scales + size_t(r * w.scale_stride);
  for (int64_t b = 0; b < w.cols / 32; ++b)
    _mm512_storeu_si512(out + b * 32, mxfp8_avx512::bf16x32(codes + b * 32, e[b]));
}
#endif

void row_bits(const MatView& w, int64_t r, uint16_t* out) {
#if INKLING_HAVE_MXFP8_SIMD
  static const bool simd = cpu_has_avx512bw();
  if (simd) return row_simd(w, r, out);
#endif
  bf16_row_bits(w, r, out);
}

}  // namespace

void mxfp8_via_bf16_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                         int64_t r1, float* y, int64_t ldy) {
  thread_local std::vector<uint16_t> buf;
  const int64_t block = block_rows(w.cols);
  buf.resize(size_t(std::min(block, r1 - r0) * w.cols));
  for (int64_t rb = r0; rb < r1; rb += block) {
    const int64_t nr = std::min(block, r1 - rb);
    for (int64_t i = 0; i < nr; ++i) row_bits(w, rb + i, buf.data() + i * w.cols);
    MatView b;
    b.dtype = DType::BF16;
    b.data = reinterpret_cast<const uint8_t*>(buf.data());
    b.rows = nr, b.cols = w.cols, b.row_stride = w.cols;
    bind_kernels(b, KernelMode::kFast);
    kernels_of(b).for_tokens(n_tok).rows(x, n_tok, ldx, b, 0, nr, y + rb, ldy);
  }
}

}  // namespace inkling
