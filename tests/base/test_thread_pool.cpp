// ThreadPool::parallel_for: every index in [0, n) is visited exactly once, chunks are
// contiguous and disjoint, every thread takes part, and thousands of back-to-back jobs neither
// lose a wakeup nor hang (a watchdog aborts the process instead of letting ctest time out).
#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace inkling {
namespace {

// Aborts the whole process if the test body has not finished within `seconds`.
class Watchdog {
 public:
  explicit Watchdog(double seconds, const char* what) {
    thread_ = std::thread([this, seconds, what] {
      std::unique_lock<std::mutex> lk(mu_);
      if (!cv_.wait_for(lk, std::chrono::duration<double>(seconds), [this] { return done_; })) {
        std::fprintf(stderr, "watchdog: %s did not finish within %.0f s (hang?)\n", what, seconds);
        std::abort();
      }
    });
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs one parallel_for and checks coverage; returns false (with a gtest failure) on error.
bool covers_once(ThreadPool& pool, size_t n, std::vector<std::atomic<int>>& hits,
                 size_t grain = 1) {
  for (size_t i = 0; i < n; ++i) hits[i].store(0, std::memory_order_relaxed);
  std::atomic<size_t> calls{0}, bad_range{0};
  pool.parallel_for(
      n,
      [&](size_t b, size_t e) {
        calls.fetch_add(1);
        if (b >= e || e > n) bad_range.fetch_add(1);
        for (size_t i = b; i < e && i < n; ++i) hits[i].fetch_add(1, std::memory_order_relaxed);
      },
      grain);
  EXPECT_EQ(bad_range.load(), 0u) << "n=" << n << " threads=" << pool.size();
  if (n == 0) {
    EXPECT_EQ(calls.load(), 0u);
  } else {
    EXPECT_GE(calls.load(), 1u);
    EXPECT_LE(calls.load(), size_t(pool.size()));
  }
  for (size_t i = 0; i < n; ++i) {
    if (hits[i].load() != 1) {
      ADD_FAILURE() << "index " << i << " of n=" << n << " visited " << hits[i].load()
                    << " times (threads=" << pool.size() << ")";
      return false;
    }
  }
  return true;
}

TEST(ThreadPool, SizeAndDefault) {
  EXPECT_EQ(ThreadPool(1).size(), 1);
  EXPECT_EQ(ThreadPool(3).size(), 3);
  EXPECT_GE(ThreadPool(0).size(), 1);
  EXPECT_GE(ThreadPool(-2).size(), 1);
}

TEST(ThreadPool, CoversRangeExactlyOnce) {
  Watchdog dog(120, "CoversRangeExactlyOnce");
  std::vector<std::atomic<int>> hits(1000);
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    for (size_t n : {size_t(0), size_t(1), size_t(2), size_t(7), size_t(1000)}) {
      for (int rep = 0; rep < 1000; ++rep)
        if (!covers_once(pool, n, hits)) return;
    }
  }
}

TEST(ThreadPool, AlternatingSizesBackToBack) {
  // Consecutive jobs of different sizes: a worker that read a stale job/size would show up
  // as a double or missing visit.
  Watchdog dog(60, "AlternatingSizesBackToBack");
  std::vector<std::atomic<int>> hits(1000);
  ThreadPool pool(4);
  const size_t sizes[] = {1000, 1, 3, 0, 2, 999, 4, 5, 7, 64};
  for (int rep = 0; rep < 3000; ++rep)
    if (!covers_once(pool, sizes[size_t(rep) % 10], hits)) return;
}

TEST(ThreadPool, GrainLimitsChunks) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> hits(64);
  for (size_t n : {size_t(1), size_t(8), size_t(16), size_t(63), size_t(64)})
    for (size_t grain : {size_t(1), size_t(4), size_t(16), size_t(100)}) {
      ASSERT_TRUE(covers_once(pool, n, hits, grain));
      std::atomic<size_t> calls{0};
      pool.parallel_for(
          n, [&](size_t, size_t) { calls.fetch_add(1); }, grain);
      EXPECT_LE(calls.load(), (n + grain - 1) / grain) << "n=" << n << " grain=" << grain;
    }
}

TEST(ThreadPool, ChunksAreContiguousAndOrdered) {
  ThreadPool pool(4);
  for (size_t n : {size_t(4), size_t(5), size_t(1000), size_t(1001)}) {
    std::mutex mu;
    std::vector<std::pair<size_t, size_t>> ranges;
    pool.parallel_for(n, [&](size_t b, size_t e) {
      std::lock_guard<std::mutex> lk(mu);
      ranges.emplace_back(b, e);
    });
    std::sort(ranges.begin(), ranges.end());
    ASSERT_EQ(ranges.size(), 4u) << n;
    EXPECT_EQ(ranges.front().first, 0u);
    EXPECT_EQ(ranges.back().second, n);
    for (size_t i = 1; i < ranges.size(); ++i) EXPECT_EQ(ranges[i - 1].second, ranges[i].first);
    // Static chunks are balanced to within one item.
    for (const auto& [b, e] : ranges) {
      EXPECT_GE(e - b, n / 4);
      EXPECT_LE(e - b, n / 4 + 1);
    }
  }
}

TEST(ThreadPool, WorkersShareTheWorkAndCallerTakesPart) {
  // Chunks are claimed dynamically, so which thread runs which chunk is up to timing; but when
  // every chunk waits for the others, all threads must be running chunks at once.
  for (int threads : {2, 4}) {
    ThreadPool pool(threads);
    std::mutex mu;
    std::set<std::thread::id> ids;
    bool caller_took_part = false;
    const auto me = std::this_thread::get_id();
    std::atomic<int> arrived{0};
    pool.parallel_for(size_t(threads), [&](size_t, size_t) {
      {
        std::lock_guard<std::mutex> lk(mu);
        ids.insert(std::this_thread::get_id());
        if (std::this_thread::get_id() == me) caller_took_part = true;
      }
      arrived.fetch_add(1);
      while (arrived.load() < threads) std::this_thread::yield();  // a barrier across all chunks
    });
    EXPECT_EQ(ids.size(), size_t(threads));
    EXPECT_TRUE(caller_took_part);
  }
}

TEST(ThreadPool, SlowChunksAreWaitedFor) {
  // One chunk outlasts the completion spin: parallel_for must still wait for it.
  ThreadPool pool(2);
  std::atomic<int> done{0};
  pool.parallel_for(2, [&](size_t b, size_t) {
    if (b != 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    done.fetch_add(1);
  });
  EXPECT_EQ(done.load(), 2);
}

TEST(ThreadPool, CreateAndDestroyQuickly) {
  Watchdog dog(60, "CreateAndDestroyQuickly");
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) {
    ThreadPool pool(4);
    if (i % 2) {
      std::atomic<int> s{0};
      pool.parallel_for(8, [&](size_t b, size_t e) { s.fetch_add(int(e - b)); });
      ASSERT_EQ(s.load(), 8);
    }
  }
  EXPECT_LT(seconds_since(t0), 10.0);
}

}  // namespace
}  // namespace inkling
