// OutputParser on hand-built token streams: every case of spec §3 (reasoning, content, tool
// calls, header-less first block, back-to-back calls, prose before names, truncation, stops),
// with streaming invariants checked on every run and on char-by-char re-splits.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "inkling/chat.h"

namespace inkling {
namespace {

const SpecialTokenIds kIds;
constexpr int32_t kText = 1234;  // any ordinary token id

struct Tok {
  int32_t id;
  std::string text;
};
Tok T(std::string s) {
  return {kText, std::move(s)};
}
Tok C(int32_t id) {
  return {id, "<|ctl|>"};
}  // control tokens carry text that must never leak
const Tok kThink = C(kIds.content_thinking), kTextTok = C(kIds.content_text),
          kEnd = C(kIds.end_message), kModel = C(kIds.message_model),
          kInvoke = C(kIds.invoke_tool_json), kEos = C(kIds.end_sampling);

struct Outcome {
  ParsedMessage result;
  std::string reasoning, content;
  std::map<size_t, std::pair<std::string, std::string>> calls;  // index -> (name, arguments)
  bool stop = false;
};

Outcome run(const std::vector<Tok>& toks, OutputParserOptions opt = {}) {
  OutputParser p(kIds, opt);
  Outcome r;
  auto take = [&](const ParseDelta& d) {
    EXPECT_EQ(d.reasoning.find("<|"), std::string::npos);
    EXPECT_EQ(d.content.find("<|"), std::string::npos);
    r.reasoning += d.reasoning;
    r.content += d.content;
    for (const ToolCallDelta& tc : d.tool_calls) {
      auto [it, fresh] = r.calls.try_emplace(tc.index);
      if (fresh)
        EXPECT_FALSE(tc.name.empty()) << "first delta of a call must name it";
      else
        EXPECT_TRUE(tc.name.empty()) << "the name is sent once";
      it->second.first += tc.name;
      it->second.second += tc.arguments;
    }
    r.stop = r.stop || d.stop;
  };
  for (const Tok& t : toks) take(p.push(t.id, t.text));
  take(p.finish());
  r.result = p.result();
  // Streaming invariant: the deltas add up to the final message.
  EXPECT_EQ(r.reasoning, r.result.reasoning_content);
  EXPECT_EQ(r.content, r.result.content);
  EXPECT_EQ(r.calls.size(), r.result.tool_calls.size());
  for (const auto& [i, nc] : r.calls) {
    EXPECT_EQ(nc.first, r.result.tool_calls[i].name);
    if (r.result.tool_calls[i].complete) {
      EXPECT_EQ(nc.second, r.result.tool_calls[i].arguments);
    }
  }
  return r;
}

// Re-splits every text token into single characters: results must not change.
std::vector<Tok> char_split(const std::vector<Tok>& toks) {
  std::vector<Tok> out;
  for (const Tok& t : toks) {
    if (t.id != kText) {
      out.push_back(t);
      continue;
    }
    for (char c : t.text) out.push_back(T(std::string(1, c)));
  }
  return out;
}

void expect_same(const Outcome& a, const Outcome& b) {
  EXPECT_EQ(a.result.reasoning_content, b.result.reasoning_content);
  EXPECT_EQ(a.result.content, b.result.content);
  ASSERT_EQ(a.result.tool_calls.size(), b.result.tool_calls.size());
  for (size_t i = 0; i < a.result.tool_calls.size(); ++i) {
    EXPECT_EQ(a.result.tool_calls[i].name, b.result.tool_calls[i].name);
    EXPECT_EQ(a.result.tool_calls[i].arguments, b.result.tool_calls[i].arguments);
  }
  EXPECT_EQ(a.result.finish_reason, b.result.finish_reason);
}

Outcome run_both(const std::vector<Tok>& toks, OutputParserOptions opt = {}) {
  Outcome whole = run(toks, opt);
  expect_same(whole, run(char_split(toks), opt));
  return whole;
}

TEST(ChatParser, ReasoningThenContent) {
  Outcome r = run_both({kThink, T("Let me"), T(" think."), kEnd, kModel, kTextTok, T("Hello"),
                        T(" world"), kEnd, kEos});
  EXPECT_EQ(r.result.reasoning_content, "Let me think.");
  EXPECT_EQ(r.result.content, "Hello world");
  EXPECT_TRUE(r.result.tool_calls.empty());
  EXPECT_EQ(r.result.finish_reason, "stop");
  EXPECT_TRUE(r.stop);
}

TEST(ChatParser, HeaderlessTextBlockWithoutThinking) {
  // effort none: the model starts straight with a text block; <|end_message|> must not leak.
  Outcome r = run_both({kTextTok, T("Hi there"), kEnd, kEos});
  EXPECT_EQ(r.result.reasoning_content, "");
  EXPECT_EQ(r.result.content, "Hi there");
}

TEST(ChatParser, NeverStopsOnEndMessage) {
  OutputParser p(kIds);
  p.push(kIds.content_thinking, "");
  p.push(kText, "r");
  ParseDelta d = p.push(kIds.end_message, "<|end_message|>");
  EXPECT_FALSE(d.stop);
  EXPECT_FALSE(p.stopped());
  p.push(kIds.message_model, "");
  p.push(kIds.content_text, "");
  p.push(kText, "after");
  d = p.push(kIds.end_sampling, "");
  EXPECT_TRUE(d.stop);
  EXPECT_EQ(d.content, "after");
  EXPECT_EQ(p.result().content, "after");
  EXPECT_TRUE(p.push(kText, "ignored after stop").empty());
}

TEST(ChatParser, ToolCallAfterThinking) {
  Outcome r = run_both({kThink, T("need weather"), kEnd, kModel, T("get"), T("_weather"), kInvoke,
                        T("{\"name\":"), T("\"get_weather\""), T(",\"args\":{\"city\":"),
                        T("\"Paris\",\"days\":3}}"), kEnd, kEos});
  EXPECT_EQ(r.result.reasoning_content, "need weather");
  EXPECT_EQ(r.result.content, "");
  ASSERT_EQ(r.result.tool_calls.size(), 1u);
  EXPECT_EQ(r.result.tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.result.tool_calls[0].arguments, "{\"city\":\"Paris\",\"days\":3}");
  EXPECT_TRUE(r.result.tool_calls[0].complete);
  EXPECT_EQ(r.result.finish_reason, "tool_calls");
}

TEST(ChatParser, TurnOpeningWithToolCallLeaksNoName) {
  OutputParser p(kIds);
  std::string content;
  for (const Tok& t :
       std::vector<Tok>{T("search"), kInvoke, T("{\"name\":\"search\",\"args\":{}}"), kEnd, kEos}) {
    content += p.push(t.id, t.text).content;
    EXPECT_FALSE(p.in_reasoning());
  }
  EXPECT_EQ(content, "");
  ASSERT_EQ(p.result().tool_calls.size(), 1u);
  EXPECT_EQ(p.result().tool_calls[0].name, "search");
  EXPECT_EQ(p.result().tool_calls[0].arguments, "{}");
}

TEST(ChatParser, TwoCallsWithHeaders) {
  Outcome r = run_both({kThink, T("t"), kEnd, kModel, T("f"), kInvoke,
                        T("{\"name\":\"f\",\"args\":{\"x\":1}}"), kEnd, kModel, T("g"), kInvoke,
                        T("{\"name\":\"g\",\"args\":{\"y\":[1,2]}}"), kEnd, kEos});
  ASSERT_EQ(r.result.tool_calls.size(), 2u);
  EXPECT_EQ(r.result.tool_calls[0].name, "f");
  EXPECT_EQ(r.result.tool_calls[0].arguments, "{\"x\":1}");
  EXPECT_EQ(r.result.tool_calls[1].name, "g");
  EXPECT_EQ(r.result.tool_calls[1].arguments, "{\"y\":[1,2]}");
}

TEST(ChatParser, BackToBackCallsWithoutEndMessage) {
  Outcome r =
      run_both({T("f"), kInvoke, T("{\"name\":\"f\",\"args\":{\"a\":\"}\"}}g"), T("et_time"),
                kInvoke, T("{\"name\":\"get_time\",\"args\":{}}"), kModel, T("h"), kInvoke,
                T(" {\"name\": \"h\", \"args\": {\"k\": {\"n\": [1, {}]}}}"), kEos});
  ASSERT_EQ(r.result.tool_calls.size(), 3u);
  EXPECT_EQ(r.result.tool_calls[0].arguments, "{\"a\":\"}\"}");
  EXPECT_EQ(r.result.tool_calls[1].name, "get_time");
  EXPECT_EQ(r.result.tool_calls[2].name, "h");
  EXPECT_EQ(r.result.tool_calls[2].arguments, "{\"k\": {\"n\": [1, {}]}}");
  EXPECT_EQ(r.result.content, "");
}

TEST(ChatParser, StringAwareBraceScan) {
  const std::string args = R"({"code":"if (x) { return \"}\"; } // {{","q":"\\\"","n":null})";
  Outcome r =
      run_both({T("run"), kInvoke, T("{\"name\":\"run\",\"args\":" + args + "}"), kEnd, kEos});
  ASSERT_EQ(r.result.tool_calls.size(), 1u);
  EXPECT_EQ(r.result.tool_calls[0].arguments, args);
  EXPECT_TRUE(r.result.tool_calls[0].complete);
}

TEST(ChatParser, ProseOrTextMarkerBeforeToolName) {
  // <|content_text|> then the name: the name is not content.
  Outcome r = run_both({kModel, kTextTok, T("get_weather"), kInvoke,
                        T("{\"name\":\"get_weather\",\"args\":{}}"), kEnd, kEos});
  EXPECT_EQ(r.result.content, "");
  ASSERT_EQ(r.result.tool_calls.size(), 1u);
  EXPECT_EQ(r.result.tool_calls[0].name, "get_weather");
  // Prose in a text block, then a name: prose stays content, the name does not.
  r = run_both(
      {kTextTok, T("Let me check."), T(" lookup"), kInvoke, T("{\"args\":{\"q\":1}}"), kEnd, kEos});
  EXPECT_EQ(r.result.content, "Let me check. ");
  ASSERT_EQ(r.result.tool_calls.size(), 1u);
  EXPECT_EQ(r.result.tool_calls[0].name, "lookup");  // fallback: the JSON has no name
  EXPECT_EQ(r.result.tool_calls[0].arguments, "{\"q\":1}");
  // Prose in header position before the name is metadata: dropped.
  r = run_both({T("calling tool: my.tool-v2"), kInvoke, T("{\"args\":{}}"), kEnd, kEos});
  EXPECT_EQ(r.result.content, "");
  ASSERT_EQ(r.result.tool_calls.size(), 1u);
  EXPECT_EQ(r.result.tool_calls[0].name, "my.tool-v2");
}

TEST(ChatParser, JsonNameIsAuthoritative) {
  Outcome r =
      run_both({T("wrong_name"), kInvoke, T("{\"name\":\"right_name\",\"args\":{}}"), kEnd, kEos});
  ASSERT_EQ(r.result.tool_calls.size(), 1u);
  EXPECT_EQ(r.result.tool_calls[0].name, "right_name");
}

TEST(ChatParser, NamelessCallIsDropped) {
  Outcome r = run_both({kInvoke, T("{\"args\":{}}"), kEnd, kEos});
  EXPECT_TRUE(r.result.tool_calls.empty());
  EXPECT_EQ(r.result.finish_reason, "stop");
}

TEST(ChatParser, TruncatedPayloadGivesNameAndEmptyArgs) {
  Outcome r = run({kThink, T("r"), kEnd, kModel, T("f"), kInvoke,
                   T("{\"name\":\"f\",\"args\":{\"a\":"), T("[1, 2")});
  ASSERT_EQ(r.result.tool_calls.size(), 1u);
  EXPECT_EQ(r.result.tool_calls[0].name, "f");
  EXPECT_EQ(r.result.tool_calls[0].arguments, "{}");
  EXPECT_FALSE(r.result.tool_calls[0].complete);
  EXPECT_EQ(r.result.finish_reason, "length");
  EXPECT_FALSE(r.stop);
  // Cut inside the name: nothing is reported, and no half name leaks into content.
  r = run({kThink, T("r"), kEnd, kModel, T("get_wea")});
  EXPECT_TRUE(r.result.tool_calls.empty());
  EXPECT_EQ(r.result.content, "");
  // End of sampling in the middle of the payload.
  r = run({T("f"), kInvoke, T("{\"name\":\"f\",\"args\":{"), kEos});
  ASSERT_EQ(r.result.tool_calls.size(), 1u);
  EXPECT_FALSE(r.result.tool_calls[0].complete);
  EXPECT_EQ(r.result.finish_reason, "tool_calls");
}

TEST(ChatParser, HtmlEscapedQuotesInPayload) {
  Outcome r =
      run({T("f"), kInvoke,
           T("{&quot;name&quot;:&quot;f&quot;,&quot;args&quot;:{&quot;x&quot;:1}}"), kEnd, kEos});
  ASSERT_EQ(r.result.tool_calls.size(), 1u);
  EXPECT_EQ(r.result.tool_calls[0].name, "f");
  EXPECT_EQ(r.result.tool_calls[0].arguments, "{\"x\":1}");
  EXPECT_TRUE(r.result.tool_calls[0].complete);
}

TEST(ChatParser, DeeplyNestedPayloadDoesNotCrash) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  Outcome r = run({T("f"), kInvoke, T("{\"name\":\"f\",\"args\":" + deep + "}"), kEnd, kEos});
  ASSERT_EQ(r.result.tool_calls.size(), 1u);
  EXPECT_EQ(r.result.tool_calls[0].name, "f");
  EXPECT_FALSE(r.result.tool_calls[0].complete);
  r = run({T("f"), kInvoke, T(std::string(100000, '{')), kEos});
  ASSERT_EQ(r.result.tool_calls.size(), 1u);
  EXPECT_FALSE(r.result.tool_calls[0].complete);
}

