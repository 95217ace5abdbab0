// matmul: each thread owns a contiguous band of weight rows and streams every row once for all
// tokens, through the one kernel the registry bound to the weight for this many tokens.
#include "ops/matmul.h"

#include <algorithm>

#include "ops/formats.h"
#include "ops/tuning.h"

namespace inkling {

namespace {
thread_local bool t_row_invariant = false;
thread_local ProductObserver* t_observer = nullptr;

// The kernel over tokens [0, n_tok) in pieces of at most kFewMaxTokens under a
// RowInvariantScope, else in one call.
void run_kernel(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                int64_t r1, float* y, int64_t ldy, bool invariant) {
  const KernelSet& ks = kernels_of(w);
  if (!invariant || n_tok <= kFewMaxTokens) {
    ks.for_tokens(n_tok).rows(x, n_tok, ldx, w, r0, r1, y, ldy);
    return;
  }
  for (int64_t t = 0; t < n_tok; t += kFewMaxTokens) {
    const int64_t n = std::min(kFewMaxTokens, n_tok - t);
    ks.for_tokens(n).rows(x + t * ldx, n, ldx, w, r0, r1, y + t * ldy, ldy);
  }
}
}  // namespace

RowInvariantScope::RowInvariantScope(bool on) : prev_(t_row_invariant) {
  t_row_invariant = prev_ || on;
}
RowInvariantScope::~RowInvariantScope() {
  t_row_invariant = prev_;
}

ProductObserverScope::ProductObserverScope(ProductObserver* obs) : prev_(t_observer) {
  t_observer = obs;
}
ProductObserverScope::~ProductObserverScope() {
  t_observer = prev_;
}

void matmul_rows(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, int64_t r0,
                 int64_t r1, float* y, int64_t ldy) {
  run_kernel(x, n_tok, ldx, w, r0, r1, y, ldy, t_row_invariant);
}

void matmul(const float* x, int64_t n_tok, int64_t ldx, const MatView& w, float* y, int64_t ldy,
            ThreadPool* pool) {
  const bool inv = t_row_invariant;  // read on the calling thread; workers are other threads
  if (t_observer) t_observer->on_product(w, x, n_tok, ldx);
  if (!pool || w.rows * w.cols * n_tok < (int64_t(1) << 15)) {
    run_kernel(x, n_tok, ldx, w, 0, w.rows, y, ldy, inv);
    return;
  }
  // Dense decode: blocks of rows claimed in turn balance a thread that other work slows down
  // (1.03-1.09x the bf16 slice's decode on the shared Zen 4 VM, docs/performance.md). Quantized
  // views keep one band per thread: their kernels check the prepared x on every call, which per
  // block cost the 8-bit slice 3% there.
  const int64_t split =
      n_tok == 1 && w.format == WeightFormat::kDense ? tuning(TuneParam::kSplitRows) : 0;
  if (split > 0) {  // decode tuning: blocks of `split` rows claimed by the threads in turn
    const int64_t blocks = (w.rows + split - 1) / split;
    pool->parallel_for_chunks(size_t(blocks), size_t(blocks), [&](size_t b, size_t e) {
      run_kernel(x, n_tok, ldx, w, int64_t(b) * split, std::min(w.rows, int64_t(e) * split), y, ldy,
                 inv);
    });
    return;
  }
  pool->parallel_for(
      size_t(w.rows),
      [&](size_t b, size_t e) {
        run_kernel(x, n_tok, ldx, w, int64_t(b), int64_t(e), y, ldy, inv);
      },
      16);
}

}  // namespace inkling
