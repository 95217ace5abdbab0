// `inkling serve --draft K` on the demo model (two trained MTP depths): speculative slots decode
// together (one verify pass per round over every slot), their answers at temperature 0 equal a
// plain server's, a request asking for logprobs still gets them (it decodes plainly), and
// /metrics reports rounds, tokens per round and acceptance per draft position; a speculative
// conversation's next turn restores its prefix (trunk and depths) from the prefix cache, from the
// end of the previous turn too.
#include <httplib.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "client_helpers.h"
#include "server_process.h"

namespace inkling {
namespace {

using nlohmann::json;

const std::string kDraftDemo = std::string(INKLING_SOURCE_DIR) + "/models/inkling-demo";

// A greedy chat completion of `messages` (status 200 expected).
json ask_messages(int port, const json& messages, int max_tokens, bool logprobs = false) {
  json body = {{"model", "inkling-demo"},
               {"messages", messages},
               {"temperature", 0},
               {"max_tokens", max_tokens},
               {"reasoning_effort", "none"}};
  if (logprobs) body["logprobs"] = true;
  int status = 0;
  json r = testing::post_json(port, "/v1/chat/completions", body, &status);
  EXPECT_EQ(status, 200) << r.dump();
  return r;
}

json ask(int port, const std::string& text, bool logprobs = false) {
  return ask_messages(port, json::array({{{"role", "user"}, {"content", text}}}), 80, logprobs);
}

TEST(ServerDraft, SameAnswersAsPlainAndAcceptanceInMetrics) {
  if (!std::filesystem::exists(kDraftDemo + "/model.safetensors")) GTEST_SKIP() << "no demo model";
  testing::ServerProcess plain({"--ctx-size", "1024", "--parallel", "3"}, kDraftDemo);
  testing::ServerProcess spec({"--ctx-size", "1024", "--parallel", "3", "--draft", "2"},
                              kDraftDemo);
  ASSERT_GT(plain.port(), 0);
  ASSERT_GT(spec.port(), 0);
  const std::vector<std::string> asks = {"Give me a verse about light", "Tell me a fortune",
                                         "What does hacker mean?"};
  std::vector<std::string> want;
  for (const auto& a : asks) want.push_back(ask(plain.port(), a)["choices"][0]["message"].dump());
  // The three at once: their rounds share verify passes.
  std::vector<std::string> got(asks.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < asks.size(); ++i)
    threads.emplace_back(
        [&, i] { got[i] = ask(spec.port(), asks[i])["choices"][0]["message"].dump(); });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < asks.size(); ++i) EXPECT_EQ(got[i], want[i]) << asks[i];
  // logprobs: decoded plainly on the same server.
  const json lp = ask(spec.port(), asks[0], true);
  EXPECT_EQ(lp["choices"][0]["message"].dump(), want[0]);
  EXPECT_TRUE(lp["choices"][0]["logprobs"].is_object()) << lp.dump();

