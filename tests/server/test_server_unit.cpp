// Unit tests of the server's pure parts: request validation into typed requests (each error
// names its field and status), stop strings across token boundaries, SSE framing, prefix cache.
#include <gtest/gtest.h>

#include "inkling/speculative.h"

#include "server/api_types.h"
#include "server/output.h"
#include "server/prefix_cache.h"
#include "server/sse.h"

namespace inkling::server {
namespace {

ojson J(const char* s) {
  return ojson::parse(s);
}

std::optional<ApiError> chat(const char* body, ChatRequest* out = nullptr) {
  ChatRequest tmp;
  return parse_chat_request(J(body), out ? out : &tmp);
}

TEST(ServerRequest, ValidChatFillsTypedFields) {
  ChatRequest r;
  auto e = chat(R"({"model":"m","messages":[{"role":"system","content":"s"},
      {"role":"user","content":[{"type":"text","text":"hi"}]},
      {"role":"assistant","content":null,"reasoning_content":"r",
       "tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]},
      {"role":"tool","tool_call_id":"c1","content":"ok"}],
      "tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],
      "tool_choice":{"type":"function","function":{"name":"f"}},
      "temperature":0.5,"top_p":0.9,"top_k":40,"min_p":0.05,"seed":7,"max_completion_tokens":12,
      "stop":["a","b"],"presence_penalty":0.5,"frequency_penalty":0.25,"repetition_penalty":1.1,
      "logprobs":true,"top_logprobs":3,"stream":true,"stream_options":{"include_usage":true},
      "reasoning_effort":"low","logit_bias":{"5":-100}})",
                &r);
  ASSERT_FALSE(e) << e->message;
  EXPECT_EQ(r.gen.model, "m");
  EXPECT_FLOAT_EQ(r.gen.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.gen.sampling.top_p, 0.9f);
  EXPECT_EQ(r.gen.sampling.top_k, 40);
  EXPECT_EQ(r.gen.sampling.seed, 7u);
  EXPECT_TRUE(r.gen.seed_given);
  EXPECT_EQ(r.gen.max_tokens, 12);
  EXPECT_EQ(r.gen.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(r.gen.logprobs);
  EXPECT_EQ(r.gen.top_logprobs, 3);
  EXPECT_TRUE(r.gen.stream && r.gen.include_usage);
  EXPECT_EQ(r.tool_choice, ToolChoice::kNamed);
  EXPECT_EQ(r.tool_name, "f");
  EXPECT_TRUE(r.has_tools);
  EXPECT_EQ(r.render_request["reasoning_effort"], "low");
  EXPECT_EQ(r.render_request["add_generation_prompt"], true);
  EXPECT_EQ(r.render_request["messages"].size(), 4u);
  ASSERT_EQ(r.gen.logit_bias.size(), 1u);
  EXPECT_EQ(r.gen.logit_bias[0].first, 5);
}

TEST(ServerRequest, ErrorsNameTheField) {
  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({})", "messages"},
      {R"({"messages":[]})", "messages"},
      {R"({"messages":"hi"})", "messages"},
      {R"({"messages":[{"role":"wizard","content":"x"}]})", "messages[0].role"},
      {R"({"messages":[{"role":1,"content":"x"}]})", "messages[0].role"},
      {R"({"messages":[{"role":"user","content":5}]})", "messages[0].content"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})",
       "messages[0].content[0].image_url"},
      {R"({"messages":[{"role":"user","content":[{"type":"video_url"}]}]})",
       "messages[0].content[0].type"},
      {R"({"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{bad"}}]}]})",
       "messages[0].tool_calls[0].function.arguments"},
      {R"({"messages":[{"role":"assistant","tool_calls":[{"function":{"arguments":"{}"}}]}]})",
       "messages[0].tool_calls[0].function.name"},
      {R"({"messages":[{"role":"user","content":"x"}],"temperature":"hot"})", "temperature"},
      {R"({"messages":[{"role":"user","content":"x"}],"temperature":-1})", "temperature"},
      {R"({"messages":[{"role":"user","content":"x"}],"top_p":0})", "top_p"},
      {R"({"messages":[{"role":"user","content":"x"}],"max_tokens":0})", "max_tokens"},
      {R"({"messages":[{"role":"user","content":"x"}],"max_tokens":1.5})", "max_tokens"},
      {R"({"messages":[{"role":"user","content":"x"}],"n":17})", "n"},
      {R"({"messages":[{"role":"user","content":"x"}],"n":0})", "n"},
      {R"({"messages":[{"role":"user","content":"x"}],"stop":[1]})", "stop[0]"},
      {R"({"messages":[{"role":"user","content":"x"}],"stream":"yes"})", "stream"},
      {R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})", "top_logprobs"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":{}})", "tools"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]})",
       "tools[0].function"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":[{"function":{"name":"bad name"}}]})",
       "tools[0].function.name"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":[{"function":{"name":"f","parameters":"x"}}]})",
       "tools[0].function.parameters"},
      {R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"required"})", "tool_choice"},
      {R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"maybe"})", "tool_choice"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":[{"function":{"name":"f"}}],
          "tool_choice":{"type":"function","function":{"name":"g"}}})",
       "tool_choice"},
      {R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema"}})",
       "response_format.json_schema"},
      {R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema",
          "json_schema":{"schema":"x"}}})",
       "response_format.json_schema.schema"},
      {R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"xml"}})",
       "response_format"},
      {R"({"messages":[{"role":"user","content":"x"}],"grammar":5})", "grammar"},
      {R"({"messages":[{"role":"user","content":"x"}],"parallel_tool_calls":"no"})",
       "parallel_tool_calls"},
      {R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{"abc":1}})", "logit_bias"},
  };
  for (const auto& c : cases) {
    auto e = chat(c.body);
    ASSERT_TRUE(e) << c.body;
    EXPECT_EQ(e->status, 400) << c.body;
    EXPECT_EQ(e->param, c.param) << c.body << " -> " << e->message;
    EXPECT_FALSE(e->message.empty());
  }
}