TEST(ChatParser, ArgumentsStreamIncrementally) {
  OutputParser p(kIds);
  p.push(kText, "f");
  p.push(kIds.invoke_tool_json, "");
  ParseDelta d = p.push(kText, "{\"name\":\"f\",");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].name, "f");
  EXPECT_EQ(d.tool_calls[0].arguments, "");
  d = p.push(kText, "\"args\":{\"text\":\"hel");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].name, "");
  EXPECT_EQ(d.tool_calls[0].arguments, "{\"text\":\"hel");
  d = p.push(kText, "lo\"}}");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].arguments, "lo\"}");
}

TEST(ChatParser, StopTokens) {
  Outcome r = run_both({kTextTok, T("a"), C(kIds.endoftext), T("b")});
  EXPECT_EQ(r.result.content, "a");
  EXPECT_TRUE(r.stop);
  OutputParserOptions no_eot;
  no_eot.stop_on_endoftext = false;
  r = run_both({kTextTok, T("a"), C(kIds.endoftext), T("b"), kEos}, no_eot);
  EXPECT_EQ(r.result.content, "ab");
}

TEST(ChatParser, OtherControlTokensCarryNoText) {
  Outcome r =
      run_both({kTextTok, T("x"), C(kIds.message_user), C(200007), C(200054), T("y"), kEnd, kEos});
  EXPECT_EQ(r.result.content, "xy");
}

