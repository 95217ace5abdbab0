// Matrix products against checkpoint weights: y[t, r] = sum_c x[t, c] * W[r, c]. Weights stay in
// their stored format and may be row-strided views (a de-interleaved gate/up half of a fused
// tensor is every other row). Activations and results are f32. This file only splits rows over
// the thread pool; the kernel is the one the format registry bound to the weight
// (ops/formats.h), chosen by the number of tokens.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "ops/weight_view.h"

namespace inkling {

// y[t * ldy + r] for t < n_tok, r < w.rows, from x[t * ldx + c]. Splits rows over `pool`.
void matmul(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, float* y, int64_t ldy,
            ThreadPool* pool);

// Same product for rows [r0, r1) only, single-threaded (callers that partition work themselves).
void matmul_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                 int64_t r1, float* y, int64_t ldy);

}  // namespace inkling
