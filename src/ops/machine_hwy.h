// Machine limits measured the way the kernels use the machine: a STREAM-like read bandwidth with
// the pool's threads and a register-blocked FMA peak with the widest Highway target available.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "base/thread_pool.h"

namespace inkling {

// A read-bandwidth probe that keeps its buffer, for repeated measurements without allocating and
// faulting in a fresh buffer each time. Each pool thread first-touches and later reads its own
// static slice.
class ReadProbe {
 public:
  ReadProbe(ThreadPool& pool, size_t bytes);
  // Best-of-`reps` read bandwidth in GB/s (1e9 bytes/s) summing the whole buffer.
  double measure(int reps);

 private:
  ThreadPool& pool_;
  std::unique_ptr<float[]> buf_;
  size_t n_ = 0;
};

// One ReadProbe of `bytes`, measured once.
double measure_read_bandwidth_gbs(ThreadPool& pool, size_t bytes = size_t(1) << 30, int reps = 5);

// Best-of-`reps` f32 FMA throughput in GFLOP/s (2 FLOPs per lane per FMA), all pool threads.
double measure_fma_gflops(ThreadPool& pool, int reps = 5);

// The Highway target the kernels dispatch to on this machine ("AVX3", "AVX2", ...).
std::string simd_target_name();

}  // namespace inkling
