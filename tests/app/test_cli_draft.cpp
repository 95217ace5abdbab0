// `inkling generate --draft K` as a user runs it: on the demo model (two trained MTP depths) the
// speculative run prints the same greedy ids as the plain run and reports its acceptance per
// position and tokens per round in --json; bad K and models without MTP depths fail with one
// error line and exit code 2; chat with drafts answers as without and reuses the previous prompt.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "../common/fixtures.h"
#include "../common/run_cli.h"

namespace inkling {
namespace {

using testing::run_cli;
using testing::TempDir;

const std::string kDraftModel = std::string(INKLING_SOURCE_DIR) + "/models/inkling-demo";

TEST(CliDraft, SameGreedyIdsAndAcceptanceInJson) {
  if (!std::filesystem::exists(kDraftModel + "/model.safetensors")) GTEST_SKIP() << "no demo model";
  TempDir dir;
  auto plain = run_cli({"generate", "-m", kDraftModel, "-p", "And God said", "-n", "64",
                        "--temperature", "0", "-t", "2", "--json"},
                       dir.path(), 120);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const auto want = nlohmann::json::parse(plain.out)["ids"];
  ASSERT_EQ(want.size(), 64u);
  for (const char* k : {"1", "2"}) {
    auto r = run_cli({"generate", "-m", kDraftModel, "-p", "And God said", "-n", "64",
                      "--temperature", "0", "-t", "2", "--json", "--draft", k},
                     dir.path(), 120);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["ids"], want) << "--draft " << k;
    const auto& sp = j["speculative"];
    ASSERT_TRUE(sp.is_object()) << r.out;
    EXPECT_EQ(sp["draft"].get<int>(), std::stoi(k));
    EXPECT_EQ(sp["acceptance"].size(), size_t(std::stoi(k)));
    EXPECT_GT(sp["tokens_per_round"].get<double>(), 1.0);
    EXPECT_GT(sp["acceptance"][0].get<double>(), 0.0);
  }
  // Text mode reports the figures on stderr.
  auto t = run_cli({"generate", "-m", kDraftModel, "-p", "And God said", "-n", "16",
                    "--temperature", "0", "-t", "2", "--draft", "2"},
                   dir.path(), 120);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.err.find("speculative: K=2"), std::string::npos) << t.err;
}

TEST(CliDraft, BadDraftCountsFail) {
  TempDir dir;
  if (std::filesystem::exists(kDraftModel + "/model.safetensors")) {
    auto r =
        run_cli({"generate", "-m", kDraftModel, "--token-ids", "5,6", "--draft", "3"}, dir.path());
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("error: --draft: [speculative] draft count 3 is outside [1, 2]"),
              std::string::npos)
        << r.err;
    r = run_cli(
        {"generate", "-m", kDraftModel, "--token-ids", "5,6", "--draft", "1", "--logprobs", "2"},
        dir.path());
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--draft"), std::string::npos) << r.err;
  }
  auto r = run_cli({"generate", "-m", testing::fixture_dir("full") + "/og", "--token-ids", "5,6",
                    "--draft", "1"},
                   dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("model.mtp.layers.0.input_proj.weight"), std::string::npos) << r.err;
}

// chat --draft keeps the previous prompt's state, the depths' with the trunk's: each later turn
// prefills only its new tokens, as plain chat does (the counts from /stats), and answers the same.
TEST(CliDraft, ChatTurnsReuseThePreviousPrompt) {
  if (!std::filesystem::exists(kDraftModel + "/model.safetensors")) GTEST_SKIP() << "no demo model";
  TempDir dir;
  testing::write_file(dir.path() + "/turns.txt",
                      "Give me a verse about light\n/stats\nTell me a fortune\n/stats\n"
                      "What does hacker mean?\n/stats\n");
  // The prompt tokens each turn prefilled ("prompt eval ... / N tokens" in "last answer:").
  auto prefilled = [](const std::string& out) {
    std::vector<size_t> n;
    for (size_t p = out.find("last answer:"); p != std::string::npos;
         p = out.find("last answer:", p + 1)) {
      const size_t e = out.find("prompt eval", p), slash = out.find('/', e);
      if (e == std::string::npos || slash == std::string::npos) break;
      n.push_back(std::stoul(out.substr(slash + 1)));
    }
    return n;
  };
  std::vector<size_t> want;
  for (const char* k : {"0", "2"}) {
    auto r = run_cli({"chat", "-m", kDraftModel, "-n", "40", "--temperature", "0", "-t", "2",
                      "--reasoning-effort", "none", "--draft", k},
                     dir.path(), 120, dir.path() + "/turns.txt");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto n = prefilled(r.out);
    ASSERT_EQ(n.size(), 3u) << r.out;
    EXPECT_GT(n[0], 10u);
    EXPECT_LT(n[1], n[0] + 40) << "the second turn runs only what follows the first prompt";
    if (want.empty()) want = n;
    EXPECT_EQ(n, want) << "--draft " << k;
  }
}

}  // namespace
}  // namespace inkling

namespace inkling {
namespace {

// bench --draft: speculative runs for the depths the model has (same ids as plain greedy), the
// verify cost alone beyond them.
TEST(CliDraft, BenchReportsSpeculativeRuns) {
  TempDir dir;
  auto r = run_cli(
      {"bench", "-m", std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/mtp/multi",
       "--prompt-tokens", "12", "--gen-tokens", "16", "--threads", "2", "--draft", "4", "--json"},
      dir.path(), 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out)["speculative"];
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_GT(j["plain_decode_tok_s"].get<double>(), 0);
  ASSERT_EQ(j["runs"].size(), 4u);
  for (int k = 1; k <= 4; ++k) {
    const auto& run = j["runs"][size_t(k - 1)];
    EXPECT_EQ(run["draft"].get<int>(), k);
    EXPECT_GT(run["verify_cost_vs_decode"].get<double>(), 0);
    EXPECT_EQ(run.contains("decode_tok_s"), k <= 3) << run.dump();
    if (k <= 3) {
      EXPECT_TRUE(run["same_ids"].get<bool>()) << run.dump();
      EXPECT_EQ(run["acceptance"].size(), size_t(k));
    }
  }
}

}  // namespace
}  // namespace inkling

namespace inkling {
namespace {

// chat --draft K at temperature 0 prints exactly what plain chat prints, turn after turn.
TEST(CliDraft, ChatAnswersTheSameWithDrafts) {
  if (!std::filesystem::exists(kDraftModel + "/model.safetensors")) GTEST_SKIP() << "no demo model";
  TempDir dir;
  testing::write_file(dir.path() + "/turns.txt",
                      "Give me a verse about light\nTell me a fortune\nWhat does hacker mean?\n");
  std::string want;
  for (const char* k : {"0", "1", "2"}) {
    auto r = run_cli({"chat", "-m", kDraftModel, "-n", "80", "--temperature", "0", "-t", "2",
                      "--reasoning-effort", "none", "--draft", k},
                     dir.path(), 120, dir.path() + "/turns.txt");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    if (want.empty()) want = r.out;
    EXPECT_EQ(r.out, want) << "--draft " << k;
  }
  EXPECT_GE(std::count(want.begin(), want.end(), '\n'), 3) << want;
}

}  // namespace
}  // namespace inkling
