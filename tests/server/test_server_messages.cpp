// POST /v1/messages (Anthropic Messages) end to end on 127.0.0.1: content blocks (thinking, text,
// tool_use), the streamed event order, tool_use / tool_result round trip, stop_sequences, the
// token limit and Anthropic-shaped 400s. The --test-script answers play the model.
#include <httplib.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client_helpers.h"
#include "server/messages_api.h"
#include "server/sse.h"
#include "server_process.h"
#include "test_scripts.h"

namespace inkling {
namespace {

using nlohmann::json;

json tools() {
  return json::array(
      {{{"name", "get_weather"},
        {"description", "weather"},
        {"input_schema", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}}});
}

json user_msg(const std::string& text) {
  return json::array({{{"role", "user"}, {"content", text}}});
}

class ServerMessages : public testing::SharedServerTest<ServerMessages> {
 public:
  static std::vector<std::string> server_args() {
    return {"--parallel",    "2",
            "--ctx-size",    "512",
            "--test-script", testing::write_weather_script("server_messages_script.json")};
  }

 protected:
  static json post(const json& body, int want = 200) {
    int st = 0;
    json r = testing::post_json(server_->port(), "/v1/messages", body, &st);
    EXPECT_EQ(st, want) << r.dump();
    return r;
  }
  static std::vector<json> stream(json body) {
    body["stream"] = true;
    auto c = testing::local_client(server_->port());
    auto r = c.Post("/v1/messages", body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, 200) << r->body;
    std::vector<json> evs;
    for (const auto& data : server::parse_sse(r->body)) evs.push_back(json::parse(data));
    return evs;
  }
  static std::vector<std::string> types(const std::vector<json>& evs) {
    std::vector<std::string> t;
    for (const auto& e : evs) {
      std::string s = e["type"];
      if (s == "content_block_start" || s == "content_block_delta")
        s += ":" +
             std::string(e.contains("delta") ? e["delta"]["type"] : e["content_block"]["type"]);
      if (!t.empty() && t.back() == s) continue;
      t.push_back(s);
    }
    return t;
  }
};

TEST_F(ServerMessages, ThinkingAndText) {
  json r = post({{"messages", user_msg("write a poem")},
                 {"system", "be brief"},
                 {"max_tokens", 40},
                 {"thinking", {{"type", "enabled"}, {"budget_tokens", 16}}}});
  EXPECT_EQ(r["type"], "message");
  EXPECT_EQ(r["role"], "assistant");
  EXPECT_EQ(r["id"].get<std::string>().rfind("msg_", 0), 0u);
  EXPECT_EQ(r["stop_reason"], "end_turn");
  ASSERT_EQ(r["content"].size(), 2u) << r.dump();
  EXPECT_EQ(r["content"][0],
            json({{"type", "thinking"}, {"thinking", "Rhyme."}, {"signature", ""}}));
  EXPECT_EQ(r["content"][1], json({{"type", "text"}, {"text", "Roses are red"}}));
  EXPECT_GT(r["usage"]["input_tokens"].get<int>(), 0);
  EXPECT_GT(r["usage"]["output_tokens"].get<int>(), 0);
}

TEST_F(ServerMessages, ToolUseAndStreamEventOrder) {
  json body = {{"messages", user_msg("weather in Paris?")}, {"tools", tools()}, {"max_tokens", 40}};
  json r = post(body);
  EXPECT_EQ(r["stop_reason"], "tool_use");
  ASSERT_EQ(r["content"].size(), 2u) << r.dump();
  const json& tu = r["content"][1];
  EXPECT_EQ(tu["type"], "tool_use");
  EXPECT_EQ(tu["name"], "get_weather");
  EXPECT_EQ(tu["id"].get<std::string>().rfind("toolu_", 0), 0u);
  EXPECT_EQ(tu["input"], json({{"city", "Paris"}}));

  auto evs = stream(body);
  const std::vector<std::string> want = {"message_start",
                                         "content_block_start:thinking",
                                         "content_block_delta:thinking_delta",
                                         "content_block_stop",
                                         "content_block_start:tool_use",
                                         "content_block_delta:input_json_delta",
                                         "content_block_stop",
                                         "message_delta",
                                         "message_stop"};
  EXPECT_EQ(types(evs), want);
  std::string json_text;
  for (const auto& e : evs) {
    if (e["type"] == "content_block_delta" && e["delta"]["type"] == "input_json_delta") {
      EXPECT_EQ(e["index"], 1);
      json_text += e["delta"]["partial_json"];
    }
  }
  EXPECT_EQ(json::parse(json_text), json({{"city", "Paris"}}));
  ASSERT_GE(evs.size(), 3u);
  EXPECT_EQ(evs[0]["message"]["content"], json::array());
  EXPECT_EQ(evs[evs.size() - 2]["delta"]["stop_reason"], "tool_use");
  EXPECT_GT(evs[evs.size() - 2]["usage"]["output_tokens"].get<int>(), 0);
}

TEST_F(ServerMessages, ToolResultRoundTrip) {
  json msgs = json::array(
      {{{"role", "user"}, {"content", "weather in Paris?"}},
       {{"role", "assistant"},
        {"content", json::array({{{"type", "thinking"}, {"thinking", "t"}, {"signature", ""}},
                                 {{"type", "tool_use"},
                                  {"id", "toolu_1"},
                                  {"name", "get_weather"},
                                  {"input", {{"city", "Paris"}}}}})}},
       {{"role", "user"},
        {"content",
         json::array(
             {{{"type", "tool_result"}, {"tool_use_id", "toolu_1"}, {"content", "sunny-21C"}}})}}});
  json r = post({{"messages", msgs}, {"tools", tools()}, {"max_tokens", 40}});
  ASSERT_EQ(r["content"].size(), 1u) << r.dump();
  EXPECT_EQ(r["content"][0]["text"], "It is sunny.");
}

TEST_F(ServerMessages, StopSequenceAndMaxTokens) {
  json r =
      post({{"messages", user_msg("a poem")}, {"max_tokens", 40}, {"stop_sequences", {"red"}}});
  EXPECT_EQ(r["stop_reason"], "stop_sequence");
  EXPECT_EQ(r["stop_sequence"], "red");
  EXPECT_EQ(r["content"].back()["text"], "Roses are ");
  json r2 = post({{"messages", user_msg("a poem")}, {"max_tokens", 3}});
  EXPECT_EQ(r2["stop_reason"], "max_tokens");
  EXPECT_EQ(r2["usage"]["output_tokens"], 3);
}

TEST_F(ServerMessages, BadRequestsAreAnthropicShaped) {
  const std::vector<json> bad = {
      {{"messages", user_msg("hi")}},  // max_tokens missing
      {{"max_tokens", 8}},
      {{"messages", json::array({{{"role", "system"}, {"content", "x"}}})}, {"max_tokens", 8}},
      {{"messages",
        json::array({{{"role", "user"}, {"content", json::array({{{"type", "document"}}})}}})},
       {"max_tokens", 8}},
      {{"messages", user_msg("hi")}, {"max_tokens", 8}, {"thinking", {{"type", "enabled"}}}},
      {{"messages", user_msg("hi")},
       {"max_tokens", 8},
       {"thinking", {{"type", "enabled"}, {"budget_tokens", 8}}}},
      {{"messages", user_msg("hi")},
       {"max_tokens", 8},
       {"tools", json::array({{{"type", "bash_20250124"}, {"name", "bash"}}})}},
      {{"messages", user_msg("hi")},
       {"max_tokens", 8},
       {"tool_choice", {{"type", "tool"}, {"name", "nope"}}},
       {"tools", tools()}},
  };
  for (const auto& b : bad) {
    json r = post(b, 400);
    EXPECT_EQ(r["type"], "error") << b.dump();
    EXPECT_EQ(r["error"]["type"], "invalid_request_error") << b.dump();
    EXPECT_FALSE(r["error"]["message"].get<std::string>().empty());
  }
}

TEST(MessagesTranslation, BlocksBecomeChatMessages) {
  json body = {
      {"system", json::array({{{"type", "text"}, {"text", "sys"}}})},
      {"max_tokens", 9},
      {"stop_sequences", {"END"}},
      {"tool_choice", {{"type", "any"}, {"disable_parallel_tool_use", true}}},
      {"tools", tools()},
      {"messages", json::array({{{"role", "user"},
                                 {"content", json::array({{{"type", "text"}, {"text", "look"}},
                                                          {{"type", "image"},
                                                           {"source",
                                                            {{"type", "base64"},
                                                             {"media_type", "image/png"},
                                                             {"data", "AA"}}}}})}},
                                {{"role", "assistant"},
                                 {"content", json::array({{{"type", "tool_use"},
                                                           {"id", "t1"},
                                                           {"name", "get_weather"},
                                                           {"input", {{"city", "X"}}}}})}},
                                {{"role", "user"},
                                 {"content", json::array({{{"type", "tool_result"},
                                                           {"tool_use_id", "t1"},
                                                           {"is_error", true},
                                                           {"content", "boom"}}})}}})}};
  server::ojson chat;
  ASSERT_FALSE(server::messages_to_chat(server::ojson::parse(body.dump()), &chat));
  const json got = json::parse(chat.dump());
  const json& m = got["messages"];
  ASSERT_EQ(m.size(), 4u) << got.dump();
  EXPECT_EQ(m[0], json({{"role", "system"}, {"content", "sys"}}));
  EXPECT_EQ(m[1]["content"][1]["image_url"]["url"], "data:image/png;base64,AA");
  EXPECT_EQ(m[2]["tool_calls"][0]["function"]["arguments"], "{\"city\":\"X\"}");
  EXPECT_EQ(m[3], json({{"role", "tool"}, {"tool_call_id", "t1"}, {"content", "Error: boom"}}));
  EXPECT_EQ(got["tool_choice"], "required");
  EXPECT_EQ(got["parallel_tool_calls"], false);
  EXPECT_EQ(got["stop"], json({"END"}));
  EXPECT_EQ(got["max_completion_tokens"], 9);
  EXPECT_EQ(got["tools"][0]["function"]["parameters"]["type"], "object");
}

}  // namespace
}  // namespace inkling
