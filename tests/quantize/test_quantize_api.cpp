// The public quantization API (include/inkling/quantize.h): the plan agrees with what a run
// writes, events arrive in order, a cancelled call leaves DST.partial and the same call resumes
// it into exactly the folder an uninterrupted call writes, and bad options are one error naming
// the option.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "inkling/engine.h"
#include "inkling/quantize.h"

namespace inkling {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kQapiModel = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/full/og";

std::string qapi_dir(const std::string& name) {
  const fs::path p =
      fs::temp_directory_path() / ("inkling_qapi_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  return p.string();
}

std::string qapi_slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(QuantizeApi, PlanMatchesTheRunAndEventsProgress) {
  QuantizeOptions o;
  o.bits = 4;
  o.group_size = 64;
  o.dtype = "bf16";  // the plan counts floats as bf16 unless told: the same for both
  auto plan = plan_quantization(kQapiModel, o);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const std::string dst = qapi_dir("plan");
  std::vector<QuantizeEvent> events;
  auto r = quantize_model(kQapiModel, dst, o, [&](const QuantizeEvent& e) { events.push_back(e); });
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->cancelled);
  EXPECT_EQ(r->main_spec, "q4/g64");
  ASSERT_EQ(r->modules.size(), plan->modules.size());
  for (size_t i = 0; i < r->modules.size(); ++i) {
    EXPECT_EQ(r->modules[i].path, plan->modules[i].path);
    EXPECT_EQ(r->modules[i].storage, plan->modules[i].storage) << r->modules[i].path;
    EXPECT_EQ(r->modules[i].bytes, plan->modules[i].bytes) << r->modules[i].path;
  }
  EXPECT_EQ(r->bytes, plan->bytes);
  // Writing events only grow, and the last one finishes the work.
  uint64_t bytes = 0;
  int64_t tensors = 0, writing = 0;
  for (const QuantizeEvent& e : events) {
    if (e.kind != QuantizeEvent::Kind::kWriting) continue;
    ++writing;
    EXPECT_GE(e.bytes, bytes);
    EXPECT_GE(e.tensors, tensors);
    bytes = e.bytes, tensors = e.tensors;
  }
  ASSERT_GT(writing, 0);
  EXPECT_EQ(tensors, events.back().total_tensors);
  EXPECT_EQ(bytes, events.back().total_bytes);
  // The output is a model the engine loads.
  auto engine = Engine::load(dst);
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  fs::remove_all(dst);
}

TEST(QuantizeApi, CancelledCallResumesIntoTheUninterruptedOutput) {
  QuantizeOptions o;
  o.bits = 3;
  o.group_size = 32;
  o.max_shard_bytes = 60'000;  // several shards, so the cancel lands mid-way
  const std::string whole = qapi_dir("whole"), dst = qapi_dir("resumed");
  ASSERT_TRUE(quantize_model(kQapiModel, whole, o).ok());

  std::atomic<bool> cancel{false};
  auto stop_early = [&](const QuantizeEvent& e) {
    if (e.kind == QuantizeEvent::Kind::kWriting && e.tensors > 0) cancel.store(true);
  };
  auto first = quantize_model(kQapiModel, dst, o, stop_early, &cancel);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_TRUE(first->cancelled);
  EXPECT_TRUE(fs::exists(dst + ".partial"));
  EXPECT_FALSE(fs::exists(dst));

  cancel.store(false);
  auto second = quantize_model(kQapiModel, dst, o, {}, &cancel);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_FALSE(second->cancelled);
  EXPECT_FALSE(fs::exists(dst + ".partial"));
  std::vector<std::string> a, b;
  for (const auto& e : fs::directory_iterator(whole)) a.push_back(e.path().filename());
  for (const auto& e : fs::directory_iterator(dst)) b.push_back(e.path().filename());
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  ASSERT_EQ(a, b);
  EXPECT_GT(a.size(), 3u);  // config.json, the index and more than one shard
  for (const std::string& f : a)
    EXPECT_EQ(qapi_slurp(fs::path(whole) / f), qapi_slurp(fs::path(dst) / f)) << f;
  fs::remove_all(whole);
  fs::remove_all(dst);
}

TEST(QuantizeApi, BadOptionsAreOneErrorNamingTheOption) {
  const std::string dst = qapi_dir("bad");
  QuantizeOptions o;
  o.bits = 7;
  auto r = quantize_model(kQapiModel, dst, o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("bits"));
  o = {};
  o.recipe = "no-such-recipe";
  r = quantize_model(kQapiModel, dst, o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("no-such-recipe"));
  o = {};
  o.overrides = {"nothing.matches.*=4"};
  r = plan_quantization(kQapiModel, o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("nothing.matches.*"));
  r = quantize_model(kQapiModel + "/missing", dst, QuantizeOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("missing"));
  EXPECT_FALSE(fs::exists(dst));
}

}  // namespace
}  // namespace inkling
