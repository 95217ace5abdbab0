// Page tables for mapped weights made before the first token instead of during it. A checkpoint
// is mapped, not read: each 4 KiB page a kernel first touches costs a page fault (a minor one
// when the file is in the page cache), and a mixture of experts touches its experts' pages over
// its first hundreds of tokens. populate() makes them all at once, on several threads, as
// llama.cpp's MAP_POPULATE does, where they fit in the memory available.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace inkling {

// MemAvailable of /proc/meminfo in bytes (0 where it cannot be read).
uint64_t memory_available();

// Prefaults the pages of `ranges` (address, bytes) for reading (madvise MADV_POPULATE_READ),
// merged to whole pages, on up to `threads` threads. Skipped, returning 0, when their pages
// and 1 GiB more do not fit in memory_available(), when INKLING_NO_POPULATE=1, or where the
// kernel lacks MADV_POPULATE_READ (Linux < 5.14); else returns the bytes populated. Pages
// the kernel cannot populate are left to fault as before: never an error.
uint64_t populate(std::vector<std::pair<const void*, size_t>> ranges, int threads);

}  // namespace inkling
