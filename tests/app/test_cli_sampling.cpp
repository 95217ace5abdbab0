// `inkling generate` with the sampler chain's flags, on the committed tiny checkpoint (vocabulary
// 500, no tokenizer): --logit-bias forcing and banning tokens, the penalties, and --logprobs in
// JSON (checked against a log-softmax of the model's own logits) and in text mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "../common/run_cli.h"
#include "base/npy.h"

namespace inkling {
namespace {

using testing::run_cli;
using testing::TempDir;

const std::string kSamplingModel = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/full/og";
const std::string kPrompt = "--token-ids=386,10,415,335,493,459,313,395";

class CliSampling : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kSamplingModel + "/config.json")) GTEST_SKIP() << "no fixture";
  }
  // `generate --json` with `extra` flags; the parsed output (fails the test on a bad run).
  nlohmann::json generate(std::vector<std::string> extra, int n = 8) {
    std::vector<std::string> args = {"generate",        "-m",    kSamplingModel, kPrompt, "-n",
                                     std::to_string(n), "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_cli(args, dir_.path(), 60);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_TRUE(j.is_object()) << r.out;
    return j.is_object() ? j : nlohmann::json::object({{"ids", nlohmann::json::array()}});
  }
  static std::vector<int32_t> ids(const nlohmann::json& j) {
    return j["ids"].get<std::vector<int32_t>>();
  }
  TempDir dir_;
};

TEST_F(CliSampling, LogitBiasForcesAndBansTokens) {
  const auto plain = ids(generate({"--temperature", "0"}));
  ASSERT_EQ(plain.size(), 8u);
  // +100 on token 7 wins every step, at any temperature.
  const auto forced = ids(generate({"--temperature", "1", "--seed", "3", "--logit-bias", "7=100"}));
  EXPECT_EQ(forced, std::vector<int32_t>(8, 7));
  // -100 on the greedy first token: another one comes first; several pairs in one flag.
  const std::string ban = std::to_string(plain[0]) + "=-100, " + std::to_string(plain[1]) + "=-100";
  const auto banned = ids(generate({"--temperature", "0", "--logit-bias", ban}));
  ASSERT_FALSE(banned.empty());
  EXPECT_NE(banned[0], plain[0]);
  for (int32_t t : banned) EXPECT_TRUE(t != plain[0] && t != plain[1]) << t;
}

TEST_F(CliSampling, PenaltiesStopGreedyRepeats) {
  const auto plain = ids(generate({"--temperature", "0"}, 32));
  ASSERT_LT(std::set<int32_t>(plain.begin(), plain.end()).size(), plain.size())
      << "the fixture's greedy output no longer repeats a token; pick another prompt";
  for (const char* flag :
       {"--repeat-penalty=1.5", "--presence-penalty=2", "--frequency-penalty=2"}) {
    const auto pen = ids(generate({"--temperature", "0", flag}, 32));
    ASSERT_EQ(pen.size(), 32u) << flag;
    EXPECT_EQ(std::set<int32_t>(pen.begin(), pen.end()).size(), pen.size()) << flag;
    // Identical up to the first repeat of the plain run.
    EXPECT_EQ(pen[0], plain[0]) << flag;
  }
}

TEST_F(CliSampling, LogprobsJsonMatchTheModelsLogSoftmax) {
  const std::string npy = dir_.path() + "/prompt_logits.npy";
  const auto j = generate({"--temperature", "0", "--logprobs", "3", "--dump-logits", npy}, 4);
  // The existing keys are all still there.
  for (const char* key : {"prompt_ids", "ids", "finish_reason", "prefill_tok_s", "decode_tok_s"})
    EXPECT_TRUE(j.contains(key)) << key;
  const auto out = ids(j);
  ASSERT_EQ(out.size(), 4u);
  const auto& lps = j["logprobs"];
  ASSERT_TRUE(lps.is_array()) << j.dump();
  ASSERT_EQ(lps.size(), out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const auto& e = lps[i];
    EXPECT_EQ(e["id"], out[i]);
    const float lp = e["logprob"].get<float>();
    EXPECT_LE(lp, 0.f);
    const auto& top = e["top_logprobs"];
    ASSERT_EQ(top.size(), 3u);
    EXPECT_EQ(top[0]["id"], out[i]);  // greedy: the chosen token is the most likely
    EXPECT_EQ(top[0]["logprob"].get<float>(), lp);
    EXPECT_GE(top[0]["logprob"].get<float>(), top[1]["logprob"].get<float>());
    EXPECT_GE(top[1]["logprob"].get<float>(), top[2]["logprob"].get<float>());
  }
  // The first token's numbers against a log-softmax of the last prompt position's logits.
  auto logits = read_npy_f32(npy);
  ASSERT_TRUE(logits.ok()) << logits.status().message();
  const size_t vocab = size_t(logits->shape[1]);
  const float* row = logits->data.data() + logits->data.size() - vocab;
  double mx = -INFINITY, sum = 0;
  for (size_t i = 0; i < vocab; ++i) mx = std::max(mx, double(row[i]));
  for (size_t i = 0; i < vocab; ++i) sum += std::exp(double(row[i]) - mx);
  const double lse = mx + std::log(sum);
  std::vector<int32_t> order(vocab);
  for (size_t i = 0; i < vocab; ++i) order[i] = int32_t(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return row[a] > row[b]; });
  for (size_t k = 0; k < 3; ++k) {
    const auto& alt = lps[0]["top_logprobs"][k];
    EXPECT_EQ(alt["id"], order[k]) << k;
    EXPECT_NEAR(alt["logprob"].get<double>(), double(row[order[k]]) - lse, 1e-4) << k;
  }
}

TEST_F(CliSampling, LogprobsInTextModeGoToStderr) {
  const auto r = run_cli({"generate", "-m", kSamplingModel, kPrompt, "-n", "3", "--temperature",
                          "0", "--logprobs", "2"},
                         dir_.path(), 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // stdout: just the ids (no tokenizer), as without --logprobs.
  std::istringstream out(r.out);
  std::vector<int32_t> printed;
  for (int32_t t; out >> t;) printed.push_back(t);
  ASSERT_EQ(printed.size(), 3u) << r.out;
  // stderr: a header, then per token "ID LOGPROB | ID LOGPROB, ID LOGPROB".
  std::istringstream err(r.err);
  std::string line;
  ASSERT_TRUE(std::getline(err, line));
  EXPECT_NE(line.find("logprobs"), std::string::npos) << r.err;
  for (int32_t t : printed) {
    ASSERT_TRUE(std::getline(err, line)) << r.err;
    std::istringstream ls(line);
    int32_t id = -1, alt = -1;
    float lp = 1, alt_lp = 1;
    std::string bar;
    ls >> id >> lp >> bar >> alt >> alt_lp;
    EXPECT_EQ(id, t) << line;
    EXPECT_LE(lp, 0.f) << line;
    EXPECT_EQ(bar, "|") << line;
    EXPECT_EQ(alt, t) << line;  // greedy: the first alternative is the chosen token
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), 1) << line;
  }
  EXPECT_NE(r.err.find("finish: length"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace inkling
