// Decode tuning (ops/tuning.h, tuning_cache.h, tune_calibrate.h): every setting gives bitwise the
// results of the defaults for every format (one token through matmul() with a pool, the kernels
// the registry binds, with and without AVX512-BF16); the cache file round-trips; corrupt, foreign
// or out-of-range files give one warning and the defaults, never a crash; the calibration runs
// within a tiny budget and picks valid values.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "../common/random.h"
#include "../common/tmp_files.h"
#include "base/cpus.h"
#include "base/dtype.h"
#include "base/thread_pool.h"
#include "ops/formats.h"
#include "ops/matmul.h"
#include "ops/tune_calibrate.h"
#include "ops/tuning.h"
#include "ops/tuning_cache.h"
#include "quant_test_util.h"

namespace inkling {
namespace {

using testing::QMat;
using testing::TempDir;

// Restores the process's tuning (and INKLING_TUNE) after each test.
class Tuning : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = DecodeTuning::current();
    source_ = decode_tuning_source();
  }
  void TearDown() override {
    set_decode_tuning(saved_, source_);
    unsetenv("INKLING_TUNE");
  }
  DecodeTuning saved_;
  std::string source_;
};

std::vector<DecodeTuning> settings() {
  std::vector<DecodeTuning> out;
  const int vals[][kTuneParams] = {
      // split, dense rows, dense pf, q4 rows, q4 pf, affine pf, bytes pf
      {16, 4, 2, 1, 0, 0, 0},
      {64, 2, 8, 2, 3, 2, 3},
      {0, 3, 1, 4, 2, 3, 2},
      {5, 1, 4, 1, 1, 0, 1},
  };
  for (const auto& v : vals) {
    DecodeTuning t;
    std::memcpy(t.v, v, sizeof t.v);
    out.push_back(t);
  }
  return out;
}

// One token through matmul() (pool of 2) under each setting: bitwise the defaults' result.
void expect_tuning_invariant(const MatView& w, const std::string& what) {
  ThreadPool pool(2);
  const auto x = testing::randn(size_t(w.cols), 17);
  std::vector<float> want(size_t(w.rows)), got(size_t(w.rows));
  set_decode_tuning(DecodeTuning::defaults(), "default");
  matmul(x.data(), 1, w.cols, w, want.data(), w.rows, &pool);
  for (const DecodeTuning& t : settings()) {
    set_decode_tuning(t, "test");
    std::fill(got.begin(), got.end(), -1.f);
    matmul(x.data(), 1, w.cols, w, got.data(), w.rows, &pool);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * 4), 0)
        << what << " differs under " << tuning_to_json(t).dump();
  }
}

TEST_F(Tuning, EverySettingGivesBitwiseTheDefaultResults) {
  std::mt19937 rng(3);
  // 203 rows: not a multiple of any row block; 1024 columns x 203 rows > the 2^15 threshold for
  // the pool.
  const int64_t rows = 203, cols = 1024;
  for (bool bf16dot : {true, false}) {
    set_q4_bf16dot_enabled(bf16dot);
    const std::string tag = bf16dot ? " (bf16dot)" : " (portable)";
    for (DType dt : {DType::BF16, DType::F32}) {
      const auto f = testing::randn(size_t(rows * cols), 5);
      std::vector<uint8_t> bytes(f.size() * dtype_size(dt));
      for (size_t i = 0; i < f.size(); ++i) {
        if (dt == DType::BF16) {
          const uint16_t h = f32_to_bf16(f[i]);
          std::memcpy(bytes.data() + 2 * i, &h, 2);
        } else {
          std::memcpy(bytes.data() + 4 * i, &f[i], 4);
        }
      }
      MatView v;
      v.dtype = dt, v.data = bytes.data(), v.rows = rows, v.cols = cols, v.row_stride = cols;
      ASSERT_TRUE(bind_kernels(v));
      expect_tuning_invariant(v, std::string(dtype_name(dt)) + tag);
    }
    for (int bits : {2, 3, 4, 5, 6, 8}) {
      QMat q = testing::make_affine(rows, cols, bits, 64, DType::BF16, 1, rng);
      ASSERT_TRUE(bind_kernels(q.view));
      expect_tuning_invariant(q.view, "affine q" + std::to_string(bits) + tag);
    }
    QMat n = testing::make_nvfp4(rows, cols, 1, rng);
    ASSERT_TRUE(bind_kernels(n.view));
    expect_tuning_invariant(n.view, "nvfp4" + tag);
  }
  set_q4_bf16dot_enabled(true);
}

