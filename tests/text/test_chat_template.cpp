// ChatTemplate: parity with transformers' apply_chat_template on the real Inkling template
// (tests/fixtures/chat/renders.jsonl from tools/make_chat_fixtures.py), loading, and bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "inkling/chat.h"

namespace inkling {
namespace {

const char* kModelDir = INKLING_SOURCE_DIR "/tests/data/inkling";

ChatTemplate load_inkling() {
  Result<ChatTemplate> t = ChatTemplate::load(kModelDir);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.value();
}

TEST(ChatTemplate, RendersMatchTransformers) {
  ChatTemplate tmpl = load_inkling();
  std::ifstream in(INKLING_SOURCE_DIR "/tests/fixtures/chat/renders.jsonl");
  ASSERT_TRUE(in) << "missing tests/fixtures/chat/renders.jsonl";
  std::string line, report;
  int total = 0, matched = 0, renders = 0, errors = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    ++total;
    auto row = nlohmann::ordered_json::parse(line);
    Result<std::string> r = tmpl.render(row["request"]);
    bool same = false;
    if (row.contains("render")) {
      ++renders;
      same = r.ok() && r.value() == row["render"].get<std::string>();
    } else if (row.contains("error")) {
      ++errors;
      const std::string want = row["error"].get<std::string>();
      const std::string got = r.ok() ? "" : r.status().message();
      same = !r.ok() && (row["error_type"] == "TemplateError"
                             ? got == want
                             : got.size() > want.size() && got.rfind("[template] line ", 0) == 0 &&
                                   got.compare(got.size() - want.size(), want.size(), want) == 0);
    } else {  // prep_error: the request is refused before rendering
      ++errors;
      same = !r.ok() && r.status().message().rfind("[chat] ", 0) == 0;
    }
    if (same)
      ++matched;
    else
      report +=
          "\n  request: " + row["request"].dump() + "\n  want: " +
          (row.contains("render") ? row["render"].dump()
                                  : "error " + row.value("error", row.value("prep_error", ""))) +
          "\n  got:  " +
          (r.ok() ? nlohmann::json(r.value()).dump() : "error " + r.status().message()) + "\n";
  }
  std::printf("[chat parity] %d / %d requests match (%d renders, %d errors)\n", matched, total,
              renders, errors);
  EXPECT_GE(total, 150);
  EXPECT_EQ(matched, total) << report;
}

TEST(ChatTemplate, AcceptsPlainJson) {
  ChatTemplate tmpl = load_inkling();
  nlohmann::json req = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}};
  Result<std::string> r = tmpl.render(req);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value(),
            "<|message_system|><|content_text|>Thinking effort level: 0.9<|end_message|>"
            "<|message_user|><|content_text|>Hi<|end_message|><|message_model|>");
}

TEST(ChatTemplate, RaiseExceptionMessageIsExact) {
  ChatTemplate tmpl = load_inkling();
  auto req = nlohmann::ordered_json::parse(R"({"messages":[{"role":"developer","content":"x"}]})");
  Result<std::string> r = tmpl.render(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "Unknown message role: developer");
}

