// `inkling serve` under many clients, on 127.0.0.1 with the tiny real-vocabulary model: 16
// concurrent clients decoded in one batch give exactly their solo answers; a bounded load run
// (500 mixed requests from 8 threads) has no unexpected status and no resident-memory growth; a
// NON-streaming client that hangs up frees its slot at once.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "client_helpers.h"
#include "server_process.h"

namespace inkling {
namespace {

using nlohmann::json;
using testing::metric_value;
using testing::post_json;
using testing::ServerProcess;
using Clock = std::chrono::steady_clock;

using testing::seconds_since;

json user_turn(const std::string& text) {
  return json::array({{{"role", "user"}, {"content", text}}});
}

// Runs fn(i) for i in [0, n) on `threads` threads; each index exactly once.
template <typename Fn>
void run_parallel(int n, int threads, Fn fn) {
  std::atomic<int> next{0};
  std::vector<std::thread> th;
  for (int t = 0; t < threads; ++t)
    th.emplace_back([&] {
      for (int i; (i = next.fetch_add(1)) < n;) fn(i);
    });
  for (auto& t : th) t.join();
}

// What a generation returned, token by token (chat logprobs / completion tokens) plus text.
struct Answer {
  int status = -1;
  std::string text, finish;
  std::vector<std::string> tokens;
  int64_t completion_tokens = -1;
  bool operator==(const Answer&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Answer& a) {
  os << a.status << " " << a.finish << " " << a.completion_tokens << " [";
  for (const auto& t : a.tokens) os << json(t).dump() << ",";
  return os << "] " << json(a.text).dump();
}

// Polls /metrics until `name` equals `want` or `limit_s` passed; returns the last value.
double wait_metric(int port, const std::string& name, double want, double limit_s) {
  const auto t0 = Clock::now();
  double v = metric_value(port, name);
  while (v != want && seconds_since(t0) < limit_s) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    v = metric_value(port, name);
  }
  return v;
}

TEST(ServerLoad, SixteenConcurrentClientsMatchSoloRuns) {
  const std::string skip = testing::ensure_tiny_model();
  if (!skip.empty()) GTEST_SKIP() << skip;
  ServerProcess srv({"--parallel", "16", "--ctx-size", "512"});
  ASSERT_GT(srv.port(), 0) << "server did not start";
  const int port = srv.port();
  static constexpr int kClients = 16, kTokens = 16;
  // Every request different: chat and completions, prompts of different lengths (prefilled in
  // the same steps), greedy decoding, no early stop.
  auto request = [](int i, std::string* path) {
    std::string words;
    for (int w = 0; w < 1 + 3 * (i % 5); ++w) words += " word" + std::to_string(w * 7 + i);
    json b = {{"max_tokens", kTokens}, {"temperature", 0}, {"ignore_eos", true}};
    if (i % 2 == 0) {
      *path = "/v1/completions";
      b["prompt"] = "Story " + std::to_string(i) + words;
      b["logprobs"] = 1;
    } else {
      *path = "/v1/chat/completions";
      b["messages"] = user_turn("Client " + std::to_string(i) + words);
      b["logprobs"] = true;
    }
    return b;
  };
  auto ask = [&](int i) {
    std::string path;
    const json b = request(i, &path);
    Answer a;
    const json r = post_json(port, path, b, &a.status);
    if (a.status != 200) {
      a.text = r.dump();
      return a;
    }
    const json& ch = r["choices"][0];
    a.finish = ch["finish_reason"];
    a.completion_tokens = r["usage"]["completion_tokens"];
    if (ch.contains("text")) {
      a.text = ch["text"];
      for (const auto& t : ch["logprobs"]["tokens"]) a.tokens.push_back(t);
    } else {
      a.text = ch["message"].dump();
      for (const auto& t : ch["logprobs"]["content"]) a.tokens.push_back(t["bytes"].dump());
    }
    return a;
  };
  std::vector<Answer> solo(kClients), together(kClients);
  for (int i = 0; i < kClients; ++i) solo[i] = ask(i);
  const double steps0 = metric_value(port, "inkling_steps_total");
  std::atomic<int> ready{0};
  std::vector<std::thread> th;
  for (int i = 0; i < kClients; ++i)
    th.emplace_back([&, i] {
      ++ready;
      while (ready.load() < kClients) std::this_thread::yield();
      together[i] = ask(i);
    });
  for (auto& t : th) t.join();
  const double steps = metric_value(port, "inkling_steps_total") - steps0;
  for (int i = 0; i < kClients; ++i) {
    EXPECT_EQ(solo[i].status, 200) << "client " << i << ": " << solo[i].text;
    // Completions run all 16 tokens; a chat answer may end its turn earlier.
    EXPECT_EQ(solo[i].tokens.size(), i % 2 == 0 ? size_t(kTokens) : solo[i].tokens.size());
    EXPECT_GE(solo[i].tokens.size(), 1u) << "client " << i;
    EXPECT_EQ(together[i], solo[i]) << "client " << i;
  }
  // They really were decoded together: one at a time would take >= 16 * 16 steps.
  EXPECT_LT(steps, kClients * kTokens / 2) << "steps for 16 concurrent requests";
  EXPECT_EQ(wait_metric(port, "inkling_slots_active", 0, 5), 0);
  EXPECT_EQ(srv.stop(), 0);
}

TEST(ServerLoad, FiveHundredMixedRequestsNoErrorsNoGrowth) {
  const std::string skip = testing::ensure_tiny_model();
  if (!skip.empty()) GTEST_SKIP() << skip;
  ServerProcess srv({"--parallel", "4", "--ctx-size", "512", "--prefix-cache-mb", "2"});
  ASSERT_GT(srv.port(), 0) << "server did not start";
  const int port = srv.port();
  std::mutex mu;
  std::vector<std::string> failures;
  auto fail = [&](int i, const std::string& what) {
    std::lock_guard<std::mutex> lk(mu);
    if (failures.size() < 20) failures.push_back("request " + std::to_string(i) + ": " + what);
  };
  // Request i: 10 kinds, prompts that share prefixes (prefix cache churn) and differ.
  auto one = [&](int i) {
    const std::string topic = "topic " + std::to_string(i % 37) + " in round " + std::to_string(i);
    std::string path = "/v1/chat/completions", body;
    int expect = 200;
    bool sse = false;
    switch (i % 10) {
      case 0:
      case 1:
      case 2:
        body = json({{"messages", user_turn("Tell me about " + topic)},
                     {"max_tokens", 4},
                     {"temperature", 0}})
                   .dump();
        break;
      case 3:
      case 4:
        sse = true;
        body = json({{"messages", user_turn("Stream about " + topic)},
                     {"max_tokens", 4},
                     {"temperature", 0},
                     {"stream", true},
                     {"stream_options", {{"include_usage", true}}}})
                   .dump();
        break;
      case 5:  // sampled (the rest is greedy: sampling all 201k logits is the slow part here)
      case 6:
        path = "/v1/completions";
        body = json({{"prompt", "Once " + topic},
                     {"max_tokens", 4},
                     {"temperature", i % 10 == 5 ? 0.8 : 0.0},
                     {"seed", i}})
                   .dump();
        break;
      case 7:
        sse = true;
        path = "/v1/completions";
        body = json({{"prompt", "Streamed " + topic},
                     {"max_tokens", 4},
                     {"temperature", 0},
                     {"stream", true}})
                   .dump();
        break;
      case 8:
        expect = 400;
        body = i % 20 == 8 ? "{broken" : R"({"messages":"no"})";
        break;
      default:
        expect = 404;
        path = "/v1/missing";
        break;
    }
    auto c = testing::local_client(port, 30);
    auto r = expect == 404 ? c.Get(path.c_str()) : c.Post(path.c_str(), body, "application/json");
    if (!r) return fail(i, "no response: " + httplib::to_string(r.error()));
    if (r->status != expect)
      return fail(i, "status " + std::to_string(r->status) + " (expected " +
                         std::to_string(expect) + "): " + r->body.substr(0, 300));
    if (expect != 200) {
      if (!json::parse(r->body, nullptr, false).contains("error")) fail(i, "no error object");
    } else if (sse) {
      if (r->body.find("data: [DONE]") == std::string::npos) fail(i, "stream without [DONE]");
    } else if (!json::parse(r->body, nullptr, false).contains("choices")) {
      fail(i, "no choices: " + r->body.substr(0, 300));
    }
  };
  // Resident memory after each 100 requests: the first ones warm up (allocator arenas of the
  // HTTP threads, the prefix cache filling to its bound); after that it must stay flat.
  const auto t0 = Clock::now();
  std::vector<long> rss;
  for (int k = 0; k < 5; ++k) {
    run_parallel(100, 8, [&](int i) { one(100 * k + i); });
    rss.push_back(srv.rss_kib());
  }
  const double took = seconds_since(t0);
  for (const auto& f : failures) ADD_FAILURE() << f;
  std::printf("load run: 500 requests in %.1f s; VmRSS KiB after each 100:", took);
  for (long r : rss) std::printf(" %ld", r);
  std::printf("\n");
  ASSERT_GT(rss[0], 0);
  EXPECT_LT(rss[4] - rss[0], 20 * 1024) << "resident memory grew by more than 20 MiB";
  EXPECT_LT(rss[4] - rss[2], 4 * 1024) << "resident memory still growing after 300 requests";
  EXPECT_LT(took, 60) << "load run too slow";
  // A job cancelled when its answer ended (e.g. the parser saw the end of the turn) frees its
  // slot at the next scheduler step, just after its client already has the answer.
  EXPECT_EQ(wait_metric(port, "inkling_slots_active", 0, 5), 0);
  EXPECT_EQ(metric_value(port, "inkling_queue_depth"), 0);
  EXPECT_LE(metric_value(port, "inkling_prefix_cache_bytes"), 2 << 20);
  EXPECT_EQ(srv.stop(), 0);
}

// A raw client: connects, sends one request and returns the socket (-1 on failure).
int send_raw(int port, const std::string& path, const std::string& body) {
  const std::string req = "POST " + path +
                          " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          "Content-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
  const int fd = testing::connect_local(port);
  if (fd >= 0 && send(fd, req.data(), req.size(), MSG_NOSIGNAL) != ssize_t(req.size())) {
    close(fd);
    return -1;
  }
  return fd;
}

TEST(ServerLoad, NonStreamingClientHangingUpFreesItsSlot) {
  const std::string skip = testing::ensure_tiny_model();
  if (!skip.empty()) GTEST_SKIP() << skip;
  // One slot and a context long enough that the abandoned generation would run for minutes.
  ServerProcess srv({"--parallel", "1", "--ctx-size", "32768"});
  ASSERT_GT(srv.port(), 0) << "server did not start";
  const int port = srv.port();
  const std::pair<const char*, json> requests[] = {
      {"/v1/completions",
       {{"prompt", "never ending"}, {"max_tokens", 30000}, {"ignore_eos", true}}},
      {"/v1/chat/completions",
       {{"messages", user_turn("never ending")}, {"max_tokens", 30000}, {"ignore_eos", true}}}};
  for (const auto& [path, body] : requests) {
    const double cancelled0 = metric_value(port, "inkling_requests_cancelled_total");
    const double tokens0 = metric_value(port, "inkling_completion_tokens_total");
    const int fd = send_raw(port, path, body.dump());
    ASSERT_GE(fd, 0);
    ASSERT_EQ(wait_metric(port, "inkling_slots_active", 1, 20), 1) << path << " never started";
    // Let it generate a little, then hang up without reading anything.
    const auto t_gen = Clock::now();
    while (metric_value(port, "inkling_completion_tokens_total") < tokens0 + 8 &&
           seconds_since(t_gen) < 20)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const auto t_close = Clock::now();
    close(fd);
    EXPECT_EQ(wait_metric(port, "inkling_slots_active", 0, 5), 0) << path << ": slot still busy";
    const double freed_s = seconds_since(t_close);
    EXPECT_EQ(metric_value(port, "inkling_requests_cancelled_total"), cancelled0 + 1) << path;
    // The only slot serves the next request promptly.
    const auto t_next = Clock::now();
    auto next = testing::local_client(port, 10).Post(
        "/v1/completions", R"({"prompt":"next","max_tokens":2})", "application/json");
    EXPECT_TRUE(next && next->status == 200) << path;
    EXPECT_LT(seconds_since(t_next), 5) << path;
    std::printf("%s: slot free %.3f s after the client closed\n", path, freed_s);
  }
  EXPECT_EQ(srv.stop(), 0);
}

}  // namespace
}  // namespace inkling
