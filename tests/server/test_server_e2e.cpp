// `inkling serve` driven over loopback HTTP as a client would: scripted reasoning / tool-call
// outputs (--test-script) checked non-streaming and streaming, every error status, concurrent
// clients against solo runs, disconnect mid-stream freeing the slot, prefix reuse and metrics.
#include <httplib.h>

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <regex>
#include <thread>

#include <nlohmann/json.hpp>

#include "server/sse.h"
#include "server_process.h"

namespace inkling {
namespace {

using nlohmann::json;
using testing::ServerProcess;

const char* kKey = "test-key";

// Scripted outputs, chosen by a substring of the rendered prompt.
std::string write_script() {
  const std::string path = INKLING_BINARY_DIR "/server_test_script.json";
  json s = json::array();
  s.push_back({{"when", "weather"},
               {"output",
                "<|content_thinking|>Let me check.<|end_message|><|message_model|>get_weather"
                "<|content_invoke_tool_json|>{\"name\":\"get_weather\",\"args\":{\"city\":"
                "\"Paris\",\"days\":3}}<|end_message|><|content_model_end_sampling|>"}});
  s.push_back(
      {{"when", "poem"},
       {"output",
        "<|content_thinking|>Think \xC3\xA9.<|end_message|><|message_model|><|content_text|>"
        "Roses are red \xF0\x9F\x8C\xB9 violets STOP are blue<|end_message|>"
        "<|content_model_end_sampling|>"}});
  testing::write_file_atomically(path, s.dump());
  return path;
}

class ServerE2E : public testing::SharedServerTest<ServerE2E> {
 public:
  static std::vector<std::string> server_args() {
    return {"--parallel", "4",   "--api-key",     kKey,
            "--ctx-size", "512", "--test-script", write_script()};
  }

