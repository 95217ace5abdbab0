// matmul: each thread owns a contiguous band of weight rows and streams every row once for all
// tokens, through the one kernel the registry bound to the weight for this many tokens.
#include "ops/matmul.h"

#include "ops/formats.h"

namespace inkling {

void matmul_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                 int64_t r1, float* y, int64_t ldy) {
  kernels_of(w).for_tokens(n_tok).rows(x, n_tok, ldx, w, r0, r1, y, ldy);
}

void matmul(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, float* y, int64_t ldy,
            ThreadPool* pool) {
  const RowsKernel k = kernels_of(w).for_tokens(n_tok).rows;
  if (!pool || w.rows * w.cols * n_tok < (int64_t(1) << 15)) {
    k(x, n_tok, ldx, w, 0, w.rows, y, ldy);
    return;
  }
  pool->parallel_for(
      size_t(w.rows),
      [&](size_t b, size_t e) { k(x, n_tok, ldx, w, int64_t(b), int64_t(e), y, ldy); }, 16);
}

}  // namespace inkling