TEST(ChatTemplate, BadRequestsGiveClearErrors) {
  ChatTemplate tmpl = load_inkling();
  auto expect_err = [&](const char* json, const char* prefix) {
    Result<std::string> r = tmpl.render(nlohmann::ordered_json::parse(json));
    ASSERT_FALSE(r.ok()) << json;
    EXPECT_EQ(r.status().message().rfind(prefix, 0), 0u) << r.status().message();
  };
  expect_err("[]", "[chat] request must be a JSON object");
  expect_err("{}", "[chat] request needs a 'messages' array");
  expect_err(R"({"messages":"hi"})", "[chat] request needs a 'messages' array");
  expect_err(R"({"messages":["hi"]})", "[chat] messages[0] must be an object");
  expect_err(R"({"messages":[],"tools":{}})", "[chat] 'tools' must be an array");
  expect_err(R"({"messages":[],"tools":[1]})", "[chat] tools[0] must be an object");
  expect_err(R"({"messages":[],"add_generation_prompt":"yes"})", "[chat] 'add_generation_prompt'");
  expect_err(R"({"messages":[],"chat_template_kwargs":[]})", "[chat] 'chat_template_kwargs'");
  expect_err(R"({"messages":[],"chat_template_kwargs":{"messages":[]}})",
             "[chat] chat_template_kwargs may not set");
  expect_err(
      R"({"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{oops"}}]}]})",
      "[chat] messages[0].tool_calls[0].function.arguments is not valid JSON");
  expect_err(R"({"messages":[{"role":"user","content":[{"type":"video"}]}]})",
             "Unsupported content part type: video");
  expect_err(R"({"messages":[{"role":"assistant","tool_calls":[{"id":"x"}]}]})",
             "[template] line ");
}

TEST(ChatTemplate, DeepRequestNestingIsAnError) {
  ChatTemplate tmpl = load_inkling();
  std::string deep = std::string(5000, '[') + std::string(5000, ']');
  auto req = nlohmann::ordered_json::parse(R"({"messages":[{"role":"user","content":"x"}]})");
  req["chat_template_kwargs"] = {{"junk", nlohmann::ordered_json::parse(deep)}};
  Result<std::string> r = tmpl.render(req);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nesting"), std::string::npos) << r.status().message();
}

TEST(ChatTemplate, DeepToolCallArgumentsAreAnError) {
  ChatTemplate tmpl = load_inkling();
  auto req = nlohmann::ordered_json::parse(
      R"({"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f"}}]}]})");
  req["messages"][0]["tool_calls"][0]["function"]["arguments"] =
      std::string(100000, '[') + std::string(100000, ']');
  Result<std::string> r = tmpl.render(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "[chat] messages[0].tool_calls[0].function.arguments: JSON nested deeper than 128 "
            "levels (at byte 128)");
}

TEST(ChatTemplate, LoadFailures) {
  Result<ChatTemplate> missing = ChatTemplate::load("/nonexistent/dir");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message().rfind("[chat] /nonexistent/dir: no chat_template", 0), 0u);

  Result<ChatTemplate> syntax =
      ChatTemplate::from_string("line one\n{% for x in y %}\n{% endif %}");
  ASSERT_FALSE(syntax.ok());
  EXPECT_EQ(syntax.status().message(),
            "[template] line 3, column 4: Encountered unknown tag 'endif'. Jinja was looking for "
            "the following tags: 'endfor' or 'else'. The innermost block that needs to be closed "
            "is 'for'.");
}

TEST(ChatTemplate, LoadsTemplateFromTokenizerConfig) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("inkling_chat_cfg_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream(dir / "tokenizer_config.json")
        << R"({"eos_token": {"content": "</s>"}, "bos_token": "<s>", "chat_template": [)"
        << R"({"name": "default", "template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}{{ eos_token }}"},)"
        << R"({"name": "tool_use", "template": "tools:{{ tools|length }}"}]})";
  }
  Result<ChatTemplate> t = ChatTemplate::load(dir.string());
  ASSERT_TRUE(t.ok()) << t.status().message();
  auto plain =
      t->render(nlohmann::ordered_json::parse(R"({"messages":[{"role":"user","content":"a"}]})"));
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain.value(), "<s>a</s>");
  auto tools =
      t->render(nlohmann::ordered_json::parse(R"({"messages":[],"tools":[{"name":"f"}]})"));
  ASSERT_TRUE(tools.ok());
  EXPECT_EQ(tools.value(), "tools:1");
  fs::remove_all(dir);
}

TEST(ChatTemplate, ReasoningEffortPrecedence) {
  ChatTemplate tmpl = load_inkling();
  auto r = tmpl.render(nlohmann::ordered_json::parse(
      R"({"messages":[{"role":"user","content":"Hi"}],"reasoning_effort":"high",)"
      R"("chat_template_kwargs":{"reasoning_effort":"low"},"add_generation_prompt":false})"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(),
            "<|message_system|><|content_text|>Thinking effort level: 0.2<|end_message|>"
            "<|message_user|><|content_text|>Hi<|end_message|>");
}

}  // namespace
}  // namespace inkling