TEST_F(Tuning, CacheFileRoundTrips) {
  TempDir dir;
  TuningFile f;
  f.tuning = settings()[1];
  f.cpu = "Some CPU";
  f.threads = 3;
  f.measured = {{"bf16", {{"tuned_ratio", 0.9}}}};
  const std::string path = dir.file("sub/dir/t.json");
  std::string err;
  ASSERT_TRUE(write_tuning_file(path, f, &err)) << err;
  TuningFile g;
  ASSERT_TRUE(read_tuning_file(path, &g, &err)) << err;
  EXPECT_TRUE(g.tuning == f.tuning);
  EXPECT_EQ(g.cpu, "Some CPU");
  EXPECT_EQ(g.threads, 3);
  EXPECT_EQ(g.measured, f.measured);

  // Loaded by an engine through INKLING_TUNE=<path> (no CPU check for an explicit file).
  setenv("INKLING_TUNE", path.c_str(), 1);
  EXPECT_EQ(load_decode_tuning(101), "file " + path);
  EXPECT_TRUE(DecodeTuning::current() == f.tuning);
  setenv("INKLING_TUNE", "off", 1);
  EXPECT_EQ(load_decode_tuning(102), "off");
  EXPECT_TRUE(DecodeTuning::current() == DecodeTuning::defaults());

  // The cache path: per CPU model and thread count under XDG_CACHE_HOME.
  EXPECT_EQ(tuning_cache_name("AMD EPYC 9R14 96-Core Processor", 2),
            "tune-AMD-EPYC-9R14-96-Core-Processor-t2.json");
  EXPECT_EQ(tuning_cache_name("../../x y/", 16), "tune-x-y-t16.json");
  EXPECT_EQ(tuning_cache_name("", 1), "tune-unknown-t1.json");
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const std::string saved_xdg = xdg ? xdg : "";
  setenv("XDG_CACHE_HOME", dir.path().c_str(), 1);
  EXPECT_EQ(tuning_cache_path(4),
            dir.path() + "/inkling/" + tuning_cache_name(cpu_model_name(), 4));
  // A cache file for this CPU and thread count is loaded with INKLING_TUNE unset.
  f.cpu = cpu_model_name();
  f.threads = 4;
  ASSERT_TRUE(write_tuning_file(tuning_cache_path(4), f, &err)) << err;
  unsetenv("INKLING_TUNE");
  EXPECT_EQ(load_decode_tuning(4), "cache " + tuning_cache_path(4));
  EXPECT_TRUE(DecodeTuning::current() == f.tuning);
  // One made for another CPU is not used.
  f.cpu = "another CPU";
  f.threads = 5;
  ASSERT_TRUE(write_tuning_file(tuning_cache_path(5), f, &err)) << err;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(load_decode_tuning(5), "default");
  const std::string warn = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warn.find("another CPU"), std::string::npos) << warn;
  EXPECT_TRUE(DecodeTuning::current() == DecodeTuning::defaults());
  if (xdg)
    setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
  else
    unsetenv("XDG_CACHE_HOME");
}

