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

// While one is alive on a thread, matmul() and matmul_rows() called from that thread give each
// kernel call at most kFewMaxTokens tokens (ops/formats.h), so every token takes the row-count
// invariant kernels and gets bitwise the result it gets alone, however many tokens the call has.
// forward_batch() holds one for a batch of decode / verify segments (each <= kFewMaxTokens rows):
// a session's bits then do not depend on the sessions batched with it. Nests; `on` false is a
// no-op.
class RowInvariantScope {
 public:
  explicit RowInvariantScope(bool on = true);
  ~RowInvariantScope();
  RowInvariantScope(const RowInvariantScope&) = delete;
  RowInvariantScope& operator=(const RowInvariantScope&) = delete;

 private:
  bool prev_;
};

// Sees the input of every product matmul() runs on the thread that installed it (calibration:
// `inkling quantize --calibrate` collects per-column statistics of each weight's inputs, as
// llama.cpp's imatrix does). Called once per matmul() call, before the kernels run; x is
// [n_tok, ldx] with w.cols columns used. matmul_rows() (whose callers split one product
// themselves) does not call it.
class ProductObserver {
 public:
  virtual ~ProductObserver() = default;
  virtual void on_product(const MatView& w, const float* x, int64_t n_tok, int64_t ldx) = 0;
};

// Installs `obs` for this thread's matmul() calls while alive (nests; null removes it).
class ProductObserverScope {
 public:
  explicit ProductObserverScope(ProductObserver* obs);
  ~ProductObserverScope();
  ProductObserverScope(const ProductObserverScope&) = delete;
  ProductObserverScope& operator=(const ProductObserverScope&) = delete;

 private:
  ProductObserver* prev_;
};

// One product of a batch for matmul_many: y = x w^T over n_tok rows of x.
struct MatmulJob {
  const float* x = nullptr;
  int64_t n_tok = 0, ldx = 0;
  const MatView* w = nullptr;
  float* y = nullptr;
  int64_t ldy = 0;
};

// Every job as matmul() runs it (the same bits: a row's result does not depend on which rows
// share its call), in one hand-out of row blocks to the pool instead of one per product: the MoE's
// experts at decode, where each product is small and a wait for the slower thread per product
// added up. The observer sees the jobs in order, as it would from matmul().
void matmul_many(const MatmulJob* jobs, size_t n_jobs, ThreadPool* pool);

// Independent products of one step: matmul_many when each has at most kFewMaxTokens rows of x
// (decode, batched decode, verification: one wait for the pool instead of one per product), else
// one matmul() after another (prefill: each gemm over one band of rows per thread). The same bits
// either way.
void matmul_each(const MatmulJob* jobs, size_t n_jobs, ThreadPool* pool);

// Same product for rows [r0, r1) only, single-threaded (callers that partition work themselves).
void matmul_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                 int64_t r1, float* y, int64_t ldy);

}  // namespace inkling