TEST(ServerRequest, StructuredOutputFieldsAndDeveloperRole) {
  ChatRequest r;
  auto e = parse_chat_request(ojson::parse(R"({"messages":[{"role":"developer","content":"d"},
      {"role":"user","content":"u"}],"n":3,"parallel_tool_calls":false,
      "response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,
      "schema":{"type":"object"}}}})"),
                              &r);
  ASSERT_FALSE(e) << e->message;
  EXPECT_EQ(r.render_request["messages"][0]["role"], "system");  // the template's name for it
  EXPECT_EQ(r.gen.n, 3);
  EXPECT_FALSE(r.parallel_tool_calls);
  EXPECT_EQ(r.gen.response_format, ResponseFormat::kJsonSchema);
  EXPECT_TRUE(r.gen.schema_strict);
  EXPECT_EQ(r.gen.json_schema, ojson({{"type", "object"}}));
  ChatRequest j;
  ASSERT_FALSE(parse_chat_request(ojson::parse(R"({"messages":[{"role":"user","content":"u"}],
      "response_format":{"type":"json_object"}})"),
                                  &j));
  EXPECT_EQ(j.gen.response_format, ResponseFormat::kJsonObject);
}

TEST(ServerRequest, NullMeansAbsentAndThinkingOffMapsToNone) {
  ChatRequest r;
  ASSERT_FALSE(chat(R"({"messages":[{"role":"user","content":"x"}],"temperature":null,
      "stop":null,"tools":null,"chat_template_kwargs":{"enable_thinking":false}})",
                    &r));
  EXPECT_FLOAT_EQ(r.gen.sampling.temperature, 1.0f);
  EXPECT_FALSE(r.has_tools);
  EXPECT_EQ(r.render_request["reasoning_effort"], "none");
}

