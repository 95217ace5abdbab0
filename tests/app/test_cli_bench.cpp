// `inkling bench` run as a user runs it, on the bundled tiny checkpoint: the --json object has
// every key the performance issue names, with finite positive values that agree with each other
// (ratios recomputed from their parts), the host, kernels and decode tuning (from a file that
// `inkling tune` wrote with a tiny budget, A/B against the defaults), and bad arguments fail
// with a message.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "../common/run_cli.h"

namespace inkling {
namespace {

using testing::run_cli;
using testing::TempDir;

const std::string kModel = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/full/og";

TEST(CliBench, JsonHasEveryRatioAndItsParts) {
  TempDir dir;
  // `inkling tune` with a tiny budget writes a tuning file; bench runs with it (INKLING_TUNE)
  // and A/Bs it against the defaults.
  const std::string tf = dir.file("tune.json");
  auto t = run_cli({"tune", "--budget", "0.05", "--mib", "2", "--formats", "bf16,q4", "-t", "2",
                    "--out", tf, "--json"},
                   dir.path(), 120);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const auto tj = nlohmann::json::parse(t.out);
  EXPECT_EQ(tj["written"].get<std::string>(), tf);
  EXPECT_LT(tj["seconds"].get<double>(), 20.0);
  ASSERT_TRUE(tj["measured"].contains("q4")) << t.out;
  setenv("INKLING_TUNE", tf.c_str(), 1);
  auto r = run_cli({"bench", "-m", kModel, "--prompt-tokens", "12", "--gen-tokens", "8",
                    "--context", "40", "--threads", "2", "--ab-tuning", "default", "--json"},
                   dir.path(), 300);
  unsetenv("INKLING_TUNE");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  // The host, the kernels and the tuning in effect (values and where they came from).
  EXPECT_FALSE(j["host"]["cpu"].get<std::string>().empty());
  EXPECT_TRUE(j["host"]["flags"].is_array());
  EXPECT_FALSE(j["kernels"].empty());
  EXPECT_EQ(j["tuning"]["source"].get<std::string>(), "file " + tf);
  EXPECT_EQ(j["tuning"]["values"], tj["tuning"]);
  EXPECT_EQ(j["tuning_ab"]["a"]["segments"].get<int>(), 1);
  EXPECT_EQ(j["tuning_ab"]["b"]["source"].get<std::string>(), "default");
  EXPECT_GT(j["tuning_ab"]["a_over_b"].get<double>(), 0);
  for (const char* key : {"prefill_tok_s", "decode_tok_s", "bandwidth_gbs", "fma_gflops",
                          "bytes_per_token", "flops_per_token", "decode_ratio", "prefill_ratio",
                          "bandwidth_gbs_interleaved", "decode_ratio_interleaved"}) {
    ASSERT_TRUE(j.contains(key)) << key;
    const double v = j[key].get<double>();
    EXPECT_TRUE(std::isfinite(v) && v > 0) << key << " = " << v;
  }
  EXPECT_EQ(j["threads"].get<int>(), 2);
  EXPECT_EQ(j["context"].get<int>(), 40);         // the cache was filled to --context
  EXPECT_EQ(j["decode_segments"].get<int>(), 2);  // 8 steps in segments of 4
  const double bytes = j["bytes_per_token"], bw = j["bandwidth_gbs"];
  EXPECT_NEAR(j["decode_ratio"].get<double>(), j["decode_tok_s"].get<double>() * bytes / (bw * 1e9),
              1e-9);
  EXPECT_NEAR(j["prefill_ratio"].get<double>(),
              j["prefill_tok_s"].get<double>() * j["flops_per_token"].get<double>() /
                  (j["fma_gflops"].get<double>() * 1e9),
              1e-9);
  // The fixture is f32: every weight role costs 4 bytes per element.
  for (const auto& [role, b] : j["weight_bytes_per_element"].items())
    EXPECT_EQ(b.get<double>(), 4.0) << role;
}

TEST(CliBench, BadArgumentsFailWithAMessage) {
  TempDir dir;
  auto r = run_cli({"bench", "-m", dir.path() + "/missing"}, dir.path(), 60);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("config"), std::string::npos) << r.err;
  r = run_cli({"bench", "-m", kModel, "--gen-tokens", "0"}, dir.path(), 60);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_FALSE(r.err.empty());
  r = run_cli({"bench", "-m", kModel, "--ab-tuning", dir.file("missing.json")}, dir.path(), 60);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing.json"), std::string::npos) << r.err;
  r = run_cli({"tune", "--formats", "q7", "--no-write"}, dir.path(), 60);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("q7"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace inkling
