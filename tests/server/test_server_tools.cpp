// tool_choice and chat logprobs end to end on 127.0.0.1. The --test-script answers play the
// model (a scripted token wins unless tool_choice bans or forces another one), so each tool_choice
// mode is checked against a model that "wants" to call a tool and one that wants to answer in
// text. Logprobs use real sampling from the tiny model.
#include <httplib.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "client_helpers.h"
#include "server/sse.h"
#include "server_process.h"
#include "test_scripts.h"

namespace inkling {
namespace {

using nlohmann::json;

std::string write_tools_script() {
  // "when" is matched against the whole rendered prompt, tool definitions included.
  return testing::write_test_script(
      "server_tools_script.json",
      {{"weather in Paris", testing::kScriptWeatherCall},
       {"poem", testing::kScriptPoem},
       {"twice",
        "<|content_text|>one<|end_message|><|content_model_end_sampling|><|message_model|>"
        "<|content_text|> two<|end_message|><|content_model_end_sampling|>"}});
}

json tool_list() {
  auto fn = [](const char* name) {
    return json{
        {"type", "function"},
        {"function",
         {{"name", name},
          {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}}}};
  };
  return json::array({fn("get_weather"), fn("get_time")});
}

json named(const char* name) {
  return {{"type", "function"}, {"function", {{"name", name}}}};
}

class ServerTools : public testing::SharedServerTest<ServerTools> {
 public:
  static std::vector<std::string> server_args() {
    return {"--parallel", "2", "--ctx-size", "512", "--test-script", write_tools_script()};
  }

