// The text subcommands and text prompts, run as a user runs them: `tokenize` / `detokenize`
// against the tokenizer parity corpus, and `generate -p` with a tokenizer folder.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "../common/run_cli.h"

namespace inkling {
namespace {

using testing::run_cli;
using testing::TempDir;
using testing::write_file;

const std::string kTextTok = std::string(INKLING_SOURCE_DIR) + "/tests/data/inkling";

// The first lines of the committed parity corpus: {"text", "tiktoken", "hf"} per line.
std::vector<nlohmann::json> corpus(size_t n) {
  std::ifstream in(std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/tokenizer/corpus.jsonl");
  std::vector<nlohmann::json> out;
  for (std::string line; out.size() < n && std::getline(in, line);)
    out.push_back(nlohmann::json::parse(line));
  return out;
}

TEST(CliText, TokenizeJsonlMatchesTiktoken) {
  if (!std::filesystem::exists(kTextTok + "/tokenizer.json"))
    GTEST_SKIP() << "no shared tokenizer data";
  TempDir dir;
  auto rows = corpus(300);
  ASSERT_FALSE(rows.empty());
  std::string input;
  for (const auto& r : rows) input += r["text"].dump() + "\n";
  write_file(dir.path() + "/in.jsonl", input);
  auto r =
      run_cli({"tokenize", "-m", kTextTok, "--jsonl"}, dir.path(), 60, dir.path() + "/in.jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream out(r.out);
  std::string line;
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_TRUE(std::getline(out, line)) << "missing output line " << i;
    EXPECT_EQ(nlohmann::json::parse(line), rows[i]["tiktoken"]) << "line " << i;
  }
}

TEST(CliText, DetokenizeRoundTripsJsonl) {
  if (!std::filesystem::exists(kTextTok + "/tokenizer.json"))
    GTEST_SKIP() << "no shared tokenizer data";
  TempDir dir;
  auto rows = corpus(300);
  std::string input;
  for (const auto& r : rows) input += r["tiktoken"].dump() + "\n";
  write_file(dir.path() + "/ids.jsonl", input);
  auto r =
      run_cli({"detokenize", "-m", kTextTok, "--jsonl"}, dir.path(), 60, dir.path() + "/ids.jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream out(r.out);
  std::string line;
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_TRUE(std::getline(out, line));
    EXPECT_EQ(nlohmann::json::parse(line), rows[i]["text"]) << "line " << i;
  }
}

TEST(CliText, TokenizeWholeInputAndSpecialTokens) {
  if (!std::filesystem::exists(kTextTok + "/tokenizer.json"))
    GTEST_SKIP() << "no shared tokenizer data";
  TempDir dir;
  write_file(dir.path() + "/in.txt", "Hi<|content_model_end_sampling|>");
  auto r = run_cli({"tokenize", "-m", kTextTok}, dir.path(), 60, dir.path() + "/in.txt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto ids = nlohmann::json::parse(r.out);
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids.back(), 200006);
  auto plain =
      run_cli({"tokenize", "-m", kTextTok, "--no-special"}, dir.path(), 60, dir.path() + "/in.txt");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_GT(nlohmann::json::parse(plain.out).size(), ids.size());
}

TEST(CliText, BadInputIsOneClearError) {
  if (!std::filesystem::exists(kTextTok + "/tokenizer.json"))
    GTEST_SKIP() << "no shared tokenizer data";
  TempDir dir;
  write_file(dir.path() + "/bad.json", "[1, \"x\"]");
  auto r = run_cli({"detokenize", "-m", kTextTok}, dir.path(), 60, dir.path() + "/bad.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("error: "), std::string::npos) << r.err;
  write_file(dir.path() + "/bad.txt", std::string("ok \xff\xfe", 5));
  r = run_cli({"tokenize", "-m", kTextTok}, dir.path(), 60, dir.path() + "/bad.txt");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("UTF-8"), std::string::npos) << r.err;
  r = run_cli({"tokenize", "-m", dir.path() + "/nothing-here"}, dir.path(), 60,
              dir.path() + "/bad.txt");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("nothing-here"), std::string::npos) << r.err;
}

// `render` and `render --ids` against transformers' renders and HF tokenizer ids.
TEST(CliText, RenderMatchesTransformers) {
  if (!std::filesystem::exists(kTextTok + "/chat_template.jinja")) GTEST_SKIP() << "no shared data";
  TempDir dir;
  std::ifstream in(std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/chat/renders.jsonl");
  int renders = 0, ids = 0, errors = 0;
  // A sample (each --ids run loads the 200k vocabulary); tests/text/test_chat_ids.cpp checks all.
  for (std::string line; std::getline(in, line) && renders < 12;) {
    const auto row = nlohmann::ordered_json::parse(line);
    write_file(dir.path() + "/req.json", row["request"].dump());
    auto r = run_cli({"render", "-m", kTextTok}, dir.path(), 60, dir.path() + "/req.json");
    if (row.contains("error")) {
      EXPECT_EQ(r.exit_code, 2) << line;
      EXPECT_NE(r.err.find(row["error"].get<std::string>()), std::string::npos) << r.err;
      ++errors;
      continue;
    }
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, row["render"].get<std::string>());
    ++renders;
    if (row.contains("ids") && ids < 4) {
      auto ri =
          run_cli({"render", "-m", kTextTok, "--ids"}, dir.path(), 60, dir.path() + "/req.json");
      ASSERT_EQ(ri.exit_code, 0) << ri.err;
      EXPECT_EQ(nlohmann::ordered_json::parse(ri.out), row["ids"]);
      ++ids;
    }
  }
  EXPECT_EQ(renders, 12);
  EXPECT_EQ(ids, 4);
}

TEST(CliText, GenerateRequiresExactlyOnePromptForm) {
  TempDir dir;
  const std::string model = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/full/og";
  auto r = run_cli({"generate", "-m", model, "-n", "2"}, dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  // A text prompt needs tokenizer files; the fixture has none.
  r = run_cli({"generate", "-m", model, "-p", "hello", "-n", "2"}, dir.path());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("error: "), std::string::npos);
}

}  // namespace
}  // namespace inkling