  EXPECT_GT(testing::metric_value(spec.port(), "inkling_speculative_rounds_total"), 0);
  EXPECT_GT(testing::metric_value(spec.port(), "inkling_speculative_tokens_per_round"), 1.0);
  EXPECT_GT(
      testing::metric_value(spec.port(), "inkling_speculative_acceptance\\{position=\"0\"\\}"),
      0.0);
  EXPECT_EQ(testing::metric_value(plain.port(), "inkling_speculative_rounds_total"), 0);
  EXPECT_EQ(spec.stop(), 0);
  EXPECT_EQ(plain.stop(), 0);
}

// A speculative request's prompt runs in the batched steps and snapshots its decoder with the
// trunk at the turn boundaries, so the next turn of the conversation (also speculative) restores
// both and prefills only the rest; the answers stay a plain server's.
TEST(ServerDraft, SpeculativeTurnsReuseThePrefixCache) {
  if (!std::filesystem::exists(kDraftDemo + "/model.safetensors")) GTEST_SKIP() << "no demo model";
  testing::ServerProcess plain({"--ctx-size", "1024", "--parallel", "2"}, kDraftDemo);
  testing::ServerProcess spec({"--ctx-size", "1024", "--parallel", "2", "--draft", "2"},
                              kDraftDemo);
  ASSERT_GT(plain.port(), 0);
  ASSERT_GT(spec.port(), 0);
  json msgs = json::array(
      {{{"role", "system"},
        {"content", "You are a careful storyteller who answers in verse about light and rivers."}},
       {{"role", "user"}, {"content", "Give me a verse about light"}}});
  auto chat = [&](int port) { return ask_messages(port, msgs, 40); };
  const json a1 = chat(spec.port());
  EXPECT_EQ(a1["choices"][0]["message"], chat(plain.port())["choices"][0]["message"]);
  msgs.push_back({{"role", "assistant"}, {"content", "Light on the water."}});
  msgs.push_back({{"role", "user"}, {"content", "Tell me a fortune"}});
  const json a2 = chat(spec.port());
  EXPECT_GT(a2["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), 10) << a2.dump();
  EXPECT_EQ(a2["choices"][0]["message"], chat(plain.port())["choices"][0]["message"]);
  EXPECT_GT(testing::metric_value(spec.port(), "inkling_prefix_cache_hits_total"), 0);
  EXPECT_GT(testing::metric_value(spec.port(), "inkling_speculative_rounds_total"), 0);
  EXPECT_GT(
      testing::metric_value(spec.port(), "inkling_speculative_acceptance\\{position=\"0\"\\}"),
      0.0);
  EXPECT_EQ(spec.stop(), 0);
  EXPECT_EQ(plain.stop(), 0);
}

// The end of a speculative turn is cached too: its last round may have run past the stop (here
// max_tokens, at several lengths so that some end inside a round's accepted drafts), and the
// decoder rolls the session back to what the answer consumed. A request that continues the
// answer reuses the prompt and the answer, and its own answer is still a plain server's.
TEST(ServerDraft, SpeculativeTurnEndsAreCached) {
  if (!std::filesystem::exists(kDraftDemo + "/model.safetensors")) GTEST_SKIP() << "no demo model";
  testing::ServerProcess plain({"--ctx-size", "1024", "--parallel", "1"}, kDraftDemo);
  testing::ServerProcess spec({"--ctx-size", "1024", "--parallel", "1", "--draft", "2"},
                              kDraftDemo);
  ASSERT_GT(plain.port(), 0);
  ASSERT_GT(spec.port(), 0);
  auto complete = [](int port, const std::string& prompt, int max_tokens) {
    json body = {{"model", "inkling-demo"},
                 {"prompt", prompt},
                 {"temperature", 0},
                 {"max_tokens", max_tokens}};
    int status = 0;
    json r = testing::post_json(port, "/v1/completions", body, &status);
    EXPECT_EQ(status, 200) << r.dump();
    return r;
  };
  const std::string start = "Once upon a time there was a small river that";
  int longer = 0;
  for (int m : {17, 18, 19, 20}) {
    const json a = complete(spec.port(), start, m);
    const std::string text = a["choices"][0]["text"].get<std::string>();
    EXPECT_EQ(text, complete(plain.port(), start, m)["choices"][0]["text"].get<std::string>());
    const std::string next = start + text + " And then";
    const json b = complete(spec.port(), next, 12);
    EXPECT_EQ(b["choices"][0]["text"], complete(plain.port(), next, 12)["choices"][0]["text"]) << m;
    // More than the first prompt came from the cache: the answer's tokens too.
    const int64_t cached = b["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
    longer += cached > a["usage"]["prompt_tokens"].get<int64_t>();
    EXPECT_GE(cached, a["usage"]["prompt_tokens"].get<int64_t>() - 1) << b.dump();
  }
  EXPECT_GE(longer, 3);
  EXPECT_EQ(spec.stop(), 0);
  EXPECT_EQ(plain.stop(), 0);
}

TEST(ServerDraft, BadDraftCountFailsAtStartup) {
  if (!std::filesystem::exists(kDraftDemo + "/model.safetensors")) GTEST_SKIP() << "no demo model";
  const int rc =
      testing::spawn_wait({testing::kInkling, "serve", "-m", kDraftDemo, "--draft", "3"});
  EXPECT_NE(rc, 0);
}

}  // namespace
}  // namespace inkling
