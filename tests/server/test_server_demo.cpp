// `inkling serve` on the shipped demo model (models/inkling-demo): an OpenAI chat completion at
// temperature 0 answers "Give me a verse about light" with a heading naming light and a reference,
// then a verse, without a
// reasoning block at effort none and with one about light at effort high, and the streamed answer
// equals the non-streamed one.
#include <httplib.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "../common/demo_answers.h"
#include "client_helpers.h"
#include "server_process.h"

namespace inkling {
namespace {

using nlohmann::json;

const std::string kDemo = std::string(INKLING_SOURCE_DIR) + "/models/inkling-demo";

using testing::lower;

class ServerDemo : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(kDemo + "/model.safetensors")) return;
    server_ = new testing::ServerProcess({"--ctx-size", "1024"}, kDemo);
  }
  static void TearDownTestSuite() {
    if (server_) {
      EXPECT_EQ(server_->stop(), 0) << "server did not shut down cleanly";
    }
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (!server_) GTEST_SKIP() << "no demo model";
    ASSERT_GT(server_->port(), 0) << "server did not start";
  }
  static json ask(const std::string& effort, bool stream = false) {
    json body = {
        {"model", "inkling-demo"},
        {"messages", json::array({{{"role", "user"}, {"content", "Give me a verse about light"}}})},
        {"temperature", 0},
        {"max_tokens", 160},
        {"reasoning_effort", effort}};
    if (stream) body["stream"] = true;
    int status = 0;
    if (!stream) {
      json r = testing::post_json(server_->port(), "/v1/chat/completions", body, &status);
      EXPECT_EQ(status, 200) << r.dump();
      return r;
    }
    // Streamed: concatenate the deltas.
    auto c = testing::local_client(server_->port(), 120);
    std::string raw;
    auto res =
        testing::post_streamed(c, "/v1/chat/completions", body, [&](const char* d, size_t n) {
          raw.append(d, n);
          return true;
        });
    EXPECT_TRUE(res) << "no response";
    json out = {{"content", ""}, {"reasoning_content", ""}};
    size_t pos = 0;
    while ((pos = raw.find("data: ", pos)) != std::string::npos) {
      const size_t end = raw.find("\n\n", pos);
      const std::string payload = raw.substr(pos + 6, end - pos - 6);
      pos = end;
      if (payload == "[DONE]") break;
      json ev = json::parse(payload, nullptr, false);
      if (!ev.is_object() || !ev.contains("choices") || ev["choices"].empty()) continue;
      const json& delta = ev["choices"][0]["delta"];
      for (const char* k : {"content", "reasoning_content"})
        if (delta.contains(k) && delta[k].is_string())
          out[k] = out[k].get<std::string>() + delta[k].get<std::string>();
    }
    return out;
  }
  static inline testing::ServerProcess* server_ = nullptr;
};

// A verse answer about light: "A verse about light, from Book C:V:\n<verse>".
bool verse_about_light(const std::string& s) {
  const auto v = testing::parse_verse_answer(s);
  return v.ok && v.word == "light" && testing::word_count(v.verse) >= 4 &&
         lower(s).find("light") != std::string::npos;
}

TEST_F(ServerDemo, VerseWithoutReasoning) {
  json r = ask("none");
  const json& msg = r["choices"][0]["message"];
  const std::string content = msg.value("content", "");
  std::printf("[demo] content: %s\n", content.c_str());
  EXPECT_TRUE(verse_about_light(content)) << r.dump();
  EXPECT_FALSE(msg.contains("reasoning_content") && msg["reasoning_content"].is_string() &&
               !msg["reasoning_content"].get<std::string>().empty())
      << r.dump();
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop") << r.dump();
}

TEST_F(ServerDemo, VerseWithReasoningAboutLight) {
  json r = ask("high");
  const json& msg = r["choices"][0]["message"];
  const std::string content = msg.value("content", "");
  const std::string reasoning =
      msg.contains("reasoning_content") && msg["reasoning_content"].is_string()
          ? msg["reasoning_content"].get<std::string>()
          : "";
  std::printf("[demo] reasoning: %s\n[demo] content: %s\n", reasoning.c_str(), content.c_str());
  EXPECT_NE(lower(reasoning).find("light"), std::string::npos) << r.dump();
  EXPECT_TRUE(verse_about_light(content)) << r.dump();
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop") << r.dump();
  // Streaming gives the same answer.
  json s = ask("high", true);
  EXPECT_EQ(s["content"], content);
  EXPECT_EQ(s["reasoning_content"], reasoning);
}

}  // namespace
}  // namespace inkling
