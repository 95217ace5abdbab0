// The README's first command and a chat, run as a user runs them, on the shipped demo model
// (models/inkling-demo): `generate` from a text prompt prints the transformers greedy
// continuation (tests/fixtures/demo/greedy.json) as words and sentences, and `inkling chat`
// driven through stdin answers a verse request with a heading naming the requested word and a
// reference, then a verse; a fortune request with a fortune and a jargon question with a
// definition, reasoning about the requested word at a non-zero effort. Also the model's own
// tokenizer and the chat template against Hugging Face's (tests/fixtures/demo).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <vector>

#include "../common/demo_answers.h"
#include "../common/fixtures.h"
#include "../common/run_cli.h"
#include "inkling/chat.h"
#include "inkling/tokenizer.h"

namespace inkling {
namespace {

using testing::run_cli;
using testing::TempDir;
using testing::write_file;

const std::string kDemoModel = std::string(INKLING_SOURCE_DIR) + "/models/inkling-demo";
const std::string kRef = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/demo";

using testing::lower;

class CliDemo : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kDemoModel + "/model.safetensors"))
      GTEST_SKIP() << "no demo model";
  }
};

TEST_F(CliDemo, GenerateFromTextPromptPrintsSentences) {
  TempDir dir;
  auto r = run_cli({"generate", "-m", kDemoModel, "-p", "In the beginning", "-n", "48",
                    "--temperature", "0", "-t", "2"},
                   dir.path(), 120);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The same words transformers' greedy continuation starts with (48 of its 64 tokens).
  const auto ref =
      testing::read_json(std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/demo/greedy.json");
  const std::string want = ref["text48"].get<std::string>();
  EXPECT_EQ(r.out.substr(0, want.size()), want) << r.out;
  // Sentences: several words and at least one sentence mark.
  EXPECT_GE(std::count(r.out.begin(), r.out.end(), ' '), 20) << r.out;
  EXPECT_NE(r.out.find_first_of(".:;,"), std::string::npos) << r.out;
}

// The MLX 4-bit copy the model README tells users to make: `inkling quantize` writes it, the
// engine loads it (experts, attention, head in affine q4) and it still writes the same kind of
// text; its first greedy words agree with the bf16 model's.
TEST_F(CliDemo, Mlx4BitCopyLoadsAndWrites) {
  TempDir dir;
  const std::string q4 = dir.path() + "/inkling-demo-mlx4";
  auto q = run_cli({"quantize", "-m", kDemoModel, "-o", q4, "-q"}, dir.path(), 120);
  ASSERT_EQ(q.exit_code, 0) << q.err;
  auto r = run_cli(
      {"generate", "-m", q4, "-p", "In the beginning", "-n", "24", "--temperature", "0", "-t", "2"},
      dir.path(), 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto b = run_cli({"generate", "-m", kDemoModel, "-p", "In the beginning", "-n", "24",
                    "--temperature", "0", "-t", "2"},
                   dir.path(), 120);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_GE(std::count(r.out.begin(), r.out.end(), ' '), 10) << r.out;
  EXPECT_EQ(r.out.substr(0, 12), b.out.substr(0, 12)) << r.out << "\n---\n" << b.out;
  auto info = run_cli({"inspect", "-m", q4}, dir.path(), 60);
  EXPECT_NE(info.out.find("affine q4/g64"), std::string::npos) << info.out;
}

// Three turns at effort none: a verse about light (heading with the word and a reference, then
// the verse), a fortune, a Jargon File meaning.
TEST_F(CliDemo, ChatAnswersEachKindOfRequest) {
  TempDir dir;
  write_file(dir.path() + "/turns.txt",
             "Give me a verse about light\nTell me a fortune\nWhat does hacker mean?\n/exit\n");
  auto r = run_cli({"chat", "-m", kDemoModel, "-n", "100", "--temperature", "0", "-t", "2",
                    "--reasoning-effort", "none"},
                   dir.path(), 120, dir.path() + "/turns.txt");
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  std::vector<std::string> lines;
  for (size_t pos = 0, end; (end = r.out.find('\n', pos)) != std::string::npos; pos = end + 1)
    lines.push_back(r.out.substr(pos, end - pos));
  // Heading and verse are two lines; the fortune may span lines (its attribution); the meaning
  // is one line.
  ASSERT_GE(lines.size(), 4u) << r.out;
  const auto verse = testing::parse_verse_answer(r.out);
  EXPECT_TRUE(verse.ok) << r.out;
  EXPECT_EQ(verse.word, "light") << r.out;
  EXPECT_GE(testing::word_count(verse.verse), 4) << r.out;
  EXPECT_GE(std::count(lines[2].begin(), lines[2].end(), ' '), 3) << r.out;  // a fortune: words
  EXPECT_NE(lines.back().find(": "), std::string::npos) << lines.back();  // "term: [...] meaning"
}

// At the default effort the answer starts with a reasoning block about the requested word.
TEST_F(CliDemo, ChatReasonsAboutTheRequestedWord) {
  TempDir dir;
  write_file(dir.path() + "/turns.txt", "Give me a verse about light\n/exit\n");
  auto r = run_cli(
      {"chat", "-m", kDemoModel, "-n", "160", "--temperature", "0", "-t", "2", "--show-reasoning"},
      dir.path(), 120, dir.path() + "/turns.txt");
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t nl = r.out.find('\n');
  ASSERT_NE(nl, std::string::npos) << r.out;
  const std::string reasoning = r.out.substr(0, nl), answer = r.out.substr(nl + 1);
  EXPECT_NE(lower(reasoning).find("verse"), std::string::npos) << r.out;
  EXPECT_NE(lower(reasoning).find("light"), std::string::npos) << r.out;
  const auto verse = testing::parse_verse_answer(answer);
  EXPECT_TRUE(verse.ok) << r.out;
  EXPECT_EQ(verse.word, "light") << r.out;
}

// --reasoning-effort takes a number as the template does (0.9 is the number, not the string "0.9"),
// and a bad value is refused before any model loads.
TEST_F(CliDemo, ChatReasoningEffortNumberAndBadValue) {
  TempDir dir;
  write_file(dir.path() + "/turns.txt", "Give me a verse about light\n/exit\n");
  auto r = run_cli({"chat", "-m", kDemoModel, "-n", "60", "--temperature", "0", "-t", "2",
                    "--reasoning-effort", "0.9", "--show-reasoning"},
                   dir.path(), 120, dir.path() + "/turns.txt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(lower(r.out).find("light"), std::string::npos) << r.out;
  for (const char* bad : {"1.5", "bogus", "0.5x"}) {
    auto b = run_cli({"chat", "-m", dir.path() + "/no-such-model", "--reasoning-effort", bad},
                     dir.path(), 30);
    EXPECT_EQ(b.exit_code, 2) << bad;
    EXPECT_NE(b.err.find("--reasoning-effort"), std::string::npos) << b.err;
  }
}

// The model's own 4060-token BPE and Inkling's control tokens at ids 4000..4059: the engine's
// tokenizer and chat template give transformers' text and HF tokenizers' ids on validation
// documents and rendered validation chats (tests/fixtures/demo/tokenizer.jsonl).
TEST_F(CliDemo, TokenizerAndTemplateMatchHuggingFace) {
  auto tok = Tokenizer::load(kDemoModel);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  auto tmpl = ChatTemplate::load(kDemoModel);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().message();
  auto text = read_text_file(kRef + "/tokenizer.jsonl");
  ASSERT_TRUE(text.ok());
  size_t n = 0, chats = 0, pos = 0;
  const std::string& all = text.value();
  while (pos < all.size()) {
    size_t end = all.find('\n', pos);
    if (end == std::string::npos) end = all.size();
    auto j = nlohmann::ordered_json::parse(all.substr(pos, end - pos));
    pos = end + 1;
    const std::string t = j["text"].get<std::string>();
    std::vector<int32_t> want;
    for (const auto& v : j["ids"]) want.push_back(v.get<int32_t>());
    EXPECT_EQ((*tok)->encode(t), want) << t;
    if (j.contains("request")) {
      auto r = tmpl->render(j["request"]);
      ASSERT_TRUE(r.ok()) << r.status().message();
      EXPECT_EQ(r.value(), t);
      ++chats;
    }
    ++n;
  }
  EXPECT_GE(n, 40u);
  EXPECT_GE(chats, 20u);
}

TEST_F(CliDemo, TextPromptTokenizesLikeTheReference) {
  auto tok = Tokenizer::load(kDemoModel);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  const auto ref = testing::read_json(kRef + "/greedy.json");
  EXPECT_EQ((*tok)->encode(ref["prompt"].get<std::string>()), testing::json_ids(ref, "prompt_ids"));
  // the control tokens sit above the 4000 ordinary ones, named as in Inkling
  EXPECT_EQ((*tok)->token_id("<|content_model_end_sampling|>"), std::optional<int32_t>(4008));
  EXPECT_EQ((*tok)->token_id("<|message_model|>"), std::optional<int32_t>(4003));
}

}  // namespace
}  // namespace inkling
