// `inkling bench` run as a user runs it, on the bundled tiny checkpoint: the --json object has
// every key the performance issue names, with finite positive values that agree with each other
// (ratios recomputed from their parts), and bad arguments fail with a message.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "../common/run_cli.h"

namespace inkling {
namespace {

using testing::run_cli;
using testing::TempDir;

const std::string kModel = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/full/og";

TEST(CliBench, JsonHasEveryRatioAndItsParts) {
  TempDir dir;
  auto r = run_cli({"bench", "-m", kModel, "--prompt-tokens", "12", "--gen-tokens", "8",
                    "--context", "40", "--threads", "2", "--json"},
                   dir.path(), 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
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
}

}  // namespace
}  // namespace inkling
