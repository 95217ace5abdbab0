// Command-line conventions of `inkling generate` and friends: --version, defaults in --help, a
// prompt from a file (-f), an empty prompt, generation running into the context limit (still a
// complete --json answer), and the timing summary (text and --json). On the demo model.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../common/run_cli.h"

namespace inkling {
namespace {

using ::testing::HasSubstr;
using testing::run_cli;
using testing::TempDir;
using testing::write_file;

class CliConventions : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(model_ + "/model.safetensors")) GTEST_SKIP() << "no demo model";
  }
  const std::string model_ = std::string(INKLING_SOURCE_DIR) + "/models/inkling-demo";
  TempDir tmp_;
};

TEST_F(CliConventions, VersionAndDefaultsInHelp) {
  auto r = run_cli({"--version"}, tmp_.path());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("inkling ", 0), 0u) << r.out;
  r = run_cli({"generate", "--help"}, tmp_.path());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("=64"));   // -n
  EXPECT_THAT(r.out, HasSubstr("=0.8"));  // --temperature
  EXPECT_THAT(r.out, HasSubstr("-f,--file"));
  r = run_cli({"chat", "--help"}, tmp_.path());
  EXPECT_THAT(r.out, HasSubstr("=2048"));  // -n
  EXPECT_THAT(r.out, HasSubstr("-c,--ctx-size"));
}

TEST_F(CliConventions, PromptFromFileEqualsPromptText) {
  write_file(tmp_.file("p.txt"), "Hello there");
  auto from_file = run_cli({"generate", "-m", model_, "-f", tmp_.file("p.txt"), "-n", "5",
                            "--temperature", "0", "--json"},
                           tmp_.path());
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  auto from_text = run_cli(
      {"generate", "-m", model_, "-p", "Hello there", "-n", "5", "--temperature", "0", "--json"},
      tmp_.path());
  ASSERT_EQ(from_text.exit_code, 0) << from_text.err;
  const auto a = nlohmann::json::parse(from_file.out), b = nlohmann::json::parse(from_text.out);
  EXPECT_EQ(a["prompt_ids"], b["prompt_ids"]);
  EXPECT_EQ(a["ids"], b["ids"]);

  auto r = run_cli({"generate", "-m", model_, "-f", tmp_.file("none.txt")}, tmp_.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("none.txt: cannot read"));
  r = run_cli({"generate", "-m", model_, "-f", tmp_.file("p.txt"), "-p", "x"}, tmp_.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("exactly one"));
}

TEST_F(CliConventions, EmptyPromptIsAClearError) {
  auto r = run_cli({"generate", "-m", model_, "-p", ""}, tmp_.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("-p: the prompt is empty"));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("--token-ids: no token ids")));
  write_file(tmp_.file("empty.txt"), "");
  r = run_cli({"generate", "-m", model_, "-f", tmp_.file("empty.txt")}, tmp_.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("the file is empty"));
}

TEST_F(CliConventions, GenerationPastTheContextStillAnswers) {
  auto r = run_cli({"generate", "-m", model_, "--token-ids", "1,2,3", "-n", "50", "-c", "12",
                    "--temperature", "0", "--json", "--logit-bias", "4008=-100"},
                   tmp_.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["finish_reason"], "length");
  EXPECT_EQ(j["context_full"], true);
  // 3 prompt tokens + 9 fed back = 12 positions; the 10th token is sampled from the last logits.
  EXPECT_EQ(j["ids"].size(), 10u);
  for (const char* k : {"load_ms", "prompt_tokens", "prompt_ms", "prompt_tok_s", "gen_tokens",
                        "gen_ms", "gen_tok_s", "total_ms", "peak_rss_bytes", "seed"})
    EXPECT_TRUE(j["timings"].contains(k)) << k;
  EXPECT_EQ(j["timings"]["prompt_tokens"], 3);
  EXPECT_GT(j["timings"]["peak_rss_bytes"].get<double>(), 1e6);

  // Text mode: the same stop, said on stderr, with the timing summary.
  r = run_cli({"generate", "-m", model_, "--token-ids", "1,2,3", "-n", "50", "-c", "12",
               "--temperature", "0", "--seed", "7", "--logit-bias", "4008=-100"},
              tmp_.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("context (12 tokens) is full"));
  for (const char* k : {"load time", "prompt eval", "eval time", "total time", "peak RSS"})
    EXPECT_THAT(r.err, HasSubstr(k));
  EXPECT_THAT(r.err, HasSubstr("seed        = 7"));
}

}  // namespace
}  // namespace inkling
