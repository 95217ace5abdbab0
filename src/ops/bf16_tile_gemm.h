// The tile gemm driver (ops/tile_gemm-inl.h) over AVX512-BF16 (VDPBF16PS) instead of AMX: the
// same packing and blocking, each 16 x 16 tile product done as 256 VDPBF16PS with broadcast
// pairs of x. Measured against the f32 FMA gemm for bf16 weights on hosts without AMX (Zen 4:
// docs/performance.md): with x in 3 exact parts it was slower there and is not bound in exact
// numerics; with 1 part (x rounded to bf16) it is the fast-numerics prefill gemm for bf16 weights
// on hosts without AMX. Tested against its scalar twin (tile_gemm_ref, odd-first pair order).
#pragma once

#include <cstdint>

#include "ops/weight_view.h"

namespace inkling {

// True when the binary has the kernel and the CPU has AVX512-BF16.
bool bf16_tile_gemm_available();

// y[t * ldy + r] = sum_c x[t * ldx + c] * W[r, c] for rows [r0, r1) of a dense bf16 view, x split
// into `parts` bf16 parts (3: exact products; 2: hi + mid, relative error <= 2^-17 per element;
// 1: x rounded to bf16, fast numerics).
// Requires available(). Single-threaded.
void bf16_tile_gemm_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                         int64_t r1, float* y, int64_t ldy, int parts);

// parts 1 as a RowsKernel (the registry's fast-numerics gemm for bf16 weights).
void bf16_tile_gemm_fast_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w,
                              int64_t r0, int64_t r1, float* y, int64_t ldy);

}  // namespace inkling
