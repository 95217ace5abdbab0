// Fused products against MLX affine views of any code width (1, 2, 3, 4, 5, 6, 8 bits) in the
// word-lane layout of ops/affine_words.h: codes are read as they lie in memory, N words per
// vector, and decoded in registers by a per-lane shift (joined with the next word where a code
// straddles two); x is permuted once per call to match. Highway, every target, runtime dispatch.
// 8-bit codes are bytes: those views skip the layout and widen bytes in natural column order.
// Scalar twin: quant_matmul_rows_ref (dequant_row + a double dot product).
#pragma once

#include <cstdint>

#include "ops/weight_view.h"

namespace inkling {

// True for affine views these kernels take: bits 1, 2, 3, 4, 5, 6 or 8 and a group of 32, 64 or
// 128 columns (MLX's groups) dividing the row.
bool affine_words_supported(const MatView& w);

// y[t * ldy + r] = sum_c x[t * ldx + c] * W[r, c] for t < n_tok and rows [r0, r1). Tokens are taken
// in blocks of up to 4 (one pass over the rows each), 4 rows (1 token) or 2 rows share each x
// load. Per group: s * sum(x * q) + b * sum(x). Single-threaded.
void affine_words_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                       int64_t r1, float* y, int64_t ldy);

}  // namespace inkling
