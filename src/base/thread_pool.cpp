// ThreadPool: workers sleep on a condition variable between jobs and spin briefly on completion.
#include "base/thread_pool.h"

namespace inkling {

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = int(std::max(1u, std::thread::hardware_concurrency()));
  n_threads_ = n_threads;
  for (int i = 1; i < n_threads_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_start_.notify_all();
  for (auto& t : threads_) t.join();
}

static inline void chunk_range(size_t n, size_t chunks, size_t c, size_t* b, size_t* e) {
  *b = n * c / chunks;
  *e = n * (c + 1) / chunks;
}

void ThreadPool::run_chunks(size_t n, size_t chunks, const ChunkFn& fn) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    job_ = &fn;
    job_n_ = n;
    job_chunks_ = chunks;
    pending_.store(chunks - 1, std::memory_order_relaxed);
    ++generation_;
  }
  cv_start_.notify_all();
  size_t b, e;
  chunk_range(n, chunks, 0, &b, &e);
  fn(b, e);
  // Workers finish quickly in the common case: spin a little, then sleep.
  for (int spin = 0; spin < 20000 && pending_.load(std::memory_order_acquire) != 0; ++spin) {
  }
  if (pending_.load(std::memory_order_acquire) != 0) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_done_.wait(lk, [&] { return pending_.load(std::memory_order_acquire) == 0; });
  }
  std::lock_guard<std::mutex> lk(mu_);
  job_ = nullptr;
}

void ThreadPool::worker(int id) {
  uint64_t seen = 0;
  for (;;) {
    const ChunkFn* job;
    size_t n, chunks;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_start_.wait(lk, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
      chunks = job_chunks_;
    }
    if (job && size_t(id) < chunks) {
      size_t b, e;
      chunk_range(n, chunks, size_t(id), &b, &e);
      (*job)(b, e);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lk(mu_);
        cv_done_.notify_one();
      }
    }
  }
}

}  // namespace inkling
