// ThreadPool: spin-then-block in both directions. The caller publishes a job by bumping an
// atomic generation (and notifies only if a worker is asleep); everyone claims chunks with a CAS
// on the ticket and counts finished chunks (the last one notifies the caller if it sleeps). No
// locks on the fast path.
#include "base/thread_pool.h"

#include "base/cpus.h"

#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define INKLING_PAUSE() _mm_pause()
#else
#define INKLING_PAUSE() std::this_thread::yield()
#endif

namespace inkling {

namespace {
// Waits until done() holds: a few pause instructions (the common case in a decode step, where
// jobs follow each other within microseconds), then yields for up to ~200 us so an
// oversubscribed core can run the thread we are waiting for. Returns false if still not done:
// the caller then blocks on a condition variable.
template <typename Done>
bool spin_wait(Done done) {
  for (int i = 0; i < 128; ++i) {
    if (done()) return true;
    INKLING_PAUSE();
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    for (int i = 0; i < 16; ++i) {
      if (done()) return true;
      std::this_thread::yield();
    }
    if (std::chrono::steady_clock::now() - t0 > std::chrono::microseconds(200)) return done();
  }
}
}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = available_cpus();
  n_threads_ = n_threads;
  for (int i = 1; i < n_threads_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_.store(true);
  }
  cv_start_.notify_all();
  for (auto& t : threads_) t.join();
}

static inline void chunk_range(size_t n, size_t chunks, size_t c, size_t* b, size_t* e) {
  *b = n * c / chunks;
  *e = n * (c + 1) / chunks;
}

// ticket_ = generation (32 bits) | chunk count (16 bits) | next chunk index (16 bits). A claim
// succeeds only on the job whose generation the claimer read, and only while chunks remain, so a
// worker holding a stale or newer job slot never runs anything it should not.
void ThreadPool::claim_chunks(uint32_t gen, const ChunkFn& fn, size_t n) {
  uint64_t t = ticket_.load(std::memory_order_acquire);
  for (;;) {
    const size_t chunks = (t >> 16) & 0xffff, idx = t & 0xffff;
    if (uint32_t(t >> 32) != gen || idx >= chunks) return;
    if (!ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel)) continue;
    size_t b, e;
    chunk_range(n, chunks, idx, &b, &e);
    fn(b, e);
    // seq_cst, like the caller's caller_asleep_ store and done_ re-check: with an acq_rel add
    // the C++ model would allow both sides to miss each other (a lost wake-up).
    if (done_.fetch_add(1) + 1 == chunks && caller_asleep_.load()) {
      std::lock_guard<std::mutex> lk(mu_);
      cv_done_.notify_one();
    }
    t = ticket_.load(std::memory_order_acquire);
  }
}

void ThreadPool::run_chunks(size_t n, size_t chunks, const ChunkFn& fn) {
  const uint32_t gen = generation_.load(std::memory_order_relaxed) + 1;  // only the caller writes
  job_.store(&fn, std::memory_order_relaxed);
  job_n_.store(n, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  ticket_.store(uint64_t(gen) << 32 | uint64_t(chunks) << 16, std::memory_order_release);
  generation_.store(gen);  // seq_cst: ordered before the sleepers_ check below
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lk(mu_);
    cv_start_.notify_all();
  }
  claim_chunks(gen, fn, n);
  if (!spin_wait([&] { return done_.load(std::memory_order_acquire) == chunks; })) {
    std::unique_lock<std::mutex> lk(mu_);
    caller_asleep_.store(true);
    cv_done_.wait(lk, [&] { return done_.load() == chunks; });
    caller_asleep_.store(false);
  }
}

void ThreadPool::worker(int /*id*/) {
  uint32_t seen = 0;
  for (;;) {
    uint32_t g = seen;
    const bool woke = spin_wait([&] {
      g = generation_.load(std::memory_order_acquire);
      return g != seen || stop_.load(std::memory_order_relaxed);
    });
    if (!woke) {
      std::unique_lock<std::mutex> lk(mu_);
      sleepers_.fetch_add(1);  // seq_cst: ordered before the generation_ check in the predicate
      cv_start_.wait(lk, [&] { return stop_.load() || generation_.load() != seen; });
      sleepers_.fetch_sub(1);
      g = generation_.load();
    }
    if (stop_.load()) return;
    seen = g;
    // The slot may already hold a newer job; claim_chunks then finds another generation in the
    // ticket and runs nothing, and the next loop picks the newer job up.
    const ChunkFn* fn = job_.load(std::memory_order_relaxed);
    const size_t n = job_n_.load(std::memory_order_relaxed);
    if (fn) claim_chunks(g, *fn, n);
  }
}

}  // namespace inkling
