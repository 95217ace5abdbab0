// Fast-numerics MXFP8 for 17+ tokens (prefill): each block of rows is made bf16 (as
// mxfp8_bf16_bits makes every weight: exact for every stored value whose product is a normal
// bf16), then runs through the gemm fast numerics binds for bf16 weights on this CPU (the
// AVX512-BF16 tile gemm, AMX's, or the exact one), so a model's MXFP8 weights and their bf16
// conversion give the same bits at every count of tokens, as the 1..16-token kernels do
// (select_mxfp8, ops/formats.cpp).
#pragma once

#include <cstdint>

#include "ops/weight_view.h"

namespace inkling {

// y[t * ldy + r] = the bf16 gemm's sum over c of x[t * ldx + c] * mxfp8_bf16_bits(W[r, c]) for
// rows [r0, r1) of an MXFP8 view of whole blocks (mxfp8_whole_blocks, ops/quant.h).
// Single-threaded (a thread's rows are converted by that thread).
void mxfp8_via_bf16_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                         int64_t r1, float* y, int64_t ldy);

}  // namespace inkling
