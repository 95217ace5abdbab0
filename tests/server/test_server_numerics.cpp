// `inkling serve --numerics`: the mode the engine was loaded with is reported on /v1/models (and
// /v1/models/{id}) beside max_model_len, and on /metrics as the labels of inkling_engine_info;
// fast by default. A bad value fails before the model loads.
#include <httplib.h>

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "client_helpers.h"
#include "server_process.h"

namespace inkling {
namespace {

using nlohmann::json;
using testing::ServerProcess;

// The model entry of /v1/models and the /metrics text of a server started with `extra`.
void expect_reports(const std::vector<std::string>& extra, const std::string& numerics,
                    const std::string& kv_type) {
  SCOPED_TRACE(numerics + " / " + kv_type);
  ServerProcess srv(extra);
  ASSERT_GT(srv.port(), 0) << "server did not start";
  auto c = testing::local_client(srv.port(), 30);
  auto m = c.Get("/v1/models");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->status, 200);
  const json model = json::parse(m->body)["data"][0];
  EXPECT_EQ(model["numerics"], numerics) << m->body;
  EXPECT_EQ(model["kv_type"], kv_type) << m->body;
  auto one = c.Get(("/v1/models/" + model["id"].get<std::string>()).c_str());
  ASSERT_TRUE(one);
  EXPECT_EQ(json::parse(one->body)["numerics"], numerics) << one->body;
  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("# TYPE inkling_engine_info gauge\ninkling_engine_info{numerics=\"" +
                               numerics + "\",kv_type=\"" + kv_type + "\"} 1\n"),
            std::string::npos)
      << metrics->body;
  // The engine runs in that mode: a completion is answered.
  int st = 0;
  json r = testing::post_json(srv.port(), "/v1/completions",
                              {{"prompt", "Hello"}, {"max_tokens", 2}, {"temperature", 0}}, &st);
  EXPECT_EQ(st, 200) << r.dump();
  EXPECT_EQ(srv.stop(), 0);
}

class ServerNumerics : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string skip = testing::ensure_tiny_model();
    if (!skip.empty()) GTEST_SKIP() << skip;
  }
};

TEST_F(ServerNumerics, DefaultIsFastOnModelsAndMetrics) {
  expect_reports({}, "fast", "f32");
}

TEST_F(ServerNumerics, ExactOnModelsAndMetrics) {
  expect_reports({"--numerics", "exact", "--kv-type", "bf16"}, "exact", "bf16");
}

TEST_F(ServerNumerics, BadValueFailsBeforeTheLoad) {
  // No server comes up: the child exits 2 at once (its stdout never says "listening").
  ServerProcess srv({"--numerics", "fastest"}, INKLING_BINARY_DIR "/no_such_model");
  EXPECT_EQ(srv.port(), 0);
  EXPECT_EQ(srv.stop(), 2);
}

}  // namespace
}  // namespace inkling
