// Matrix products against checkpoint weights: y[t, r] = sum_c x[t, c] * W[r, c].
// Weights stay in their stored dtype (f32 or bf16) and may be row-strided views (a de-interleaved
// gate/up half of a fused tensor is every other row). Activations and results are f32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/dtype.h"
#include "base/thread_pool.h"

namespace inkling {

// A row-major matrix view: `rows` x `cols`, columns contiguous, rows `row_stride` elements apart.
struct MatView {
  DType dtype = DType::F32;
  const uint8_t* data = nullptr;
  int64_t rows = 0, cols = 0, row_stride = 0;

  const uint8_t* row(int64_t r) const { return data + size_t(r * row_stride) * dtype_size(dtype); }
  // Rows [begin, begin + n) as a view of their own.
  MatView slice_rows(int64_t begin, int64_t n) const {
    return {dtype, row(begin), n, cols, row_stride};
  }
};

// y[t * ldy + r] for t < n_tok, r < w.rows, from x[t * ldx + c]. Splits rows over `pool`.
void matmul(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, float* y, int64_t ldy,
            ThreadPool* pool);

// Same product for rows [r0, r1) only, single-threaded (callers that partition work themselves).
void matmul_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                 int64_t r1, float* y, int64_t ldy);

// One dot product of f32 x with a weight row of dtype t (n elements).
float dot_row(const float* x, const uint8_t* row, DType t, int64_t n);

// Converts n elements of a weight row to f32.
void row_to_f32(const uint8_t* row, DType t, int64_t n, float* out);

}  // namespace inkling
