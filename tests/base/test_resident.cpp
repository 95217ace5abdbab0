// populate() makes the page tables of mapped file pages before they are read: the mapping's Rss
// (/proc/self/smaps, pages mapped into this process) goes from nothing to the whole populated
// span, ranges are merged to whole pages, and INKLING_NO_POPULATE=1 turns it off.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/mapped_file.h"
#include "base/resident.h"

namespace inkling {
namespace {

// Rss in bytes of the mapping that contains p, from /proc/self/smaps (-1: not found).
int64_t mapping_rss(const void* p) {
  std::ifstream f("/proc/self/smaps");
  std::string line;
  const auto a = reinterpret_cast<uintptr_t>(p);
  bool in = false;
  while (std::getline(f, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2) {
      in = a >= lo && a < hi;
      continue;
    }
    long kb = 0;
    if (in && std::sscanf(line.c_str(), "Rss: %ld kB", &kb) == 1) return int64_t(kb) * 1024;
  }
  return -1;
}

class Resident : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("inkling_resident_" + std::to_string(::getpid()) + ".bin"))
                .string();
    std::ofstream out(path_, std::ios::binary);
    const std::string block(4096, 'x');
    for (int i = 0; i < 256; ++i) out << block;  // 1 MiB, in the page cache once written
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::string path_;
};

TEST_F(Resident, PopulatesTheMappedPagesOnce) {
  if (memory_available() < (uint64_t(2) << 30)) GTEST_SKIP() << "less than 2 GiB available";
  auto f = MappedFile::open(path_);
  ASSERT_TRUE(f.ok());
  const uint8_t* p = f.value()->data();
  const int64_t before = mapping_rss(p);
  ASSERT_GE(before, 0) << "no smaps entry";
  EXPECT_LT(before, 1 << 20);
  // Two overlapping ranges and one inside them: one span of 1 MiB, from mid-page starts.
  const uint64_t n = populate({{p + 100, 600000}, {p + 500000, 548476}, {p + 4096, 10}}, 2);
  const long page = ::sysconf(_SC_PAGESIZE);
#ifdef MADV_POPULATE_READ
  if (n == 0) GTEST_SKIP() << "the kernel has no MADV_POPULATE_READ";
  EXPECT_EQ(n, uint64_t(1) << 20);
  EXPECT_EQ(mapping_rss(p), int64_t(1) << 20);
#endif
  EXPECT_EQ(n % uint64_t(page), 0u);
  EXPECT_EQ(populate({{nullptr, 4096}, {p, 0}}, 2), 0u) << "nothing to do";
}

TEST_F(Resident, OffWithTheEnvironmentSwitch) {
  auto f = MappedFile::open(path_);
  ASSERT_TRUE(f.ok());
  ::setenv("INKLING_NO_POPULATE", "1", 1);
  EXPECT_EQ(populate({{f.value()->data(), f.value()->size()}}, 2), 0u);
  ::unsetenv("INKLING_NO_POPULATE");
  EXPECT_LT(mapping_rss(f.value()->data()), 1 << 20);
}

TEST(ResidentMemory, AvailableIsRead) {
  EXPECT_GT(memory_available(), 0u);  // Linux: /proc/meminfo
}

}  // namespace
}  // namespace inkling
