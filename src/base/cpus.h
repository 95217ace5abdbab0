// How many CPUs this process may use: the default thread count. A process started under
// `taskset`, `numactl`, a container's cpuset or a batch scheduler sees fewer CPUs than the
// machine has; running one worker per machine core there oversubscribes the allowed ones.
#pragma once

#include <string>
#include <vector>

namespace inkling {

// CPUs in this process's affinity mask (sched_getaffinity), lowered to the cgroup v2 CPU quota
// (cpu.max, rounded up) when one is set; at least 1. Falls back to the hardware concurrency
// where neither can be read.
int available_cpus();

// Where available_cpus() came from, for `bench` and `inspect`: e.g. "affinity 2 of 8 CPUs" or
// "affinity 16 of 16 CPUs, cgroup quota 4".
std::string available_cpus_source();

// The CPU's model name ("AMD EPYC 9R14 96-Core Processor") from /proc/cpuinfo, or "unknown".
std::string cpu_model_name();

// The /proc/cpuinfo flags that decide which kernels run, among: avx2, fma, avx512f, avx512bw,
// avx512_vnni, avx512_bf16, avx512vbmi, avx512_fp16, amx_tile, amx_bf16, amx_int8 (those this
// CPU lists, in that order; empty where /proc/cpuinfo cannot be read).
std::vector<std::string> cpu_kernel_flags();

}  // namespace inkling
