// Tokenizer unit tests: known ids of the real Inkling vocabulary, added-token splitting,
// lossy decoding, the streaming decoder, invalid UTF-8, thread safety, and bad input files
// (every failure a clear Status naming the file, never a crash).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "inkling/tokenizer.h"
#include "text/tokenizer/pretokenizer.h"
#include "text/tokenizer/utf8.h"
#include "tokenizer_test_util.h"

namespace inkling {
namespace {

namespace fs = std::filesystem;
using ::inkling::testing::hf_tokenizer;
using ::inkling::testing::shared_data;
using ::inkling::testing::tiktoken_tokenizer;
using Ids = std::vector<int32_t>;

std::vector<std::shared_ptr<const Tokenizer>> both() {
  return {hf_tokenizer(), tiktoken_tokenizer()};
}

TEST(Tokenizer, KnownVector) {
  for (const auto& tok : both()) {
    ASSERT_TRUE(tok);
    EXPECT_EQ(tok->encode("The capital of France is"), (Ids{976, 9029, 328, 10128, 382}));
    EXPECT_EQ(tok->token_id(" Paris"), 12650);
    EXPECT_EQ(tok->token_id("."), 13);
    EXPECT_EQ(tok->token_id(" the"), 290);
    EXPECT_EQ(tok->encode(""), Ids{});
  }
}

TEST(Tokenizer, SpecialTokenIds) {
  for (const auto& tok : both()) {
    ASSERT_TRUE(tok);
    EXPECT_EQ(tok->vocab_size(), 200058u);
    EXPECT_EQ(tok->token_id("<|content_model_end_sampling|>"), 200006);
    EXPECT_EQ(tok->token_id("<|message_user|>"), 200000);
    EXPECT_EQ(tok->token_id("<|message_model|>"), 200001);
    EXPECT_EQ(tok->token_id("<|end_message|>"), 200010);
    EXPECT_EQ(tok->token_id("<|endoftext|>"), 199999);
    EXPECT_EQ(tok->token_id("<|content_invoke_tool_text|>"), 200057);
    EXPECT_EQ(tok->token_id("<|no_such_token|>"), std::nullopt);
    EXPECT_TRUE(tok->is_special(200006));
    EXPECT_TRUE(tok->is_special(199999));
    EXPECT_FALSE(tok->is_special(976));
    EXPECT_FALSE(tok->is_special(-1));
    EXPECT_FALSE(tok->is_special(300000));
    EXPECT_EQ(tok->token_bytes(200006), "<|content_model_end_sampling|>");
    EXPECT_EQ(tok->token_bytes(976), "The");
    EXPECT_EQ(tok->token_bytes(-5), "");
    EXPECT_EQ(tok->token_bytes(200058), "");
  }
  // Every id in special_tokens.json, as both loaders see it.
  std::ifstream in(shared_data("inkling/special_tokens.json"));
  const auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j["special_tokens"].size(), 60u);
  for (const auto& s : j["special_tokens"]) {
    for (const auto& tok : both()) {
      EXPECT_EQ(tok->token_id(s["content"].get<std::string>()), s["id"].get<int32_t>());
      EXPECT_TRUE(tok->is_special(s["id"].get<int32_t>()));
    }
  }
}

TEST(Tokenizer, AddedTokensSplitFirst) {
  auto tok = hf_tokenizer();
  ASSERT_TRUE(tok);
  const Ids ids = tok->encode("<|message_user|>Hi<|end_message|><|message_model|>");
  ASSERT_GE(ids.size(), 4u);
  EXPECT_EQ(ids.front(), 200000);
  EXPECT_EQ(ids[ids.size() - 2], 200010);
  EXPECT_EQ(ids.back(), 200001);
  EXPECT_EQ(Ids(ids.begin() + 1, ids.end() - 2), tok->encode("Hi"));
  // allow_special=false: the same text as plain text (tiktoken encode_ordinary).
  for (int32_t id : tok->encode("<|message_user|>Hi<|end_message|>", false)) {
    EXPECT_LT(id, 199998);
  }
  // A near miss is text.
  for (int32_t id : tok->encode("<|message_user|<|message_use|>")) EXPECT_LT(id, 199998);
  EXPECT_EQ(tok->decode(tok->encode("a<|endoftext|>b")), "a<|endoftext|>b");
  EXPECT_EQ(tok->decode(tok->encode("a<|endoftext|>b"), /*skip_special=*/true), "ab");
}

TEST(Tokenizer, AddedTokenFlags) {
  // Synthetic vocabulary: the 256 bytes plus added tokens exercising lstrip/rstrip/single_word.
  const fs::path dir = testing::temp_dir("flags");
  {
    std::ofstream f(dir / "r.tiktoken");
    static const char* kB64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int b = 0; b < 256; ++b) {
      f << kB64[b >> 2] << kB64[(b & 3) << 4] << "== " << b << "\n";
    }
  }
  std::vector<AddedToken> added = {
      {300, "<L>", true, true, false, false},      {301, "<R>", true, false, true, false},
      {302, "word", false, false, false, true},    {303, "<LONG>", true, false, false, false},
      {304, "<LONG>>", true, false, false, false},
  };
  auto r = Tokenizer::load_tiktoken((dir / "r.tiktoken").string(), added);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& tok = *r.value();
  EXPECT_EQ(tok.vocab_size(), 305u);
  EXPECT_EQ(tok.encode("a  <L>"), (Ids{'a', 300}));    // lstrip eats the spaces
  EXPECT_EQ(tok.encode("<R> \n b"), (Ids{301, 'b'}));  // rstrip eats " \n "
  EXPECT_EQ(tok.encode("a word b"), (Ids{'a', ' ', 302, ' ', 'b'}));
  EXPECT_EQ(tok.encode("swordfish"), (Ids{'s', 'w', 'o', 'r', 'd', 'f', 'i', 's', 'h'}));
  EXPECT_EQ(tok.encode("<LONG>>"), (Ids{304}));  // longest match
  EXPECT_EQ(tok.encode("<LONG>"), (Ids{303}));
  EXPECT_FALSE(tok.is_special(302));
  EXPECT_TRUE(tok.is_added(302));
  // allow_special=false keeps non-special added tokens (HF split_special_tokens semantics).
  EXPECT_EQ(tok.encode("word<L>", false), (Ids{302, '<', 'L', '>'}));
  fs::remove_all(dir);
}

