// A fixed pool of worker threads for data-parallel loops. Created once per Engine; the hot path
// only publishes a job and waits (no allocation, no thread creation). The caller's thread takes
// part as worker 0.
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
  // n_threads <= 0 picks the hardware concurrency.
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Runs fn(begin, end) over [0, n) split into contiguous static chunks, one per thread (fewer
  // when n is small, at least `grain` items per chunk). Blocks until all chunks are done.
  // Not re-entrant: fn must not call parallel_for on the same pool.
  template <typename F>
  void parallel_for(size_t n, F&& fn, size_t grain = 1) {
    if (n == 0) return;
    size_t chunks = std::min<size_t>(size_t(n_threads_), (n + grain - 1) / grain);
    if (chunks <= 1) {
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
  const ChunkFn* job_ = nullptr;
  size_t job_n_ = 0, job_chunks_ = 0;
  uint64_t generation_ = 0;
  std::atomic<size_t> pending_{0};
  bool stop_ = false;
};

}  // namespace inkling
