// matmul: each thread owns a contiguous band of weight rows and streams every row once for all
// tokens, through the one kernel the registry bound to the weight for this many tokens.
#include "ops/matmul.h"

#include <algorithm>
#include <vector>

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
  // A matrix of fewer rows than threads x split (a router, Inkling 2's message gates) still goes to
  // every thread: its blocks shrink to a thread's share, in multiples of 16 rows.
  const int64_t share = (w.rows + pool->size() * 16 - 1) / (pool->size() * 16) * 16;
  const int64_t split =
      n_tok == 1 && w.format == WeightFormat::kDense
          ? std::min<int64_t>(tuning(TuneParam::kSplitRows), std::max<int64_t>(16, share))
          : 0;
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

void matmul_many(const MatmulJob* jobs, size_t n_jobs, ThreadPool* pool) {
  const bool inv = t_row_invariant;
  int64_t total = 0;
  bool decode = true;  // every job one token
  for (size_t i = 0; i < n_jobs; ++i) {
    if (t_observer) t_observer->on_product(*jobs[i].w, jobs[i].x, jobs[i].n_tok, jobs[i].ldx);
    total += jobs[i].w->rows;
    decode = decode && jobs[i].n_tok == 1;
  }
  auto run = [&](const MatmulJob& j, int64_t r0, int64_t r1) {
    run_kernel(j.x, j.n_tok, j.ldx, *j.w, r0, r1, j.y, j.ldy, inv);
  };
  if (!pool || pool->size() <= 1) {
    for (size_t i = 0; i < n_jobs; ++i) run(jobs[i], 0, jobs[i].w->rows);
    return;
  }
  // About four blocks per thread over all the rows, in multiples of 16 rows, each within a job.
  // At one token (decode, memory-bound) the last thread-count blocks' worth of rows go in quarter
  // blocks, so that the threads finish together (Inkling 2 Mini: the caller waited 13.4 ms per
  // token for the others at the end of these products, 5.7 ms with the quarter blocks;
  // docs/performance.md). Several tokens keep whole blocks (compute-bound kernels prepare x per
  // block, and batched decode showed no gain from quarters in a noisy A/B).
  const int64_t per = std::max<int64_t>(16, (total / (4 * pool->size()) + 15) / 16 * 16);
  const int64_t quarter = std::max<int64_t>(16, (per / 4 + 15) / 16 * 16);
  const int64_t tail_from = decode ? total - per * pool->size() : total;
  struct Block {
    size_t job;
    int64_t r0, r1;
  };
  thread_local std::vector<Block> blocks;  // the caller's; the workers read it by reference
  blocks.clear();
  int64_t before = 0;  // rows of the jobs before job i
  for (size_t i = 0; i < n_jobs; ++i) {
    const int64_t rows = jobs[i].w->rows;
    for (int64_t r = 0; r < rows;) {
      const int64_t step = before + r >= tail_from ? quarter : per;
      blocks.push_back({i, r, std::min(rows, r + step)});
      r += step;
    }
    before += rows;
  }
  std::vector<Block>& bl = blocks;
  pool->parallel_for_chunks(bl.size(), bl.size(), [&](size_t b, size_t e) {
    for (size_t k = b; k < e; ++k) run(jobs[bl[k].job], bl[k].r0, bl[k].r1);
  });
}

void matmul_each(const MatmulJob* jobs, size_t n_jobs, ThreadPool* pool) {
  bool few = true;
  for (size_t i = 0; i < n_jobs; ++i) few = few && jobs[i].n_tok <= kFewMaxTokens;
  if (few) {
    matmul_many(jobs, n_jobs, pool);
    return;
  }
  for (size_t i = 0; i < n_jobs; ++i) {
    const MatmulJob& j = jobs[i];
    matmul(j.x, j.n_tok, j.ldx, *j.w, j.y, j.ldy, pool);
  }
}

}  // namespace inkling