TEST(Tokenizer, InvalidUtf8Input) {
  auto tok = hf_tokenizer();
  ASSERT_TRUE(tok);
  const std::string bad =
      "ab\xFF"
      "cd\xE2\x82";
  auto checked = tok->encode_checked(bad);
  ASSERT_FALSE(checked.ok());
  EXPECT_NE(checked.status().message().find("[tokenizer]"), std::string::npos);
  EXPECT_NE(checked.status().message().find("offset 2"), std::string::npos)
      << checked.status().message();
  // encode() substitutes U+FFFD per maximal invalid subpart, like Python's errors="replace".
  EXPECT_EQ(tok->encode(bad), tok->encode("ab\xEF\xBF\xBD"
                                          "cd\xEF\xBF\xBD"));
  // A CESU/WTF-8 surrogate (ED A0 80) is three invalid subparts in Python -> three U+FFFD.
  EXPECT_EQ(tok->decode(tok->encode("\xED\xA0\x80")), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  auto ok = tok->encode_checked("h\xC3\xA9llo");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.value(), tok->encode("h\xC3\xA9llo"));
}

TEST(Tokenizer, LossyDecode) {
  auto tok = hf_tokenizer();
  ASSERT_TRUE(tok);
  auto byte_id = [&](unsigned char b) {
    return tok->token_id(std::string(1, static_cast<char>(b))).value();
  };
  EXPECT_EQ(tok->decode(Ids{byte_id(0xF0), byte_id(0x9F)}), "\xEF\xBF\xBD");
  EXPECT_EQ(tok->decode(Ids{byte_id(0xFF), byte_id('a')}),
            "\xEF\xBF\xBD"
            "a");
  EXPECT_EQ(tok->decode(Ids{byte_id(0xC3)}), "\xEF\xBF\xBD");
  EXPECT_EQ(tok->decode(Ids{byte_id(0xC3), byte_id(0xA9)}), "\xC3\xA9");
  EXPECT_EQ(tok->decode(Ids{byte_id('a'), -1, 999999, byte_id('b')}), "ab");  // unknown: skipped
  std::string out;
  utf8::append_lossy("\xF4\x90\x80\x80", &out);  // beyond U+10FFFF: 4 subparts
  EXPECT_EQ(out, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  out.clear();
  utf8::append_lossy("\xE0\x80", &out);  // overlong lead: 2 subparts
  EXPECT_EQ(out, "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(Tokenizer, StreamDecoderHoldsPartialCharacters) {
  auto tok = hf_tokenizer();
  ASSERT_TRUE(tok);
  auto byte_id = [&](unsigned char b) {
    return tok->token_id(std::string(1, static_cast<char>(b))).value();
  };
  StreamDecoder sd(tok);
  // U+1F600 split into its four bytes, one token each.
  EXPECT_EQ(sd.push(byte_id('x')), "x");
  EXPECT_EQ(sd.push(byte_id(0xF0)), "");
  EXPECT_EQ(sd.push(byte_id(0x9F)), "");
  EXPECT_EQ(sd.push(byte_id(0x98)), "");
  EXPECT_EQ(sd.push(byte_id(0x80)), "\xF0\x9F\x98\x80");
  EXPECT_EQ(sd.flush(), "");
  // A real multi-token emoji: every piece is complete UTF-8, and the pieces add up.
  const std::string text = "ok \xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB \xF0\x9F\xAB\xA9!";
  std::string all;
  for (int32_t id : tok->encode(text)) {
    const std::string piece = sd.push(id);
    EXPECT_TRUE(utf8::is_valid(piece));
    all += piece;
  }
  all += sd.flush();
  EXPECT_EQ(all, text);
  // Held bytes that never complete come out as U+FFFD on flush.
  EXPECT_EQ(sd.push(byte_id(0xE2)), "");
  EXPECT_EQ(sd.push(byte_id(0x82)), "");
  EXPECT_EQ(sd.flush(), "\xEF\xBF\xBD");
  // An invalid continuation is emitted at once.
  EXPECT_EQ(sd.push(byte_id(0xE2)), "");
  EXPECT_EQ(sd.push(byte_id('a')),
            "\xEF\xBF\xBD"
            "a");
  EXPECT_EQ(sd.push(200006), "<|content_model_end_sampling|>");
  StreamDecoder skip(tok, /*skip_special=*/true);
  EXPECT_EQ(skip.push(200006), "");
}

TEST(Tokenizer, IncompleteTail) {
  EXPECT_EQ(utf8::incomplete_tail(""), 0u);
  EXPECT_EQ(utf8::incomplete_tail("a"), 0u);
  EXPECT_EQ(utf8::incomplete_tail("a\xC3"), 1u);
  EXPECT_EQ(utf8::incomplete_tail("\xC3\xA9"), 0u);
  EXPECT_EQ(utf8::incomplete_tail("\xE2\x82"), 2u);
  EXPECT_EQ(utf8::incomplete_tail("\xF0\x9F\x98"), 3u);
  EXPECT_EQ(utf8::incomplete_tail("\xE0\x80"), 0u);  // can never complete
  EXPECT_EQ(utf8::incomplete_tail("\xED\xA0"), 0u);  // surrogate
  EXPECT_EQ(utf8::incomplete_tail("\xF5"), 0u);
  EXPECT_EQ(utf8::incomplete_tail("\x80\x80\x80"), 0u);
}

TEST(Tokenizer, LongInputs) {
  auto tok = hf_tokenizer();
  ASSERT_TRUE(tok);
  for (const std::string& text :
       {std::string(1 << 20, ' '), std::string(1 << 20, 'a'), std::string(200000, '\n') + "x",
        std::string(100000, '9'), std::string(300000, '!')}) {
    const Ids ids = tok->encode(text);
    EXPECT_FALSE(ids.empty());
    EXPECT_EQ(tok->decode(ids), text);
  }
}

TEST(Tokenizer, ConcurrentEncodeIsConsistent) {
  auto tok = hf_tokenizer();
  ASSERT_TRUE(tok);
  std::string text;
  for (int i = 0; i < 200; ++i) {
    text += "Line " + std::to_string(i) + ": Привет, 世界! don't   stop\t\n<|end_message|> ";
  }
  const Ids want = tok->encode(text);
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      int good = 0;
      for (int k = 0; k < 20; ++k) good += tok->encode(text) == want;
      ok[t] = good;
    });
  }
  for (auto& th : threads) th.join();
  for (int g : ok) EXPECT_EQ(g, 20);
}

