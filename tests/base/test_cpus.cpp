// The default thread count follows the CPUs this process may use, not the machine's core count.
#include <gtest/gtest.h>

#include <thread>

#include "base/cpus.h"
#include "base/thread_pool.h"

#if defined(__linux__)
#include <sched.h>
#endif

namespace inkling {
namespace {

TEST(Cpus, AtLeastOneAndAtMostTheMachine) {
  const int n = available_cpus();
  EXPECT_GE(n, 1);
  const unsigned hw = std::thread::hardware_concurrency();
  if (hw > 0) {
    EXPECT_LE(n, int(hw));
  }
  EXPECT_NE(available_cpus_source().find("CPUs"), std::string::npos) << available_cpus_source();
  EXPECT_FALSE(cpu_model_name().empty());
}

#if defined(__linux__)
// Pinning the calling thread to one CPU (as `taskset -c 0` would pin the process) makes the
// default one thread, for the count and for a pool created with n_threads = 0.
TEST(Cpus, FollowTheAffinityMask) {
  cpu_set_t saved;
  CPU_ZERO(&saved);
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  int first = -1;
  for (int c = 0; c < CPU_SETSIZE && first < 0; ++c)
    if (CPU_ISSET(c, &saved)) first = c;
  ASSERT_GE(first, 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  const int n = available_cpus();
  const std::string src = available_cpus_source();
  int pool_size = 0;
  {
    ThreadPool pool(0);
    pool_size = pool.size();
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  EXPECT_EQ(n, 1);
  EXPECT_EQ(pool_size, 1);
  EXPECT_EQ(src.rfind("affinity 1 of ", 0), 0u) << src;
}
#endif

}  // namespace
}  // namespace inkling
