// A growable scratch buffer whose storage starts on a 64-byte boundary, for the kernels'
// per-thread buffers (packed activations, accumulator tiles). std::vector's storage is only
// 16-byte aligned (large blocks come from mmap at 16 mod 64), so a row of 16 floats read from it
// straddles two cache lines, and such split loads halve the load rate: on the Zen 4 VM the
// 16-token dense kernel ran 0.84x as fast with x 16 bytes off a cache line as with it aligned.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <new>

namespace inkling {

template <typename T>  // trivially copyable
class AlignedScratch {
 public:
  static constexpr size_t kAlign = 64;

  // At least n elements, 64-byte aligned. Growing replaces the contents with zeros (as a grown
  // std::vector's new elements are); steady-state calls allocate nothing.
  T* get(size_t n) {
    if (n > cap_) {
      buf_.reset(static_cast<T*>(::operator new[](n * sizeof(T), std::align_val_t(kAlign))));
      std::memset(static_cast<void*>(buf_.get()), 0, n * sizeof(T));
      cap_ = n;
    }
    return buf_.get();
  }
  // What the last get() returned (null before the first).
  T* data() const { return buf_.get(); }

 private:
  struct Free {
    void operator()(T* p) const { ::operator delete[](p, std::align_val_t(kAlign)); }
  };
  std::unique_ptr<T, Free> buf_;
  size_t cap_ = 0;
};

}  // namespace inkling