 protected:
  // Non-streaming chat; the first choice, with a 200 expected.
  static json chat(const std::string& text, const json& tool_choice, json extra = json::object()) {
    json body = {{"messages", json::array({{{"role", "user"}, {"content", text}}})},
                 {"tools", tool_list()},
                 {"max_tokens", 48}};
    if (!tool_choice.is_null()) body["tool_choice"] = tool_choice;
    body.update(extra);
    int st = 0;
    json r = testing::post_json(server_->port(), "/v1/chat/completions", body, &st);
    EXPECT_EQ(st, 200) << r.dump();
    return r.contains("choices") ? r["choices"][0] : json();
  }
};

TEST_F(ServerTools, AutoFollowsTheModel) {
  json c = chat("weather in Paris?", nullptr);
  EXPECT_EQ(c["finish_reason"], "tool_calls");
  EXPECT_EQ(c["message"]["tool_calls"][0]["function"]["name"], "get_weather");
  c = chat("a poem", "auto");
  EXPECT_EQ(c["finish_reason"], "stop");
  EXPECT_EQ(c["message"]["content"], "Roses are red");
  EXPECT_FALSE(c["message"].contains("tool_calls"));
}

TEST_F(ServerTools, NoneBansToolCallsEvenWhenTheModelWantsOne) {
  json c = chat("weather in Paris?", "none");
  EXPECT_NE(c["finish_reason"], "tool_calls") << c.dump();
  EXPECT_FALSE(c["message"].contains("tool_calls")) << c.dump();
  EXPECT_EQ(c["message"]["reasoning_content"], "Let me check.");
  // A text answer is left alone.
  c = chat("a poem", "none");
  EXPECT_EQ(c["finish_reason"], "stop");
  EXPECT_EQ(c["message"]["content"], "Roses are red");
}

TEST_F(ServerTools, RequiredKeepsACallAndRefusesATextAnswer) {
  json c = chat("weather in Paris?", "required");
  EXPECT_EQ(c["finish_reason"], "tool_calls");
  EXPECT_EQ(c["message"]["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(c["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            json({{"city", "Paris"}}));
  // The model wants to answer in text and end the turn: neither is allowed before a call, which
  // completes within max_tokens. Its reasoning comes first where the budget leaves room for it.
  for (int max_tokens : {24, 96}) {
    c = chat("a poem", "required", {{"max_tokens", max_tokens}});
    EXPECT_EQ(c["finish_reason"], "tool_calls") << c.dump();
    const json& content = c["message"]["content"];
    EXPECT_TRUE(content.is_null() || content.get<std::string>().find("Roses") == std::string::npos)
        << c.dump();
    if (max_tokens == 96) {
      EXPECT_EQ(c["message"]["reasoning_content"], "Rhyme.") << c.dump();
    }
  }
}

TEST_F(ServerTools, NamedFunctionIsCalledWhateverTheModelWants) {
  // The model calls get_weather; get_time is forced instead, with the model's arguments.
  json c = chat("weather in Paris?", named("get_time"));
  EXPECT_EQ(c["finish_reason"], "tool_calls") << c.dump();
  ASSERT_TRUE(c["message"].contains("tool_calls")) << c.dump();
  EXPECT_EQ(c["message"]["tool_calls"].size(), 1u);
  EXPECT_EQ(c["message"]["tool_calls"][0]["function"]["name"], "get_time");
  EXPECT_EQ(json::parse(c["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>(),
                        nullptr, false),
            json({{"city", "Paris"}}))
      << c.dump();
  EXPECT_EQ(c["message"]["reasoning_content"], "Let me check.");
  // The model answers in text: the named call is started anyway (streamed: its name first).
  auto cl = testing::local_client(server_->port());
  json body = {{"messages", json::array({{{"role", "user"}, {"content", "a poem"}}})},
               {"tools", tool_list()},
               {"tool_choice", named("get_weather")},
               {"max_tokens", 24},
               {"stream", true}};
  auto r = cl.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  std::string first_name, content;
  for (const auto& ev : server::parse_sse(r->body)) {
    if (ev == "[DONE]") break;
    const json d = json::parse(ev)["choices"][0]["delta"];
    content += d.value("content", "");
    if (d.contains("tool_calls") && first_name.empty())
      first_name = d["tool_calls"][0]["function"].value("name", "");
  }
  EXPECT_EQ(first_name, "get_weather") << r->body;
  EXPECT_EQ(content.find("Roses"), std::string::npos);
}

TEST_F(ServerTools, ChatIgnoreEosKeepsGoingPastTheEndOfTurn) {
  json c = chat("say it twice", nullptr);
  EXPECT_EQ(c["message"]["content"], "one");
  EXPECT_EQ(c["finish_reason"], "stop");
  c = chat("say it twice", nullptr, {{"ignore_eos", true}});
  EXPECT_EQ(c["message"]["content"], "one two") << c.dump();
}

TEST_F(ServerTools, RepeatedCompletionPromptReusesItsPrefill) {
  const json body = {
      {"prompt",
       "Once upon a time there was a fox who lived in a forest by the river, and every morning "
       "it ran"},
      {"max_tokens", 2}};
  int st = 0;
  json a = testing::post_json(server_->port(), "/v1/completions", body, &st);
  ASSERT_EQ(st, 200) << a.dump();
  json b = testing::post_json(server_->port(), "/v1/completions", body, &st);
  ASSERT_EQ(st, 200) << b.dump();
  EXPECT_EQ(b["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(),
            b["usage"]["prompt_tokens"].get<int64_t>() - 1)
      << b.dump();
}

TEST_F(ServerTools, UnknownNamedFunctionIs400) {
  int st = 0;
  json body = {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
               {"tools", tool_list()},
               {"tool_choice", named("nope")}};
  json r = testing::post_json(server_->port(), "/v1/chat/completions", body, &st);
  EXPECT_EQ(st, 400) << r.dump();
  EXPECT_TRUE(r.contains("error"));
}

bool valid_utf8(const std::string& s) {
  try {
    (void)json(s).dump();  // throws on invalid UTF-8
    return true;
  } catch (const json::exception&) {
    return false;
  }
}

// Checks the shape and values of one chat logprobs entry with top_n alternatives.
void check_entry(const json& e, int top_n, bool greedy) {
  ASSERT_TRUE(e["token"].is_string()) << e.dump();
  ASSERT_TRUE(e["logprob"].is_number()) << e.dump();
  ASSERT_TRUE(e["bytes"].is_array()) << e.dump();
  const double lp = e["logprob"];
  EXPECT_LE(lp, 1e-6);
  std::string bytes;
  for (const auto& b : e["bytes"]) bytes += char(b.get<int>());
  if (valid_utf8(bytes)) {
    EXPECT_EQ(e["token"].get<std::string>(), bytes);  // the text is the bytes
  }
  const json& top = e["top_logprobs"];
  ASSERT_TRUE(top.is_array());
  EXPECT_EQ(int(top.size()), top_n);
  bool found = false;
  for (size_t i = 0; i < top.size(); ++i) {
    EXPECT_LE(top[i]["logprob"].get<double>(), 1e-6);
    EXPECT_TRUE(top[i]["bytes"].is_array() && top[i]["token"].is_string());
    if (i > 0) {
      EXPECT_LE(top[i]["logprob"].get<double>(), top[i - 1]["logprob"].get<double>());
    }
    if (top[i]["bytes"] == e["bytes"]) {
      found = true;
      EXPECT_NEAR(top[i]["logprob"].get<double>(), lp, 1e-5);
    }
  }
  // Greedy: the chosen token is the most likely one.
  if (greedy && top_n > 0) {
    EXPECT_TRUE(found) << e.dump();
    EXPECT_EQ(top[0]["bytes"], e["bytes"]);
  }
  // Where the chosen token is not listed, it is less likely than every listed one.
  if (!found && top_n > 0) {
    EXPECT_LE(lp, top.back()["logprob"].get<double>() + 1e-5);
  }
}

TEST_F(ServerTools, ChatLogprobsNonStreamingAndStreaming) {
  const json base = {{"messages", json::array({{{"role", "user"}, {"content", "Say something"}}})},
                     {"max_tokens", 12},
                     {"ignore_eos", true},
                     {"logprobs", true},
                     {"top_logprobs", 5},
                     {"temperature", 0}};
  int st = 0;
  json r = testing::post_json(server_->port(), "/v1/chat/completions", base, &st);
  ASSERT_EQ(st, 200) << r.dump();
  const json& content = r["choices"][0]["logprobs"]["content"];
  ASSERT_TRUE(content.is_array()) << r.dump();
  EXPECT_EQ(int64_t(content.size()), r["usage"]["completion_tokens"].get<int64_t>());
  for (const auto& e : content) check_entry(e, 5, /*greedy=*/true);

  // Streamed: one entry per token across the chunks, the same tokens as without streaming.
  json sb = base;
  sb["stream"] = true;
  auto cl = testing::local_client(server_->port());
  auto s = cl.Post("/v1/chat/completions", sb.dump(), "application/json");
  ASSERT_TRUE(s);
  ASSERT_EQ(s->status, 200);
  json streamed = json::array();
  for (const auto& ev : server::parse_sse(s->body)) {
    if (ev == "[DONE]") break;
    const json c = json::parse(ev);
    const json& lp = c["choices"][0]["logprobs"];
    if (lp.is_null()) continue;
    for (const auto& e : lp["content"]) streamed.push_back(e);
  }
  ASSERT_EQ(streamed.size(), content.size());
  for (size_t i = 0; i < content.size(); ++i) {
    EXPECT_EQ(streamed[i]["bytes"], content[i]["bytes"]) << i;
    EXPECT_NEAR(streamed[i]["logprob"].get<double>(), content[i]["logprob"].get<double>(), 1e-4);
    check_entry(streamed[i], 5, /*greedy=*/true);
  }

  // Sampled (temperature 1): the chosen token need not be in the top set.
  json hot = base;
  hot["temperature"] = 1.0;
  hot["seed"] = 11;
  hot["top_logprobs"] = 2;
  r = testing::post_json(server_->port(), "/v1/chat/completions", hot, &st);
  ASSERT_EQ(st, 200) << r.dump();
  for (const auto& e : r["choices"][0]["logprobs"]["content"]) check_entry(e, 2, false);

  // logprobs without top_logprobs: empty alternatives; without logprobs: null.
  json plain = base;
  plain.erase("top_logprobs");
  r = testing::post_json(server_->port(), "/v1/chat/completions", plain, &st);
  ASSERT_EQ(st, 200);
  for (const auto& e : r["choices"][0]["logprobs"]["content"]) check_entry(e, 0, false);
  plain.erase("logprobs");
  r = testing::post_json(server_->port(), "/v1/chat/completions", plain, &st);
  EXPECT_TRUE(r["choices"][0]["logprobs"].is_null());
  // top_logprobs without logprobs, or above 20: 400.
  json bad = base;
  bad.erase("logprobs");
  testing::post_json(server_->port(), "/v1/chat/completions", bad, &st);
  EXPECT_EQ(st, 400);
  bad = base;
  bad["top_logprobs"] = 21;
  testing::post_json(server_->port(), "/v1/chat/completions", bad, &st);
  EXPECT_EQ(st, 400);
}

}  // namespace
}  // namespace inkling
