// Parity of our tokenizer with tiktoken and HF tokenizers on the committed corpus
// (tests/fixtures/tokenizer/*.jsonl, made by tools/make_tokenizer_fixtures.py), with the real
// Inkling vocabulary loaded both from tokenizer.json and from tiktoken/tokenizer.model.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "inkling/tokenizer.h"
#include "tokenizer_test_util.h"

namespace inkling {
namespace {

using nlohmann::json;

std::vector<json> read_jsonl(const std::string& name) {
  std::vector<json> out;
  std::ifstream in(std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/tokenizer/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(json::parse(line));
  }
  return out;
}

std::string show(const std::string& s) {
  return json(s).dump();
}

void check_corpus(const Tokenizer& tok, const char* which) {
  const auto corpus = read_jsonl("corpus.jsonl");
  ASSERT_GE(corpus.size(), 2000u);
  size_t mismatches = 0, ordinary = 0, roundtrip_fail = 0;
  for (const json& rec : corpus) {
    const std::string text = rec["text"].get<std::string>();
    const auto want = rec["tiktoken"].get<std::vector<int32_t>>();
    ASSERT_EQ(want, rec["hf"].get<std::vector<int32_t>>())
        << "references disagree on " << show(text);
    const std::vector<int32_t> got = tok.encode(text);
    if (got != want && ++mismatches <= 10) {
      ADD_FAILURE() << which << ": ids differ for " << show(text) << "\n got  " << json(got).dump()
                    << "\n want " << json(want).dump();
    }
    if (rec.contains("ordinary")) {
      ++ordinary;
      EXPECT_EQ(tok.encode(text, /*allow_special=*/false),
                rec["ordinary"].get<std::vector<int32_t>>())
          << which << ": encode_ordinary differs for " << show(text);
    }
    if (tok.decode(got) != text && ++roundtrip_fail <= 10) {
      ADD_FAILURE() << which << ": decode(encode(x)) != x for " << show(text);
    }
  }
  EXPECT_EQ(mismatches, 0u) << which;
  EXPECT_EQ(roundtrip_fail, 0u) << which;
  EXPECT_GT(ordinary, 100u);
  std::printf(
      "[ parity  ] %s: %zu strings, %zu id mismatches, %zu with specials, %zu round-trip "
      "failures\n",
      which, corpus.size(), mismatches, ordinary, roundtrip_fail);
}

TEST(TokenizerParity, CorpusTokenizerJson) {
  auto tok = testing::hf_tokenizer();
  ASSERT_TRUE(tok);
  check_corpus(*tok, "tokenizer.json");
}

TEST(TokenizerParity, CorpusTiktokenModel) {
  auto tok = testing::tiktoken_tokenizer();
  ASSERT_TRUE(tok);
  check_corpus(*tok, "tiktoken/tokenizer.model");
}

TEST(TokenizerParity, LossyDecodeMatchesPython) {
  const auto cases = read_jsonl("decode.jsonl");
  ASSERT_GE(cases.size(), 300u);
  for (const auto& tok : {testing::hf_tokenizer(), testing::tiktoken_tokenizer()}) {
    ASSERT_TRUE(tok);
    for (const json& c : cases) {
      const auto ids = c["ids"].get<std::vector<int32_t>>();
      EXPECT_EQ(tok->decode(ids), c["text"].get<std::string>()) << json(ids).dump();
    }
  }
}

TEST(TokenizerParity, StreamingEqualsDecodeOnCorpus) {
  auto tok = testing::hf_tokenizer();
  ASSERT_TRUE(tok);
  for (const json& rec : read_jsonl("corpus.jsonl")) {
    const auto ids = rec["tiktoken"].get<std::vector<int32_t>>();
    StreamDecoder sd(tok);
    std::string streamed;
    for (int32_t id : ids) streamed += sd.push(id);
    streamed += sd.flush();
    ASSERT_EQ(streamed, rec["text"].get<std::string>());
  }
}

}  // namespace
}  // namespace inkling