TEST(ChatParser, TextToolCallAndToolErrorAreVisibleText) {
  Outcome r = run_both({kModel, T("f"), C(kIds.invoke_tool_text), T("f(x=1)"), kEnd, kModel,
                        C(kIds.content_tool_error), T("oops"), kEnd, kEos});
  EXPECT_EQ(r.result.content, "f(x=1)oops");
  EXPECT_TRUE(r.result.tool_calls.empty());
}

TEST(ChatParser, StrayHeaderTextBeforeStopIsContent) {
  Outcome r = run_both({T("raw answer"), kEos});
  EXPECT_EQ(r.result.content, "raw answer");
}

TEST(ChatParser, InitialStateFromPromptTail) {
  OutputParserOptions opt;
  opt.prompt_last_token = kIds.content_thinking;
  Outcome r =
      run_both({T("forced thinking"), kEnd, kModel, kTextTok, T("answer"), kEnd, kEos}, opt);
  EXPECT_EQ(r.result.reasoning_content, "forced thinking");
  EXPECT_EQ(r.result.content, "answer");
  OutputParser p(kIds, opt);
  EXPECT_TRUE(p.in_reasoning());
}

TEST(ChatParser, ReasoningWithoutEndSwitchesOnTextMarker) {
  Outcome r = run_both({kThink, T("a"), kTextTok, T("b"), kEnd, kEos});
  EXPECT_EQ(r.result.reasoning_content, "a");
  EXPECT_EQ(r.result.content, "b");
}

