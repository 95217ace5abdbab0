// The on/off switch of an optional SIMD kernel (the AVX512-BF16, AVX512-VNNI and AVX2 int8 ones):
// on when the CPU can run it, unless its environment variable is set to anything but "" or "0"
// (read at first use; for A/B benchmarks and tests of the kernels it shadows) or set(false) was
// called. Thread-safe; a constant-initialised global per kernel.
#pragma once

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace inkling {

class KernelSwitch {
 public:
  constexpr explicit KernelSwitch(const char* env) : env_(env) {}

  bool enabled(bool available) {
    int e = state_.load(std::memory_order_relaxed);
    if (e < 0) {
      const char* off = std::getenv(env_);
      e = available && !(off && *off && std::strcmp(off, "0") != 0) ? 1 : 0;
      state_.store(e, std::memory_order_relaxed);
    }
    return e == 1;
  }
  void set(bool on, bool available) {
    state_.store(on && available ? 1 : 0, std::memory_order_relaxed);
  }

 private:
  const char* env_;
  std::atomic<int> state_{-1};  // -1: not decided yet
};

}  // namespace inkling
