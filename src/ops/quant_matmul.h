// Fused products against quantized weight views (MLX affine 4/8-bit, NVFP4): the packed codes
// are read directly and dequantized in SIMD registers (Highway, runtime dispatch); no row or
// matrix is ever widened to f32 in memory. Each kernel has a scalar twin built on dequant_row.
#pragma once

#include <cstdint>

#include "ops/weight_view.h"

namespace inkling {

// y[t * ldy + r] = sum_c x[t * ldx + c] * W[r, c] for t < n_tok and rows r in [r0, r1) of a
// 4- or 8-bit kAffine view or a kNvfp4 view (other widths: ops/quant_affine_words.h).
// Single-threaded (matmul() splits rows over the pool).
void quant_matmul_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                       int64_t r1, float* y, int64_t ldy);

// Scalar twin: dequant_row() then a sequential dot product in double. Any format.
void quant_matmul_rows_ref(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                           int64_t r1, float* y, int64_t ldy);

}  // namespace inkling