TEST(ServerRequest, Completions) {
  CompletionRequest r;
  ASSERT_FALSE(parse_completion_request(J(R"({"prompt":"hi","logprobs":2,"echo":true})"), 100, &r));
  EXPECT_EQ(r.prompt_text, "hi");
  EXPECT_TRUE(r.echo && r.gen.logprobs);
  EXPECT_EQ(r.gen.top_logprobs, 2);
  CompletionRequest ids;
  ASSERT_FALSE(parse_completion_request(J(R"({"prompt":[1,2,3]})"), 100, &ids));
  EXPECT_TRUE(ids.prompt_is_ids);
  EXPECT_EQ(ids.prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  CompletionRequest bad;
  EXPECT_EQ(parse_completion_request(J(R"({"prompt":[1,200]})"), 100, &bad)->param, "prompt");
  EXPECT_EQ(parse_completion_request(J(R"({"prompt":["a","b"]})"), 100, &bad)->param, "prompt");
  EXPECT_EQ(parse_completion_request(J(R"({})"), 100, &bad)->param, "prompt");
  EXPECT_EQ(parse_completion_request(J(R"({"prompt":"x","suffix":"y"})"), 100, &bad)->param,
            "suffix");
}

TEST(ServerRequest, JsonBody) {
  ojson out;
  auto e = parse_json_body("{\"a\":", &out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
  EXPECT_EQ(e->code, "invalid_json");
  EXPECT_TRUE(parse_json_body("[1]", &out));
  EXPECT_FALSE(parse_json_body("{\"a\":1}", &out));
  const ojson body = error_body(bad_request("m", "p", "c"));
  EXPECT_EQ(body.dump(),
            R"({"error":{"message":"m","type":"invalid_request_error","param":"p","code":"c"}})");
  EXPECT_TRUE(error_body(bad_request("m"))["error"]["param"].is_null());
}

// A number that overflows a double was an escaping exception (500 with its text); now a 400
// naming the field, with the path of nested keys.
TEST(ServerRequest, JsonBodyOverflowingNumberNamesItsField) {
  ojson out;
  auto e = parse_json_body(R"({"messages":[],"temperature":1e400})", &out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
  EXPECT_EQ(e->param, "temperature");
  e = parse_json_body(R"({"logit_bias":{"42":-1e999}})", &out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "logit_bias.42");
  e = parse_json_body(R"({"a":{"b":1},"c":[{"d":2},1e400]})", &out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "c");
  EXPECT_FALSE(parse_json_body(R"({"t":1e300,"u":-1e-400})", &out));
}

TEST(ServerRequest, JsonBodyNestingIsBounded) {
  ojson out;
  const int deep = int(kMaxJsonDepth) + 1;
  auto e = parse_json_body(
      "{\"a\":" + std::string(size_t(deep), '[') + std::string(size_t(deep), ']') + "}", &out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
  EXPECT_FALSE(parse_json_body("{\"a\":" + std::string(size_t(kMaxJsonDepth - 1), '[') +
                                   std::string(size_t(kMaxJsonDepth - 1), ']') + "}",
                               &out));
  e = parse_json_body(std::string(100000, '[') + std::string(100000, ']'), &out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
}

TEST(ServerStop, MatchesAcrossPushesAndHoldsBackPrefixes) {
  StopMatcher m({"STOP", "\n\n"});
  std::string out;
  out += m.push("Hello S");
  EXPECT_EQ(out, "Hello ");  // "S" may start "STOP"
  out += m.push("T");
  EXPECT_EQ(out, "Hello ");
  out += m.push("ART and ST");
  EXPECT_EQ(out, "Hello START and ");
  out += m.push("OP later");
  EXPECT_EQ(out, "Hello START and ");
  EXPECT_TRUE(m.hit());
  EXPECT_EQ(m.push("more"), "");
  StopMatcher n({"é!"});
  EXPECT_EQ(n.push("caf\xC3\xA9"), "caf");  // the whole "é" is held, never half of it
  EXPECT_EQ(n.push("s"), "\xC3\xA9s");
  EXPECT_EQ(n.flush(), "");
  StopMatcher none({});
  EXPECT_EQ(none.push("abc"), "abc");
}

TEST(ServerSse, FramingRoundTrips) {
  EXPECT_EQ(sse_event("{\"a\":1}"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(sse_event("a\nb"), "data: a\ndata: b\n\n");
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
  const std::string stream = sse_event("{\"x\":1}") + ": comment\n\n" + sse_event("a\nb") +
                             "event: e\r\ndata: z\r\n\r\n" + sse_done();
  EXPECT_EQ(parse_sse(stream), (std::vector<std::string>{"{\"x\":1}", "a\nb", "z", "[DONE]"}));
}

TEST(ServerPrefixCache, LongestPrefixWithinLimitAndLru) {
  PrefixCache c(300);
  c.insert({1, 2, 3}, nullptr, 100, 1);
  c.insert({1, 2, 3, 4, 5}, nullptr, 100, 2);
  c.insert({9, 9}, nullptr, 100, 3);
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6};
  auto* e = c.lookup(prompt, prompt.size() - 1, 4);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->tokens.size(), 5u);
  e = c.lookup(prompt, 4, 5);  // the 5-token entry is too long here
  ASSERT_TRUE(e);
  EXPECT_EQ(e->tokens.size(), 3u);
  EXPECT_FALSE(c.lookup(std::vector<int32_t>{7}, 1, 6));
  c.insert({4, 4}, nullptr, 100, 7);  // evicts the LRU entry {9, 9}
  EXPECT_FALSE(c.contains(std::vector<int32_t>{9, 9}));
  EXPECT_TRUE(c.contains(std::vector<int32_t>{1, 2, 3}));
  EXPECT_LE(c.bytes(), 300u);
  EXPECT_EQ(common_prefix(std::vector<int32_t>{1, 2, 3}, std::vector<int32_t>{1, 2, 4}), 2u);
}

// Entries with a speculative decoder's state: only those serve a lookup that needs one; the same
// tokens taken again with the state replace an entry without it (and the bytes follow).
TEST(ServerPrefixCache, DecoderStateEntries) {
  auto e = Engine::load(std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/mtp/multi");
  ASSERT_TRUE(e.ok()) << e.status().message();
  auto session = e.value()->new_session();
  auto dec = SpeculativeDecoder::create(*session, 1);
  ASSERT_TRUE(dec.ok()) << dec.status().message();
  const std::shared_ptr<const SpeculativeSnapshot> spec = dec.value()->snapshot();
  ASSERT_TRUE(spec);
  PrefixCache c(1000);
  c.insert({1, 2, 3}, nullptr, 100, 1);
  c.insert({1, 2}, nullptr, 100, 2, spec);
  const std::vector<int32_t> prompt = {1, 2, 3, 4};
  EXPECT_EQ(c.lookup(prompt, 3, 3)->tokens.size(), 3u);
  EXPECT_EQ(c.lookup(prompt, 3, 4, true)->tokens.size(), 2u);
  EXPECT_FALSE(c.contains(std::vector<int32_t>{1, 2, 3}, true));
  EXPECT_TRUE(c.contains(std::vector<int32_t>{1, 2, 3}));
  c.insert({1, 2, 3}, nullptr, 300, 5, spec);  // upgraded in place of the plain entry
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c.bytes(), 400u);
  const auto* hit = c.lookup(prompt, 3, 6, true);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->tokens.size(), 3u);
  EXPECT_EQ(hit->spec, spec);
  c.insert({1, 2, 3}, nullptr, 50, 7);  // an entry that has the state keeps it
  EXPECT_EQ(c.bytes(), 400u);
  EXPECT_TRUE(c.contains(std::vector<int32_t>{1, 2, 3}, true));
}

}  // namespace
}  // namespace inkling::server