TEST_F(Tuning, CorruptFilesGiveOneWarningAndTheDefaults) {
  const char* bad[] = {
      "",
      "{",
      "[]",
      "null",
      "{\"inkling_tune\": 2, \"tuning\": {}}",
      "{\"tuning\": {}}",
      "{\"inkling_tune\": 1}",
      "{\"inkling_tune\": 1, \"tuning\": []}",
      "{\"inkling_tune\": 1, \"tuning\": {\"q4_rows\": \"4\"}}",
      "{\"inkling_tune\": 1, \"tuning\": {\"q4_rows\": 0}}",
      "{\"inkling_tune\": 1, \"tuning\": {\"split_rows\": -1}}",
      "{\"inkling_tune\": 1, \"tuning\": {\"dense_prefetch\": 1e9}}",
      "{\"inkling_tune\": 1, \"tuning\": {\"dense_rows\": 99999999999999999999}}",
      "{\"inkling_tune\": 1, \"cpu\": 7, \"tuning\": {}}",
      "{\"inkling_tune\": 1, \"threads\": 0, \"tuning\": {}}",
      "\xff\xfe garbage",
  };
  TempDir dir;
  int n = 0;
  for (const char* text : bad) {
    TuningFile f;
    std::string err;
    EXPECT_FALSE(parse_tuning_text(text, &f, &err)) << text;
    EXPECT_FALSE(err.empty()) << text;
    // Through an engine's load: one warning line naming the file, the defaults.
    const std::string path = dir.file("bad" + std::to_string(n++) + ".json");
    std::ofstream(path) << text;
    setenv("INKLING_TUNE", path.c_str(), 1);
    set_decode_tuning(settings()[0], "test");
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(load_decode_tuning(1000 + n), "default");
    const std::string warn = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(warn.find(path), std::string::npos) << warn;
    EXPECT_EQ(std::count(warn.begin(), warn.end(), '\n'), 1) << warn;
    EXPECT_TRUE(DecodeTuning::current() == DecodeTuning::defaults()) << text;
  }
  // Unknown keys are ignored; absent ones keep the defaults.
  TuningFile f;
  std::string err;
  ASSERT_TRUE(parse_tuning_text(
      "{\"inkling_tune\": 1, \"future\": 1, \"tuning\": {\"q4_rows\": 2, \"new_knob\": 3}}", &f,
      &err))
      << err;
  DecodeTuning want = DecodeTuning::defaults();
  want[TuneParam::kQ4Rows] = 2;
  EXPECT_TRUE(f.tuning == want);
  // A missing explicit file also warns.
  setenv("INKLING_TUNE", dir.file("missing.json").c_str(), 1);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(load_decode_tuning(2000), "default");
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("missing.json"), std::string::npos);
}

TEST_F(Tuning, CalibrationRunsWithinATinyBudget) {
  ThreadPool pool(2);
  CalibrateOptions opt;
  opt.budget_s = 0.05;
  opt.bytes = size_t(2) << 20;
  opt.formats = {"bf16", "q4", "q3", "q8", "nvfp4"};
  std::vector<std::string> lines;
  const CalibrateResult r =
      calibrate_decode(pool, opt, [&](const std::string& l) { lines.push_back(l); });
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_EQ(decode_tuning_source(), "tune");
  EXPECT_TRUE(DecodeTuning::current() == r.tuning);
  std::string err;
  DecodeTuning back = DecodeTuning::defaults();
  EXPECT_TRUE(tuning_from_json(tuning_to_json(r.tuning), &back, &err)) << err;  // in range
  for (const char* f : {"bf16", "q4", "q3", "q8", "nvfp4"}) {
    ASSERT_TRUE(r.measured.contains(f)) << r.measured.dump();
    EXPECT_GT(r.measured[f]["tuned_gbs"].get<double>(), 0) << f;
    EXPECT_GT(r.measured[f]["probe_gbs"].get<double>(), 0) << f;
  }
  EXPECT_FALSE(lines.empty());
}

}  // namespace
}  // namespace inkling