TEST(ChatParser, SpecialTokenIdsFromLookup) {
  std::ifstream in(INKLING_SOURCE_DIR "/tests/data/inkling/special_tokens.json");
  ASSERT_TRUE(in);
  auto j = nlohmann::json::parse(in);
  std::map<std::string, int32_t> vocab;
  for (const auto& t : j["special_tokens"])
    vocab[t["content"].get<std::string>()] = t["id"].get<int32_t>();
  auto lookup = [&](std::string_view s) -> std::optional<int32_t> {
    auto it = vocab.find(std::string(s));
    if (it == vocab.end()) return std::nullopt;
    return it->second;
  };
  Result<SpecialTokenIds> ids = SpecialTokenIds::from_lookup(lookup);
  ASSERT_TRUE(ids.ok()) << ids.status().message();
  const SpecialTokenIds d;
  EXPECT_EQ(ids->endoftext, d.endoftext);
  EXPECT_EQ(ids->message_model, d.message_model);
  EXPECT_EQ(ids->content_text, d.content_text);
  EXPECT_EQ(ids->end_sampling, d.end_sampling);
  EXPECT_EQ(ids->content_thinking, d.content_thinking);
  EXPECT_EQ(ids->end_message, d.end_message);
  EXPECT_EQ(ids->content_tool_error, d.content_tool_error);
  EXPECT_EQ(ids->invoke_tool_json, d.invoke_tool_json);
  EXPECT_EQ(ids->invoke_tool_text, d.invoke_tool_text);
  EXPECT_EQ(ids->first_control, 199998);
  vocab.erase("<|end_message|>");
  Result<SpecialTokenIds> missing = SpecialTokenIds::from_lookup(lookup);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "[chat] special token <|end_message|> not in vocabulary");
}

}  // namespace
}  // namespace inkling

namespace inkling {
namespace {

// Random token streams over the control tokens and JSON-ish text: never crash, invariants hold.
TEST(ChatParser, RandomStreamsKeepInvariants) {
  std::mt19937 rng(99);
  const std::vector<Tok> controls = {
      kThink,   kTextTok, kEnd, kModel, kInvoke, C(kIds.message_user), C(kIds.invoke_tool_text),
      C(200030)};
  const std::vector<std::string> pieces = {
      "{", "}", "\"", "\\", "name", "\"name\":", "\"args\":", ":", ",",
      "f", " ", "x",  "[",  "]",    "1",         "&quot;",    "é"};
  for (int iter = 0; iter < 400; ++iter) {
    std::vector<Tok> toks;
    for (int k = 0, n = static_cast<int>(rng() % 40); k < n; ++k) {
      if (rng() % 4 == 0)
        toks.push_back(controls[rng() % controls.size()]);
      else
        toks.push_back(T(pieces[rng() % pieces.size()]));
    }
    if (rng() % 2) toks.push_back(kEos);
    Outcome r = run(toks);
    for (const ParsedToolCall& c : r.result.tool_calls) {
      EXPECT_FALSE(c.name.empty());
      EXPECT_EQ(c.name.find("<|"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace inkling