 protected:
  static httplib::Client client(bool auth = true) {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(120, 0);
    if (auth) c.set_default_headers({{"Authorization", std::string("Bearer ") + kKey}});
    return c;
  }
  static json post(const std::string& path, const json& body, int* status = nullptr) {
    auto c = client();
    auto r = c.Post(path.c_str(), body.dump(), "application/json");
    if (!r) return json();
    if (status) *status = r->status;
    return json::parse(r->body, nullptr, false);
  }
  static double metric(const std::string& name) {
    auto c = client();
    auto r = c.Get("/metrics");
    if (!r) return -1;
    std::smatch m;
    const std::regex re("\n" + name + " ([0-9.eE+-]+)");
    return std::regex_search(r->body, m, re) ? std::stod(m[1]) : -1;
  }
};

// POST whose response body is handed to `receive` as it arrives (false = hang up).
httplib::Result post_stream(httplib::Client& c, const std::string& path, const json& body,
                            std::function<bool()> receive) {
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [receive](const char*, size_t, uint64_t, uint64_t) { return receive(); };
  return c.send(req);
}

json user(const std::string& text) {
  return json::array({{{"role", "user"}, {"content", text}}});
}

TEST_F(ServerE2E, SmallRoutes) {
  auto c = client();
  auto h = client(false).Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto m = c.Get("/v1/models");
  ASSERT_TRUE(m);
  EXPECT_EQ(json::parse(m->body)["data"][0]["id"], "tiny_chat_model");
  int st = 0;
  json t = post("/tokenize", {{"content", "Hello world<|end_message|>"}}, &st);
  EXPECT_EQ(st, 200);
  EXPECT_EQ(t["tokens"].back(), 200010);
  json d = post("/detokenize", {{"tokens", t["tokens"]}}, &st);
  EXPECT_EQ(d["content"], "Hello world<|end_message|>");
  json tc = post("/tokenize", {{"messages", user("Hi")}}, &st);
  EXPECT_EQ(st, 200);
  EXPECT_EQ(tc["tokens"].back(), 200001);  // the generation prompt <|message_model|>
}

TEST_F(ServerE2E, ChatToolCallNonStreaming) {
  int st = 0;
  json r = post(
      "/v1/chat/completions",
      {{"messages", user("weather in Paris?")},
       {"tools",
        json::array(
            {{{"type", "function"},
              {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}}})}},
      &st);
  ASSERT_EQ(st, 200) << r.dump();
  const json& ch = r["choices"][0];
  EXPECT_EQ(ch["finish_reason"], "tool_calls");
  EXPECT_TRUE(ch["message"]["content"].is_null());
  EXPECT_EQ(ch["message"]["reasoning_content"], "Let me check.");
  const json& call = ch["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(call["function"]["arguments"].get<std::string>()),
            json({{"city", "Paris"}, {"days", 3}}));
  EXPECT_TRUE(call["id"].get<std::string>().rfind("call_", 0) == 0);
  EXPECT_EQ(r["usage"]["completion_tokens"], 28);
  EXPECT_GT(r["usage"]["completion_tokens_details"]["reasoning_tokens"], 0);
  EXPECT_EQ(r["usage"]["total_tokens"],
            r["usage"]["prompt_tokens"].get<int>() + r["usage"]["completion_tokens"].get<int>());
}

TEST_F(ServerE2E, ChatStreamingDeltas) {
  auto c = client();
  json body = {{"messages", user("write a poem")},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_NE(r->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  auto events = server::parse_sse(r->body);
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string reasoning, content, finish;
  json usage;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    json e = json::parse(events[i]);
    EXPECT_EQ(e["object"], "chat.completion.chunk");
    if (e["choices"].empty()) {
      usage = e["usage"];
      continue;
    }
    const json& d = e["choices"][0]["delta"];
    if (i == 0) {
      EXPECT_EQ(d["role"], "assistant");
    }
    reasoning += d.value("reasoning_content", "");
    const std::string piece = d.value("content", "");
    EXPECT_EQ(piece.find("<|"), std::string::npos);
    content += piece;
    if (!e["choices"][0]["finish_reason"].is_null()) finish = e["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(reasoning, "Think \xC3\xA9.");
  EXPECT_EQ(content, "Roses are red \xF0\x9F\x8C\xB9 violets STOP are blue");
  EXPECT_EQ(finish, "stop");
  EXPECT_EQ(usage["completion_tokens"], 20);
}

TEST_F(ServerE2E, ToolCallStreamingAndStopStrings) {
  auto c = client();
  json body = {{"messages", user("weather?")}, {"stream", true}};
  auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  std::string args, name, id, finish;
  int name_deltas = 0;
  for (const auto& ev : server::parse_sse(r->body)) {
    if (ev == "[DONE]") break;
    json e = json::parse(ev);
    const json& d = e["choices"][0]["delta"];
    if (d.contains("tool_calls")) {
      const json& t = d["tool_calls"][0];
      EXPECT_EQ(t["index"], 0);
      if (t.contains("id")) {
        ++name_deltas;
        id = t["id"];
        name = t["function"]["name"];
      }
      args += t["function"].value("arguments", "");
    }
    if (!e["choices"][0]["finish_reason"].is_null()) finish = e["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(name_deltas, 1);
  EXPECT_EQ(name, "get_weather");
  EXPECT_EQ(json::parse(args), json({{"city", "Paris"}, {"days", 3}}));
  EXPECT_EQ(finish, "tool_calls");

  json s = post("/v1/chat/completions", {{"messages", user("a poem")}, {"stop", {"STOP"}}});
  EXPECT_EQ(s["choices"][0]["message"]["content"], "Roses are red \xF0\x9F\x8C\xB9 violets ");
  EXPECT_EQ(s["choices"][0]["finish_reason"], "stop");
}

TEST_F(ServerE2E, ErrorStatuses) {
  auto c = client();
  auto expect_error = [&](const httplib::Result& r, int status, const std::string& what) {
    ASSERT_TRUE(r) << what;
    EXPECT_EQ(r->status, status) << what << ": " << r->body;
    json e = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(e.contains("error")) << what << ": " << r->body;
    EXPECT_TRUE(e["error"]["message"].is_string()) << what;
    EXPECT_TRUE(e["error"].contains("type") && e["error"].contains("param") &&
                e["error"].contains("code"))
        << what;
  };
  const std::string path = "/v1/chat/completions";
  expect_error(c.Post(path.c_str(), "{nope", "application/json"), 400, "invalid json");
  expect_error(c.Post(path.c_str(), R"({"messages":[{"role":"user","content":"x"}],"top_p":"a"})",
                      "application/json"),
               400, "wrong type");
  expect_error(
      c.Post(path.c_str(), R"({"messages":[{"role":"wizard","content":"x"}]})", "application/json"),
      400, "unknown role");
  expect_error(c.Post(path.c_str(),
                      R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function",
                          "function":{"name":"f","parameters":[]}}]})",
                      "application/json"),
               400, "bad tool schema");
  expect_error(c.Post(path.c_str(),
                      R"({"messages":[{"role":"user","content":"x"}],"reasoning_effort":"xhigh"})",
                      "application/json"),
               400, "template error");
  expect_error(c.Post(path.c_str(), R"({"messages":[{"role":"user","content":"x"}],"n":17})",
                      "application/json"),
               400, "n > 16");
  // Longer than --ctx-size 512: the message names both lengths.
  std::string longtext;
  for (int i = 0; i < 400; ++i) longtext += " word" + std::to_string(i);
  auto r = c.Post(path.c_str(), json({{"messages", user(longtext)}}).dump(), "application/json");
  expect_error(r, 400, "too long");
  EXPECT_NE(r->body.find("512"), std::string::npos);
  EXPECT_NE(r->body.find("context_length_exceeded"), std::string::npos);
  expect_error(c.Get("/v1/nothing"), 404, "unknown route");
  expect_error(c.Post("/v1/embeddings", "{}", "application/json"), 404, "unknown POST route");
  expect_error(client(false).Post(path.c_str(), "{}", "application/json"), 401, "no key");
  httplib::Client bad("127.0.0.1", server_->port());
  bad.set_default_headers({{"Authorization", "Bearer wrong"}});
  expect_error(bad.Get("/v1/models"), 401, "bad key");
  // Anthropic clients send `x-api-key: KEY`.
  httplib::Client xkey("127.0.0.1", server_->port());
  xkey.set_default_headers({{"x-api-key", kKey}});
  auto xr = xkey.Get("/v1/models");
  ASSERT_TRUE(xr);
  EXPECT_EQ(xr->status, 200);
  xkey.set_default_headers({{"x-api-key", "wrong"}});
  expect_error(xkey.Get("/v1/models"), 401, "bad x-api-key");
  const std::string huge(9u << 20, ' ');
  expect_error(c.Post(path.c_str(), huge, "application/json"), 413, "body > 8 MiB");
  // The server still works after all of that.
  int st = 0;
  post(path, {{"messages", user("hi")}, {"max_tokens", 2}}, &st);
  EXPECT_EQ(st, 200);
}

TEST_F(ServerE2E, ConcurrentClientsMatchSoloRuns) {
  const int kClients = 4;
  auto body = [](int i) {
    return json{{"prompt", "Story number " + std::to_string(i) + " begins"},
                {"max_tokens", 24},
                {"temperature", 0},
                {"ignore_eos", true}};
  };
  std::vector<std::string> solo(kClients), together(kClients);
  for (int i = 0; i < kClients; ++i)
    solo[i] = post("/v1/completions", body(i))["choices"][0]["text"];
  std::vector<std::thread> th;
  std::atomic<int> ok{0};
  for (int i = 0; i < kClients; ++i)
    th.emplace_back([&, i] {
      int st = 0;
      json r = post("/v1/completions", body(i), &st);
      if (st == 200 && r["usage"]["completion_tokens"] == 24) ++ok;
      together[i] = r["choices"][0]["text"];
    });
  for (auto& t : th) t.join();
  EXPECT_EQ(ok.load(), kClients);
  for (int i = 0; i < kClients; ++i) EXPECT_EQ(together[i], solo[i]) << "client " << i;
}

TEST_F(ServerE2E, DisconnectMidStreamFreesTheSlot) {
  const double cancelled0 = metric("inkling_requests_cancelled_total");
  auto c = client();
  int chunks = 0;
  json body = {
      {"prompt", "never ending"}, {"max_tokens", 100000}, {"ignore_eos", true}, {"stream", true}};
  auto r = post_stream(c, "/v1/completions", body, [&] { return ++chunks < 3; });
  EXPECT_FALSE(r);  // we hung up
  double active = -1;
  for (int i = 0; i < 100; ++i) {
    active = metric("inkling_slots_active");
    if (active == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(active, 0);
  EXPECT_GT(metric("inkling_requests_cancelled_total"), cancelled0);
}

TEST_F(ServerE2E, MultiTurnReusesPrefixAndMetricsMove) {
  const double tokens0 = metric("inkling_completion_tokens_total");
  json msgs = user("Tell me about the history of the long river valley and its people");
  json r1 = post("/v1/chat/completions", {{"messages", msgs}, {"max_tokens", 8}});
  ASSERT_TRUE(r1.contains("choices")) << r1.dump();
  msgs.push_back({{"role", "assistant"}, {"content", "It is long."}});
  msgs.push_back({{"role", "user"}, {"content", "And then?"}});
  json r2 = post("/v1/chat/completions", {{"messages", msgs}, {"max_tokens", 4}});
  EXPECT_GT(r2["usage"]["prompt_tokens_details"]["cached_tokens"], 10) << r2.dump();
  // Regenerating the same turn reuses all but the last prompt token.
  json r3 = post("/v1/chat/completions", {{"messages", msgs}, {"max_tokens", 4}});
  EXPECT_EQ(r3["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(),
            r3["usage"]["prompt_tokens"].get<int>() - 1);
  EXPECT_GT(metric("inkling_completion_tokens_total"), tokens0);
  EXPECT_GT(metric("inkling_prefix_cache_hits_total"), 0);
  EXPECT_GT(metric("inkling_steps_total"), 0);
}

TEST(ServerQueue, FullQueueAnswers503) {
  const std::string skip = testing::ensure_tiny_model();
  if (!skip.empty()) GTEST_SKIP() << skip;
  ServerProcess srv({"--parallel", "1", "--queue-size", "0"});
  ASSERT_GT(srv.port(), 0);
  std::atomic<bool> started{false}, stop{false};
  std::thread hog([&] {
    httplib::Client c("127.0.0.1", srv.port());
    json body = {{"prompt", "hog"}, {"max_tokens", 100000}, {"ignore_eos", true}, {"stream", true}};
    post_stream(c, "/v1/completions", body, [&] {
      started = true;
      return !stop.load();
    });
  });
  for (int i = 0; i < 400 && !started; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  ASSERT_TRUE(started);
  httplib::Client c("127.0.0.1", srv.port());
  auto r = c.Post("/v1/completions", R"({"prompt":"x","max_tokens":1})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_NE(r->body.find("queue_full"), std::string::npos);
  stop = true;
  hog.join();
  // The hog's slot is free again: a request goes through.
  bool ok = false;
  for (int i = 0; i < 100 && !ok; ++i) {
    auto r2 = c.Post("/v1/completions", R"({"prompt":"x","max_tokens":1})", "application/json");
    ok = r2 && r2->status == 200;
    if (!ok) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(ok);
  EXPECT_EQ(srv.stop(), 0);
}

}  // namespace
}  // namespace inkling