TEST(Tokenizer, PatternIsO200kAndTranslated) {
  auto tok = hf_tokenizer();
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->pattern(), tok::kO200kPattern);  // tokenizer.json's Split regex
  EXPECT_EQ(tiktoken_tokenizer()->pattern(), tok::kO200kPattern);
  auto t = tok::translate_pattern(R"(a\sb[^\s\p{L}]\S)");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t.value().find("\\s"), std::string::npos);
  EXPECT_NE(t.value().find("\\x{85}"), std::string::npos);  // NEL is White_Space, unlike \p{Xps}
  EXPECT_FALSE(tok::translate_pattern(R"([\S])").ok());
  // U+0085 is whitespace for tiktoken/HF: " \u0085" stays one piece before a word.
  EXPECT_EQ(tok->encode("a \xC2\x85 b"), (Ids{64, 1322, 227, 287}));
  // ... and in a run: "  \u0085\u0085" is one whitespace piece (tiktoken ids).
  EXPECT_EQ(tok->encode("!  //  \xC2\x85\xC2\x85\xE3\x80\x80word"),
            (Ids{0, 220, 602, 256, 126, 227, 126, 227, 1397, 1801}));
}

// ---- Bad input files -------------------------------------------------------------------------

class TokenizerBadInput : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::temp_dir("bad"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& content) {
    const fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }
  // A tokenizer.json with a 256-byte vocabulary, patched by `edit`.
  std::string hf_json(const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j;
    j["normalizer"] = nullptr;
    j["pre_tokenizer"] = {
        {"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"},
           {"pattern", {{"Regex", tok::kO200kPattern}}},
           {"behavior", "Isolated"},
           {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
    j["decoder"] = {{"type", "ByteLevel"}};
    j["added_tokens"] = nlohmann::json::array();
    nlohmann::json vocab = nlohmann::json::object();
    // bytes_to_unicode for printable ASCII is the identity; use those plus the rest.
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      std::string key;
      utf8::append_code_point(printable ? b : 256 + n++, &key);
      vocab[key] = b;
    }
    vocab["ab"] = 256;
    j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a b"}}, {"ignore_merges", true}};
    edit(j);
    return write("tokenizer.json", j.dump());
  }
  void expect_error(const Result<std::shared_ptr<const Tokenizer>>& r, const std::string& file,
                    const std::string& detail) {
    ASSERT_FALSE(r.ok());
    const std::string& m = r.status().message();
    EXPECT_EQ(m.rfind("[tokenizer] ", 0), 0u) << m;
    EXPECT_NE(m.find(file), std::string::npos) << m;
    EXPECT_NE(m.find(detail), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  fs::path dir_;
};

TEST_F(TokenizerBadInput, SyntheticHfJsonLoads) {
  auto r = Tokenizer::load_hf_json(hf_json([](nlohmann::json&) {}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value()->encode("abc"), (Ids{256, 'c'}));
}

TEST_F(TokenizerBadInput, MissingFilesAndDirs) {
  expect_error(Tokenizer::load_hf_json((dir_ / "nope.json").string()), "nope.json", "no such file");
  expect_error(Tokenizer::load_tiktoken((dir_ / "nope.tiktoken").string(), {}), "nope.tiktoken",
               "no such file");
  expect_error(Tokenizer::load((dir_ / "missing").string()), "missing", "no such directory");
  expect_error(Tokenizer::load(dir_.string()), dir_.string(), "no tokenizer.json");
  expect_error(Tokenizer::load_hf_json(dir_.string()), dir_.string(), "is a directory");
}

TEST_F(TokenizerBadInput, DeeplyNestedJsonIsRefusedBeforeParsing) {
  const std::string deep = "{\"x\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  expect_error(Tokenizer::load_hf_json(write("deep.json", deep)), "deep.json",
               "JSON nested deeper than 128 levels");
  write("tiktoken/tokenizer.model", "IQ== 0\n");
  write("special_tokens.json", deep);
  expect_error(Tokenizer::load(dir_.string()), "special_tokens.json", "nested deeper than 128");
}

TEST_F(TokenizerBadInput, MalformedTokenizerJson) {
  expect_error(Tokenizer::load_hf_json(write("a.json", "{\"model\": ")), "a.json",
               "not valid JSON");
  expect_error(Tokenizer::load_hf_json(write("b.json", "[1,2]")), "b.json", "not a JSON object");
  expect_error(Tokenizer::load_hf_json(hf_json([](auto& j) { j["model"].erase("vocab"); })),
               "tokenizer.json", "model.vocab: missing");
  expect_error(Tokenizer::load_hf_json(hf_json([](auto& j) { j.erase("model"); })),
               "tokenizer.json", "model: missing");
  expect_error(Tokenizer::load_hf_json(hf_json([](auto& j) { j["model"]["vocab"] = 5; })),
               "tokenizer.json", "model.vocab: not an object");
  expect_error(Tokenizer::load_hf_json(hf_json([](auto& j) { j["model"]["vocab"]["xy"] = "7"; })),
               "tokenizer.json", "id is not an integer");
  expect_error(Tokenizer::load_hf_json(hf_json([](auto& j) { j["model"]["vocab"]["\u4e2d"] = 9; })),
               "tokenizer.json", "not a byte-level token");
  expect_error(Tokenizer::load_hf_json(hf_json([](auto& j) { j["model"]["vocab"]["a"] = 98; })),
               "tokenizer.json", "token id 98 appears twice");
  expect_error(Tokenizer::load_hf_json(hf_json([](auto& j) { j["model"]["vocab"].erase("a"); })),
               "tokenizer.json", "single byte 0x61");
  expect_error(Tokenizer::load_hf_json(hf_json([](auto& j) { j["model"]["vocab"]["q"] = -4; })),
               "tokenizer.json", "out of range");
  expect_error(Tokenizer::load_hf_json(hf_json([](auto& j) {
                 j["normalizer"] = {{"type", "NFC"}};
               })),
               "tokenizer.json", "normalizer");
  expect_error(Tokenizer::load_hf_json(hf_json([](auto& j) { j["pre_tokenizer"] = nullptr; })),
               "tokenizer.json", "pre_tokenizer");
  expect_error(Tokenizer::load_hf_json(hf_json([](auto& j) {
                 j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
               })),
               "tokenizer.json", "regex does not compile");
  expect_error(Tokenizer::load_hf_json(hf_json([](auto& j) {
                 j["added_tokens"] = {{{"id", 300}, {"special", true}}};
               })),
               "tokenizer.json", "added_tokens[0].content");
}

TEST_F(TokenizerBadInput, BadMerges) {
  expect_error(Tokenizer::load_hf_json(hf_json([](auto& j) { j["model"].erase("merges"); })),
               "tokenizer.json", "model.merges: missing");
  expect_error(Tokenizer::load_hf_json(hf_json([](auto& j) { j["model"]["merges"] = {12}; })),
               "tokenizer.json", "merges[0]: not a string");
  expect_error(Tokenizer::load_hf_json(hf_json([](auto& j) { j["model"]["merges"] = {"ab"}; })),
               "tokenizer.json", "merges[0]: expected \"left right\"");
  expect_error(Tokenizer::load_hf_json(hf_json([](auto& j) { j["model"]["merges"] = {"a c"}; })),
               "tokenizer.json", "merged token \"ac\" is not in the vocabulary");
  expect_error(
      Tokenizer::load_hf_json(hf_json([](auto& j) { j["model"]["merges"] = {"a \u4e2d"}; })),
      "tokenizer.json", "not in the vocabulary");
  expect_error(Tokenizer::load_hf_json(
                   hf_json([](auto& j) { j["model"]["merges"] = nlohmann::json::array(); })),
               "tokenizer.json", "not produced by any merge");
}

TEST_F(TokenizerBadInput, BadRanksFile) {
  expect_error(Tokenizer::load_tiktoken(write("a.tiktoken", "IQ== 0\nIg= 1\n"), {}), "a.tiktoken",
               "line 2: invalid base64");
  expect_error(Tokenizer::load_tiktoken(write("b.tiktoken", "IQ== 0\nIg== one\n"), {}),
               "b.tiktoken", "line 2: rank 'one' is not an integer");
  expect_error(Tokenizer::load_tiktoken(write("c.tiktoken", "IQ== 0\nIg==\n"), {}), "c.tiktoken",
               "line 2: expected '<base64> <rank>'");
  expect_error(Tokenizer::load_tiktoken(write("d.tiktoken", ""), {}), "d.tiktoken", "empty");
  expect_error(Tokenizer::load_tiktoken(write("e.tiktoken", "IQ== 99999999999\n"), {}),
               "e.tiktoken", "not an integer in");
  expect_error(Tokenizer::load_tiktoken(write("f.tiktoken", "IQ== 0\nIQ== 1\n"), {}), "f.tiktoken",
               "same bytes");
  expect_error(Tokenizer::load_tiktoken(
                   write("g.tiktoken", std::string("\x89PNG\r\n\x1a\n\x00\x01", 10)), {}),
               "g.tiktoken", "line 1");
  // Truncated copy of the real file: loads no further than the cut, then misses bytes.
  std::ifstream real(shared_data("o200k_base.tiktoken"), std::ios::binary);
  std::string head(4000, '\0');
  real.read(head.data(), static_cast<std::streamsize>(head.size()));
  expect_error(Tokenizer::load_tiktoken(write("h.tiktoken", head), {}), "h.tiktoken", "line ");
  // A ranks line for an added token's id must hold that token's text.
  expect_error(Tokenizer::load_tiktoken(write("i.tiktoken", "IQ== 0\n"), {{0, "<|x|>"}}),
               "i.tiktoken", "added token");
}

TEST_F(TokenizerBadInput, GarbageNeverCrashes) {
  std::mt19937 rng(7);
  for (int k = 0; k < 50; ++k) {
    std::string junk(rng() % 300, '\0');
    for (char& c : junk) c = static_cast<char>(rng() % 256);
    // Half the time start like a real file, so parsing gets further.
    if (k % 2) junk = (k % 4 == 1 ? "{\"model\": {\"vocab\": {\"a\": " : "IQ== 0\nIg== 1\n") + junk;
    EXPECT_FALSE(Tokenizer::load_hf_json(write("g.json", junk)).ok());
    EXPECT_FALSE(Tokenizer::load_tiktoken(write("g.tiktoken", junk), {}).ok());
  }
  auto tok = hf_tokenizer();
  ASSERT_TRUE(tok);
  for (int k = 0; k < 200; ++k) {
    std::string junk(rng() % 200, '\0');
    for (char& c : junk) c = static_cast<char>(rng() % 256);
    const Ids ids = tok->encode(junk);
    const std::string back = tok->decode(ids);
    EXPECT_TRUE(utf8::is_valid(back));
    std::string clean;
    utf8::append_lossy(junk, &clean);
    EXPECT_EQ(back, clean);  // decode(encode(x)) == x with U+FFFD substitutions
    Ids random_ids(rng() % 20);
    for (int32_t& id : random_ids) id = static_cast<int32_t>(rng() % 210000) - 1000;
    EXPECT_TRUE(utf8::is_valid(tok->decode(random_ids)));
  }
}

TEST_F(TokenizerBadInput, BadModelFolderConfigs) {
  fs::create_directories(dir_ / "tiktoken");
  fs::create_symlink(fs::absolute(shared_data("o200k_base.tiktoken")),
                     dir_ / "tiktoken" / "tokenizer.model");
  write("tokenizer_config.json", "{\"added_tokens_decoder\": {\"x1\": {\"content\": \"<|a|>\"}}}");
  expect_error(Tokenizer::load(dir_.string()), "tokenizer_config.json", "key is not an id");
  write("tokenizer_config.json", "{\"added_tokens_decoder\": {\"5\": {\"content\": \"<|a|>\"}}}");
  expect_error(Tokenizer::load(dir_.string()), "tokenizer.model",
               "the added token with that id is '<|a|>'");
  write("tokenizer_config.json", "not json");
  expect_error(Tokenizer::load(dir_.string()), "tokenizer_config.json", "not valid JSON");
  // o200k_base.tiktoken + special_tokens.json (the shared-data layout).
  fs::remove(dir_ / "tokenizer_config.json");
  fs::create_symlink(fs::absolute(shared_data("inkling/special_tokens.json")),
                     dir_ / "special_tokens.json");
  auto r = Tokenizer::load(dir_.string());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value()->token_id("<|content_model_end_sampling|>"), 200006);
  EXPECT_EQ(r.value()->encode("The capital of France is"), (Ids{976, 9029, 328, 10128, 382}));
}

}  // namespace
}  // namespace inkling
