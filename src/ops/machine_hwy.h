// Machine limits measured the way the kernels use the machine: a STREAM-like read bandwidth with
// the pool's threads and a register-blocked FMA peak with the widest Highway target available.
#pragma once

#include <cstddef>
#include <string>

#include "base/thread_pool.h"

namespace inkling {

// Best-of-`reps` read bandwidth in GB/s (1e9 bytes/s) summing a `bytes` f32 buffer, each thread
// a static slice (the buffer is first-touched by the thread that reads it).
double measure_read_bandwidth_gbs(ThreadPool& pool, size_t bytes = size_t(1) << 30, int reps = 5);

// Best-of-`reps` f32 FMA throughput in GFLOP/s (2 FLOPs per lane per FMA), all pool threads.
double measure_fma_gflops(ThreadPool& pool, int reps = 5);

// The Highway target the kernels dispatch to on this machine ("AVX3", "AVX2", ...).
std::string simd_target_name();

}  // namespace inkling
