// A fixed pool of worker threads for data-parallel loops. Created once per Engine; the hot path
// only publishes a job and waits (no allocation, no thread creation). Work is split into static
// chunks (fixed row ranges, so results never depend on timing) that the caller and the workers
// claim from a shared ticket: when workers are slow to wake (a busy or oversubscribed machine)
// the caller simply runs the remaining chunks itself instead of waiting. Idle workers spin on a
// generation counter for a while (decode issues hundreds of short jobs per token) before sleeping.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace inkling {

class ThreadPool {
 public:
  // n_threads <= 0 picks one thread per CPU this process may use (base/cpus.h).
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Runs fn(begin, end) over [0, n) split into contiguous static chunks, one per thread (fewer
  // when n is small: about `grain` items per chunk at least). Blocks until all chunks are done.
  // Not re-entrant: fn must not call parallel_for on the same pool.
  template <typename F>
  void parallel_for(size_t n, F&& fn, size_t grain = 1) {
    if (n == 0) return;
    size_t chunks = std::min<size_t>({size_t(n_threads_), (n + grain - 1) / grain, size_t(0xffff)});
    if (chunks <= 1) {
      fn(size_t(0), n);
      return;
    }
    run_chunks(n, chunks, [&](size_t b, size_t e) { fn(b, e); });
  }

  // Runs fn(begin, end) over [0, n) split into `chunks` contiguous static chunks (at most n and
  // 0xffff), claimed by the caller and the workers in turn: more chunks than threads balance
  // threads that other work slows down. Blocks until all chunks are done.
  template <typename F>
  void parallel_for_chunks(size_t n, size_t chunks, F&& fn) {
    if (n == 0) return;
    chunks = std::min<size_t>({chunks, n, size_t(0xffff)});
    if (chunks <= 1 || n_threads_ <= 1) {
      fn(size_t(0), n);
      return;
    }
    run_chunks(n, chunks, [&](size_t b, size_t e) { fn(b, e); });
  }

 private:
  using ChunkFn = std::function<void(size_t, size_t)>;
  void run_chunks(size_t n, size_t chunks, const ChunkFn& fn);
  void worker(int id);

  int n_threads_ = 1;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_start_, cv_done_;
  void claim_chunks(uint32_t gen, const ChunkFn& fn, size_t n);

  // Job slot, written by the caller before `generation_` is bumped. A worker that read the slot
  // of an older job cannot run anything: chunks are claimed through `ticket_`, which carries the
  // generation in its high half and the next chunk index in its low half.
  std::atomic<const ChunkFn*> job_{nullptr};
  std::atomic<size_t> job_n_{0};
  std::atomic<uint64_t> ticket_{0};
  std::atomic<size_t> done_{0};  // chunks finished in the current generation
  std::atomic<uint32_t> generation_{0};
  std::atomic<int> sleepers_{0};            // workers blocked on cv_start_
  std::atomic<bool> caller_asleep_{false};  // caller blocked on cv_done_
  std::atomic<bool> stop_{false};
};

}  // namespace inkling
