// The decode loop must not touch the heap: after a warm-up, decode steps (whose caches have
// room) perform zero allocations. Counted by replacing the global operator new in this binary.
// The replacement pair below is a matched malloc/free; GCC cannot see that through the
// replaced operators.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "../common/fixtures.h"
#include "inkling/engine.h"
#include "inkling/sampler.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocs{0};
}  // namespace

void* operator new(std::size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// Every unaligned form is replaced, so that whatever new hands out (the nothrow form is what
// std::stable_sort's temporary buffer uses) the matching delete frees it: sanitizers check it.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (g_counting.load(std::memory_order_relaxed)) g_allocs.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n) {
  return operator new(n);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept {
  return operator new(n, t);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}

namespace inkling {
namespace {

TEST(NoAlloc, DecodeStepsDoNotAllocate) {
  const std::string model = testing::fixture_dir("full") + "/og";
  if (!std::filesystem::exists(model + "/config.json")) GTEST_SKIP() << "fixture missing";
  auto e = Engine::load(model, EngineOptions{2, 64});
  ASSERT_TRUE(e.ok()) << e.status().message();
  auto s = e.value()->new_session();
  std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8};
  auto l = s->prefill(prompt);
  ASSERT_TRUE(l.ok());
  int32_t tok = argmax(l.value());
  // Warm up past the first cache growth steps (64 rows), then count.
  for (int i = 0; i < 80; ++i) tok = argmax(s->decode(tok).value());
  g_allocs = 0;
  g_counting = true;
  for (int i = 0; i < 40; ++i) tok = argmax(s->decode(tok).value());
  g_counting = false;
  EXPECT_EQ(g_allocs.load(), 0) << "heap allocations during 40 decode steps";
}

}  // namespace
}  // namespace inkling
