// The decode calibration on first use (ops/tune_first_use.h): it runs once, only without a cache
// file, only for weights over the size threshold and only when INKLING_TUNE allows it; it writes
// a cache file that a later start loads; small models and explicit choices start at once.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "../common/tmp_files.h"
#include "base/cpus.h"
#include "base/thread_pool.h"
#include "ops/tune_first_use.h"
#include "ops/tuning.h"
#include "ops/tuning_cache.h"

namespace inkling {
namespace {

using testing::TempDir;

class TuneFirstUse : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = DecodeTuning::current();
    source_ = decode_tuning_source();
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    had_xdg_ = xdg != nullptr;
    if (xdg) xdg_ = xdg;
    setenv("XDG_CACHE_HOME", dir_.path().c_str(), 1);
    unsetenv("INKLING_TUNE");
    set_decode_tuning(DecodeTuning::defaults(), "default");
  }
  void TearDown() override {
    set_decode_tuning(saved_, source_);
    unsetenv("INKLING_TUNE");
    if (had_xdg_)
      setenv("XDG_CACHE_HOME", xdg_.c_str(), 1);
    else
      unsetenv("XDG_CACHE_HOME");
  }
  TempDir dir_;
  DecodeTuning saved_;
  std::string source_, xdg_;
  bool had_xdg_ = false;
};

// Every case in one test: the calibration runs at most once per process, so the cases that must
// not run come first.
TEST_F(TuneFirstUse, RunsOnceWithoutACacheForLargeWeightsOnly) {
  ThreadPool pool(2);
  FirstUseTuning opt;
  opt.budget_s = 0.05;
  opt.min_weight_bytes = 1000;
  opt.synthetic_bytes = size_t(4) << 20;
  const std::string path = tuning_cache_path(pool.size());
  ASSERT_FALSE(path.empty());
  ASSERT_EQ(path.rfind(dir_.path(), 0), 0u) << path;

  // Below the threshold (the demo model, test fixtures): nothing.
  EXPECT_EQ(tune_on_first_use(pool, {"bf16"}, 999, opt), "");
  // No format to calibrate: nothing.
  EXPECT_EQ(tune_on_first_use(pool, {}, 1 << 20, opt), "");
  // INKLING_TUNE=off or an explicit file: nothing.
  setenv("INKLING_TUNE", "off", 1);
  EXPECT_EQ(tune_on_first_use(pool, {"bf16"}, 1 << 20, opt), "");
  setenv("INKLING_TUNE", dir_.file("mine.json").c_str(), 1);
  EXPECT_EQ(tune_on_first_use(pool, {"bf16"}, 1 << 20, opt), "");
  unsetenv("INKLING_TUNE");
  // A tuning already loaded in this process (a cache, a file, `inkling tune`): nothing.
  set_decode_tuning(DecodeTuning::defaults(), "file x.json");
  EXPECT_EQ(tune_on_first_use(pool, {"bf16"}, 1 << 20, opt), "");
  set_decode_tuning(DecodeTuning::defaults(), "default");
  // A cache file for another CPU already there (warned about at load): left alone.
  {
    TuningFile other;
    other.cpu = "another CPU";
    other.threads = pool.size();
    std::string err;
    ASSERT_TRUE(write_tuning_file(path, other, &err)) << err;
    EXPECT_EQ(tune_on_first_use(pool, {"bf16"}, 1 << 20, opt), "");
    TuningFile back;
    ASSERT_TRUE(read_tuning_file(path, &back, &err)) << err;
    EXPECT_EQ(back.cpu, "another CPU");
    std::filesystem::remove(path);
  }
  EXPECT_FALSE(std::filesystem::exists(path));

  // The first start: calibrates and writes this CPU's cache.
  EXPECT_EQ(tune_on_first_use(pool, {"bf16"}, 1 << 20, opt), path);
  EXPECT_EQ(decode_tuning_source(), "first use " + path);
  TuningFile f;
  std::string err;
  ASSERT_TRUE(read_tuning_file(path, &f, &err)) << err;
  EXPECT_EQ(f.cpu, cpu_model_name());
  EXPECT_EQ(f.threads, pool.size());
  EXPECT_EQ(f.tuning, DecodeTuning::current());
  EXPECT_TRUE(f.measured.contains("bf16"));
  EXPECT_EQ(f.measured.value("first_use", false), true);

  // The calibration never runs twice in a process (a later process loads the file written above:
  // load_decode_tuning, tests in test_tuning.cpp).
  set_decode_tuning(DecodeTuning::defaults(), "default");
  std::filesystem::remove(path);
  EXPECT_EQ(tune_on_first_use(pool, {"bf16"}, 1 << 20, opt), "");
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace inkling
