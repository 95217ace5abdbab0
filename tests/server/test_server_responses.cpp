// POST /v1/responses end to end on 127.0.0.1: output items (reasoning with its summary, message,
// function_call), the streamed event order, input items (function_call / function_call_output,
// instructions), the token limit (status "incomplete") and the 400s of the stateless subset.
// The --test-script answers play the model, so every output is deterministic.
#include <httplib.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client_helpers.h"
#include "server/responses_api.h"
#include "server/sse.h"
#include "server_process.h"
#include "test_scripts.h"

namespace inkling {
namespace {

using nlohmann::json;

json fn_tools() {
  return json::array(
      {{{"type", "function"},
        {"name", "get_weather"},
        {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}}});
}

class ServerResponses : public testing::SharedServerTest<ServerResponses> {
 public:
  static std::vector<std::string> server_args() {
    return {"--parallel",    "2",
            "--ctx-size",    "512",
            "--test-script", testing::write_weather_script("server_responses_script.json")};
  }

 protected:
  static json post(const json& body, int want = 200) {
    int st = 0;
    json r = testing::post_json(server_->port(), "/v1/responses", body, &st);
    EXPECT_EQ(st, want) << r.dump();
    return r;
  }
  // The streamed events (payloads), checking that each SSE `event:` names its payload's type.
  static std::vector<json> stream(json body) {
    body["stream"] = true;
    auto c = testing::local_client(server_->port());
    auto r = c.Post("/v1/responses", body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_NE(r->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
    std::vector<json> evs;
    size_t pos = 0;
    for (const auto& data : server::parse_sse(r->body)) {
      evs.push_back(json::parse(data));
      const size_t e = r->body.find("event: ", pos);
      EXPECT_NE(e, std::string::npos);
      const size_t nl = r->body.find('\n', e);
      EXPECT_EQ(r->body.substr(e + 7, nl - e - 7), evs.back()["type"].get<std::string>());
      pos = nl;
    }
    return evs;
  }
  // Event types with runs of the same delta type collapsed into one.
  static std::vector<std::string> types(const std::vector<json>& evs) {
    std::vector<std::string> t;
    for (const auto& e : evs) {
      const std::string s = e["type"];
      if (!t.empty() && t.back() == s && s.find(".delta") != std::string::npos) continue;
      t.push_back(s);
    }
    return t;
  }
};

TEST_F(ServerResponses, ReasoningSummaryAndMessage) {
  json r = post({{"input", "write a poem"},
                 {"reasoning", {{"effort", "high"}, {"summary", "auto"}}},
                 {"max_output_tokens", 40}});
  EXPECT_EQ(r["object"], "response");
  EXPECT_EQ(r["id"].get<std::string>().rfind("resp_", 0), 0u);
  EXPECT_EQ(r["status"], "completed");
  EXPECT_TRUE(r["incomplete_details"].is_null());
  EXPECT_EQ(r["store"], false);
  EXPECT_EQ(r["reasoning"]["effort"], "high");
  ASSERT_EQ(r["output"].size(), 2u) << r.dump();
  const json& rs = r["output"][0];
  EXPECT_EQ(rs["type"], "reasoning");
  EXPECT_EQ(rs["summary"][0]["type"], "summary_text");
  EXPECT_EQ(rs["summary"][0]["text"], "Rhyme.");
  EXPECT_EQ(rs["content"][0]["text"], "Rhyme.");
  const json& msg = r["output"][1];
  EXPECT_EQ(msg["type"], "message");
  EXPECT_EQ(msg["role"], "assistant");
  EXPECT_EQ(msg["status"], "completed");
  EXPECT_EQ(msg["content"][0]["type"], "output_text");
  EXPECT_EQ(msg["content"][0]["text"], "Roses are red");
  const json& u = r["usage"];
  EXPECT_GT(u["input_tokens"].get<int>(), 0);
  EXPECT_GT(u["output_tokens"].get<int>(), 0);
  EXPECT_GT(u["output_tokens_details"]["reasoning_tokens"].get<int>(), 0);
  EXPECT_EQ(u["total_tokens"].get<int>(),
            u["input_tokens"].get<int>() + u["output_tokens"].get<int>());
  // Without reasoning.summary the reasoning item has no summary, only its content.
  json r2 = post({{"input", "write a poem"}, {"max_output_tokens", 40}});
  EXPECT_TRUE(r2["output"][0]["summary"].empty());
  EXPECT_EQ(r2["output"][0]["content"][0]["text"], "Rhyme.");
}

TEST_F(ServerResponses, FunctionCallNonStreaming) {
  json r = post({{"input", json::array({{{"role", "user"}, {"content", "weather in Paris?"}}})},
                 {"tools", fn_tools()},
                 {"max_output_tokens", 40}});
  ASSERT_EQ(r["output"].size(), 2u) << r.dump();
  const json& fc = r["output"][1];
  EXPECT_EQ(fc["type"], "function_call");
  EXPECT_EQ(fc["name"], "get_weather");
  EXPECT_EQ(fc["call_id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(json::parse(fc["arguments"].get<std::string>()), json({{"city", "Paris"}}));
  EXPECT_EQ(fc["status"], "completed");
}

TEST_F(ServerResponses, StreamedFunctionCallEventOrder) {
  auto evs =
      stream({{"input", "weather in Paris?"}, {"tools", fn_tools()}, {"max_output_tokens", 40}});
  const std::vector<std::string> want = {"response.created",
                                         "response.in_progress",
                                         "response.output_item.added",
                                         "response.reasoning_text.delta",
                                         "response.reasoning_text.done",
                                         "response.output_item.done",
                                         "response.output_item.added",
                                         "response.function_call_arguments.delta",
                                         "response.function_call_arguments.done",
                                         "response.output_item.done",
                                         "response.completed"};
  EXPECT_EQ(types(evs), want);
  std::string args;
  json done_items = json::array();
  for (size_t i = 0; i < evs.size(); ++i) {
    EXPECT_EQ(evs[i]["sequence_number"], i);
    if (evs[i]["type"] == "response.function_call_arguments.delta") args += evs[i]["delta"];
    if (evs[i]["type"] == "response.function_call_arguments.done") {
      EXPECT_EQ(evs[i]["arguments"], args);
      EXPECT_EQ(evs[i]["name"], "get_weather");
    }
    if (evs[i]["type"] == "response.output_item.done") done_items.push_back(evs[i]["item"]);
  }
  EXPECT_EQ(json::parse(args), json({{"city", "Paris"}}));
  const json& fin = evs.back()["response"];
  EXPECT_EQ(fin["status"], "completed");
  EXPECT_EQ(fin["output"], done_items);
  EXPECT_EQ(fin["id"], evs[0]["response"]["id"]);
  EXPECT_GT(fin["usage"]["output_tokens"].get<int>(), 0);
}

TEST_F(ServerResponses, StreamedMessageEventOrder) {
  auto evs = stream({{"input", "a poem"}, {"max_output_tokens", 40}});
  const std::vector<std::string> want = {"response.created",
                                         "response.in_progress",
                                         "response.output_item.added",
                                         "response.reasoning_text.delta",
                                         "response.reasoning_text.done",
                                         "response.output_item.done",
                                         "response.output_item.added",
                                         "response.content_part.added",
                                         "response.output_text.delta",
                                         "response.output_text.done",
                                         "response.content_part.done",
                                         "response.output_item.done",
                                         "response.completed"};
  EXPECT_EQ(types(evs), want);
  std::string text;
  for (const auto& e : evs)
    if (e["type"] == "response.output_text.delta") text += e["delta"];
  EXPECT_EQ(text, "Roses are red");
  EXPECT_EQ(evs.back()["response"]["output"][1]["content"][0]["text"], "Roses are red");
}

TEST_F(ServerResponses, FunctionCallOutputItemsAndInstructions) {
  // The follow-up turn: the tool's answer ("sunny-21C") reaches the prompt, so the script answers.
  json input = json::array(
      {{{"type", "message"}, {"role", "user"}, {"content", "weather in Paris?"}},
       {{"type", "function_call"},
        {"call_id", "call_1"},
        {"name", "get_weather"},
        {"arguments", "{\"city\":\"Paris\"}"}},
       {{"type", "function_call_output"}, {"call_id", "call_1"}, {"output", "sunny-21C"}}});
  json r = post({{"input", input},
                 {"instructions", "Answer briefly."},
                 {"tools", fn_tools()},
                 {"max_output_tokens", 40}});
  ASSERT_EQ(r["output"].size(), 1u) << r.dump();
  EXPECT_EQ(r["output"][0]["content"][0]["text"], "It is sunny.");
  EXPECT_EQ(r["instructions"], "Answer briefly.");
  // The instructions and every item are in the prompt (more tokens than without them).
  json r2 = post({{"input", input}, {"tools", fn_tools()}, {"max_output_tokens", 40}});
  EXPECT_GT(r["usage"]["input_tokens"].get<int>(), r2["usage"]["input_tokens"].get<int>());
}

TEST_F(ServerResponses, TokenLimitIsIncomplete) {
  json r = post({{"input", "a poem"}, {"max_output_tokens", 3}});
  EXPECT_EQ(r["status"], "incomplete");
  EXPECT_EQ(r["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(r["usage"]["output_tokens"], 3);
  ASSERT_FALSE(r["output"].empty());
  EXPECT_EQ(r["output"].back()["status"], "incomplete");
  auto evs = stream({{"input", "a poem"}, {"max_output_tokens", 3}});
  ASSERT_FALSE(evs.empty());
  EXPECT_EQ(evs.back()["type"], "response.incomplete");
}

TEST_F(ServerResponses, JsonSchemaTextFormatIsConstrained) {
  // No script entry matches: the tiny random model writes, constrained to the schema.
  const json schema = {{"type", "object"},
                       {"properties", {{"a", {{"type", "boolean"}}}}},
                       {"required", {"a"}},
                       {"additionalProperties", false}};
  json r =
      post({{"input", "hi"},
            {"text",
             {{"format",
               {{"type", "json_schema"}, {"name", "x"}, {"schema", schema}, {"strict", true}}}}},
            {"temperature", 0},
            {"max_output_tokens", 60}});
  EXPECT_EQ(r["status"], "completed") << r.dump();
  ASSERT_FALSE(r["output"].empty());
  const json& msg = r["output"].back();
  ASSERT_EQ(msg["type"], "message") << r.dump();
  const json v = json::parse(msg["content"][0]["text"].get<std::string>(), nullptr, false);
  ASSERT_TRUE(v.is_object()) << r.dump();
  EXPECT_EQ(v.size(), 1u);
  EXPECT_TRUE(v["a"].is_boolean());
}

TEST_F(ServerResponses, BadRequests) {
  struct Case {
    json body;
    std::string param;
  };
  const std::vector<Case> cases = {
      {{{"input", "hi"}, {"previous_response_id", "resp_x"}}, "previous_response_id"},
      {{{"input", "hi"}, {"store", true}}, "store"},
      {{{"input", "hi"}, {"conversation", "conv_1"}}, "conversation"},
      {{{"instructions", "x"}}, "input"},
      {{{"input", 5}}, "input"},
      {{{"input", json::array()}}, "input"},
      {{{"input", json::array({{{"type", "item_reference"}, {"id", "msg_1"}}})}}, "input[0].type"},
      {{{"input", json::array({{{"role", "tool"}, {"content", "x"}}})}}, "input[0].role"},
      {{{"input",
         json::array({{{"role", "user"}, {"content", json::array({{{"type", "input_file"}}})}}})}},
       "input[0].content[0].type"},
      {{{"input", json::array({{{"type", "function_call_output"}, {"output", "x"}}})}},
       "input[0].call_id"},
      {{{"input", "hi"}, {"tools", json::array({{{"type", "web_search"}}})}}, "tools[0].type"},
      {{{"input", "hi"},
        {"tools", fn_tools()},
        {"tool_choice", {{"type", "function"}, {"name", "nope"}}}},
       "tool_choice"},
      {{{"input", "hi"}, {"text", {{"format", {{"type", "yaml"}}}}}}, "text.format.type"},
      {{{"input", "hi"}, {"stream", "yes"}}, "stream"},
      {{{"input", "hi"}, {"max_output_tokens", -2}}, "max_output_tokens"},
  };
  for (const auto& c : cases) {
    json r = post(c.body, 400);
    ASSERT_TRUE(r.contains("error")) << c.body.dump();
    EXPECT_EQ(r["error"]["param"], c.param) << c.body.dump() << " -> " << r.dump();
    EXPECT_FALSE(r["error"]["message"].get<std::string>().empty());
  }
}

TEST(ResponsesTranslation, InputItemsBecomeChatMessages) {
  json body = {
      {"instructions", "sys"},
      {"input",
       json::array(
           {{{"role", "developer"}, {"content", "dev"}},
            {{"role", "user"},
             {"content",
              json::array({{{"type", "input_text"}, {"text", "look"}},
                           {{"type", "input_image"}, {"image_url", "data:image/png;base64,AA"}}})}},
            {{"type", "reasoning"},
             {"summary", json::array({{{"type", "summary_text"}, {"text", "hmm"}}})}},
            {{"type", "function_call"}, {"call_id", "c1"}, {"name", "f"}, {"arguments", "{}"}},
            {{"type", "function_call_output"}, {"call_id", "c1"}, {"output", "ok"}},
            {{"role", "assistant"},
             {"content", json::array({{{"type", "output_text"}, {"text", "done"}}})}}})},
      {"reasoning", {{"effort", "low"}}},
      {"text",
       {{"format",
         {{"type", "json_schema"},
          {"name", "x"},
          {"schema", {{"type", "object"}}},
          {"strict", true}}}}},
      {"max_output_tokens", 7}};
  server::ojson chat;
  ASSERT_FALSE(server::responses_to_chat(server::ojson::parse(body.dump()), &chat));
  const json got = json::parse(chat.dump());
  const json& m = got["messages"];
  ASSERT_EQ(m.size(), 6u) << got.dump();
  EXPECT_EQ(m[0], json({{"role", "system"}, {"content", "sys"}}));
  EXPECT_EQ(m[1]["role"], "developer");
  EXPECT_EQ(m[2]["content"][1]["image_url"]["url"], "data:image/png;base64,AA");
  EXPECT_EQ(m[3]["role"], "assistant");
  EXPECT_EQ(m[3]["reasoning_content"], "hmm");
  EXPECT_EQ(m[3]["tool_calls"][0]["id"], "c1");
  EXPECT_EQ(m[3]["tool_calls"][0]["function"]["name"], "f");
  EXPECT_EQ(m[4], json({{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "ok"}}));
  EXPECT_EQ(m[5], json({{"role", "assistant"}, {"content", "done"}}));
  EXPECT_EQ(got["reasoning_effort"], "low");
  EXPECT_EQ(got["response_format"]["type"], "json_schema");
  EXPECT_EQ(got["response_format"]["json_schema"]["strict"], true);
  EXPECT_EQ(got["max_completion_tokens"], 7);
}

}  // namespace
}  // namespace inkling
