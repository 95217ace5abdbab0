// populate() and memory_available() (base/resident.h).
#include "base/resident.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace inkling {

uint64_t memory_available() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kb = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
  std::fclose(f);
  return uint64_t(kb) * 1024;
}

uint64_t populate(std::vector<std::pair<const void*, size_t>> ranges, int threads) {
#ifdef MADV_POPULATE_READ
  if (const char* e = std::getenv("INKLING_NO_POPULATE"); e && std::strcmp(e, "1") == 0) return 0;
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  std::vector<std::pair<uintptr_t, uintptr_t>> spans;  // [begin, end) on whole pages
  for (const auto& [p, n] : ranges) {
    if (!p || n == 0) continue;
    const uintptr_t b = reinterpret_cast<uintptr_t>(p);
    spans.emplace_back(b / page * page, (b + n + page - 1) / page * page);
  }
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<uintptr_t, uintptr_t>> merged;
  for (const auto& s : spans)
    if (!merged.empty() && s.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, s.second);
    else
      merged.push_back(s);
  uint64_t total = 0;
  for (const auto& [b, e] : merged) total += e - b;
  const uint64_t avail = memory_available();
  if (total == 0 || avail == 0 || total + (uint64_t(1) << 30) > avail) return 0;
  // Pieces of 64 MiB handed out in turn (a page fault takes the mapping's lock for reading
  // only, so threads populate side by side).
  constexpr uintptr_t kPiece = uintptr_t(64) << 20;
  std::vector<std::pair<uintptr_t, uintptr_t>> pieces;
  for (const auto& [b, e] : merged)
    for (uintptr_t a = b; a < e; a += kPiece) pieces.emplace_back(a, std::min(e, a + kPiece));
  std::atomic<size_t> next{0};
  std::atomic<bool> unsupported{false};
  auto work = [&] {
    for (size_t i; !unsupported && (i = next.fetch_add(1)) < pieces.size();)
      if (::madvise(reinterpret_cast<void*>(pieces[i].first), pieces[i].second - pieces[i].first,
                    MADV_POPULATE_READ) != 0 &&
          errno == EINVAL)
        unsupported = true;  // a kernel before 5.14: the pages fault in as they are read
  };
  const int nt = std::clamp(threads, 1, 16);
  std::vector<std::thread> pool;
  for (int t = 1; t < nt && size_t(t) < pieces.size(); ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  return unsupported ? 0 : total;
#else
  (void)ranges, (void)threads;
  return 0;
#endif
}

}  // namespace inkling
