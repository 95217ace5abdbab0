// The `inkling` CLI driven as a user drives it, on bad input: each case must end with a
// non-zero exit (never a signal), exactly one "error: ..." line on stderr naming the
// file/tensor/field at fault, and within a few seconds. A valid tiny model is written here
// first and must work, so each failure is caused by the one thing corrupted.
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "../common/run_cli.h"
#include "../common/tmp_files.h"

namespace inkling {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::TempDir;
using testing::write_file;

using testing::kCli;
using testing::run_cli;
using testing::RunResult;

std::vector<std::string> nonempty_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

// The contract for bad input: non-zero exit, no signal, no hang, one "error: " line on stderr
// containing every one of `parts`.
void expect_clean_error(const RunResult& r, std::initializer_list<std::string> parts,
                        const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_FALSE(r.timed_out) << "hung (killed after " << r.seconds << " s)";
  ASSERT_FALSE(r.signaled) << "crashed with signal " << r.signal << "; stderr:\n" << r.err;
  EXPECT_NE(r.exit_code, 0) << "stdout:\n" << r.out;
  EXPECT_LT(r.seconds, 10.0);
  const auto lines = nonempty_lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << "stderr:\n" << r.err;
  EXPECT_EQ(lines[0].rfind("error: ", 0), 0u) << lines[0];
  for (const auto& p : parts) EXPECT_THAT(lines[0], HasSubstr(p));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("internal error")));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("terminate called")));
}

class CliErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kCli)) << kCli << " is not built (cmake --build ... --target inkling)";
    model_ = tmp_.file("good");
    fs::create_directory(model_);
    testing::write_tiny_model(model_, /*og=*/false);
  }
  // A copy of the valid model to corrupt.
  std::string copy_model(const std::string& name, bool og = false) {
    const std::string dir = tmp_.file(name);
    fs::create_directory(dir);
    testing::write_tiny_model(dir, og);
    return dir;
  }
  RunResult generate(const std::string& dir, const std::string& ids = "1,2,3") {
    return run_cli(
        {"generate", "-m", dir, "--token-ids=" + ids, "-n", "4", "--temperature", "0", "--json"},
        tmp_.path());
  }

  TempDir tmp_;
  std::string model_;
};

TEST_F(CliErrors, ValidTinyModelRuns) {
  for (bool og : {false, true}) {
    const std::string dir = copy_model(og ? "valid_og" : "valid_hf", og);
    const RunResult r = generate(dir);
    ASSERT_FALSE(r.timed_out);
    ASSERT_FALSE(r.signaled) << r.err;
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.out;
    EXPECT_EQ(j["prompt_ids"], nlohmann::json({1, 2, 3}));
    ASSERT_TRUE(j["ids"].is_array());
    EXPECT_GE(j["ids"].size(), 1u);
    EXPECT_LE(j["ids"].size(), 4u);
    for (const auto& id : j["ids"]) EXPECT_LT(id.get<int>(), testing::TinyDims{}.Vu);
    const RunResult ins = run_cli({"inspect", "-m", dir}, tmp_.path());
    EXPECT_EQ(ins.exit_code, 0) << ins.err;
  }
}

TEST_F(CliErrors, CommittedFixtureRunsIfPresent) {
  const std::string dir = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/full/og";
  if (!fs::exists(dir + "/config.json")) GTEST_SKIP() << "no committed fixture at " << dir;
  const RunResult r = generate(dir);
  ASSERT_FALSE(r.signaled) << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(CliErrors, TruncatedSafetensors) {
  const std::string dir = copy_model("trunc");
  write_file(dir + "/model.safetensors", "abc");
  expect_clean_error(generate(dir), {dir + "/model.safetensors", "truncated"}, "truncated");
  write_file(dir + "/model.safetensors", "");
  expect_clean_error(generate(dir), {dir + "/model.safetensors"}, "empty file");
}

TEST_F(CliErrors, HeaderLengthPastEof) {
  const std::string dir = copy_model("hlen");
  std::string image = testing::read_file(dir + "/model.safetensors");
  const uint64_t big = image.size() * 2;
  std::memcpy(image.data(), &big, 8);
  write_file(dir + "/model.safetensors", image);
  expect_clean_error(generate(dir), {dir + "/model.safetensors", "header length"},
                     "header past EOF");
}

TEST_F(CliErrors, DataCutShort) {
  // The header is intact but the file lost its last bytes: offsets run past the data.
  const std::string dir = copy_model("cut");
  std::string image = testing::read_file(dir + "/model.safetensors");
  write_file(dir + "/model.safetensors", image.substr(0, image.size() - 10));
  expect_clean_error(generate(dir), {dir + "/model.safetensors", "past the end"}, "data cut short");
}

TEST_F(CliErrors, HeaderNotJson) {
  const std::string dir = copy_model("hjson");
  write_file(dir + "/model.safetensors", testing::safetensors_image("{\"a\": [", ""));
  expect_clean_error(generate(dir), {dir + "/model.safetensors", "JSON"}, "header not JSON");
}

TEST_F(CliErrors, UnknownDtypeAndOverlap) {
  const std::string dir = copy_model("dtype");
  write_file(dir + "/model.safetensors",
             testing::safetensors_image(
                 R"({"model.norm.weight":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})",
                 std::string(8, '\0')));
  expect_clean_error(generate(dir), {"model.norm.weight", "F64"}, "unknown dtype");
  write_file(
      dir + "/model.safetensors",
      testing::safetensors_image(R"({"a.w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                 R"("b.w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                 std::string(12, '\0')));
  expect_clean_error(generate(dir), {"a.w", "b.w", "overlap"}, "overlap");
  write_file(
      dir + "/model.safetensors",
      testing::safetensors_image(R"({"a.w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                                 std::string(8, '\0')));
  expect_clean_error(generate(dir), {"a.w", "byte size"}, "byte size mismatch");
}

TEST_F(CliErrors, BadConfigJson) {
  const std::string dir = copy_model("cfgjson");
  write_file(dir + "/config.json", "{\"hidden_size\": 8,,}");
  expect_clean_error(generate(dir), {dir + "/config.json", "JSON"}, "config not JSON");
}

TEST_F(CliErrors, MissingConfig) {
  const std::string dir = copy_model("nocfg");
  fs::remove(dir + "/config.json");
  expect_clean_error(generate(dir), {dir + "/config.json"}, "no config.json");
}

TEST_F(CliErrors, InconsistentConfig) {
  const std::string dir = copy_model("cfgbad");
  auto cfg = testing::tiny_config_json(false);
  cfg["unpadded_vocab_size"] = 33;  // > vocab_size 32
  write_file(dir + "/config.json", cfg.dump());
  expect_clean_error(generate(dir), {"config.json", "unpadded_vocab_size"}, "unpadded > vocab");
  cfg = testing::tiny_config_json(false);
  cfg["hidden_size"] = "eight";
  write_file(dir + "/config.json", cfg.dump());
  expect_clean_error(generate(dir), {"config.json", "hidden_size"}, "hidden_size string");
  cfg = testing::tiny_config_json(false);
  cfg["layer_types"] = {"hybrid"};
  write_file(dir + "/config.json", cfg.dump());
  expect_clean_error(generate(dir), {"config.json", "layer_types"}, "layer_types length");
}

TEST_F(CliErrors, ConfigValueTooLargeForItsField) {
  // 2^31 layers used to wrap to a negative count and abort in std::vector::assign.
  const std::string dir = copy_model("cfghuge");
  auto cfg = testing::tiny_config_json(false);
  cfg["num_hidden_layers"] = int64_t(1) << 31;
  write_file(dir + "/config.json", cfg.dump());
  expect_clean_error(generate(dir), {"config.json", "num_hidden_layers"}, "2^31 layers");
}

TEST_F(CliErrors, ConfigMissingFieldFallsBackAndFailsOnShapes) {
  // Without hidden_size the default (6144) applies; the weights then disagree, by name.
  const std::string dir = copy_model("cfgmissing");
  auto cfg = testing::tiny_config_json(false);
  cfg.erase("hidden_size");
  write_file(dir + "/config.json", cfg.dump());
  expect_clean_error(generate(dir),
                     {"model.embed_tokens.weight", "expected [32, 6144], got [32, 8]"},
                     "hidden_size missing");
}

TEST_F(CliErrors, MissingTensor) {
  const std::string dir = copy_model("missing");
  testing::tiny_safetensors(false, "model.layers.1.self_attn.r_proj.weight")
      .write(dir + "/model.safetensors");
  expect_clean_error(generate(dir), {"missing tensor 'model.layers.1.self_attn.r_proj.weight'"},
                     "missing tensor");
}

TEST_F(CliErrors, WrongShape) {
  const std::string dir = copy_model("shape", /*og=*/true);
  testing::tiny_safetensors(true, "", "model.llm.layers.1.attn.wq_du.weight", {8, 16})
      .write(dir + "/model.safetensors");
  expect_clean_error(generate(dir),
                     {"model.llm.layers.1.attn.wq_du.weight: expected [16, 8], got [8, 16]"},
                     "wrong shape");
}

TEST_F(CliErrors, IndexNamesMissingShard) {
  const std::string dir = copy_model("index");
  write_file(dir + "/model.safetensors.index.json",
             R"({"weight_map":{"lm_head.weight":"model-00001-of-00002.safetensors"}})");
  expect_clean_error(generate(dir), {"model-00001-of-00002.safetensors"}, "missing shard");
}

TEST_F(CliErrors, MissingModelDir) {
  expect_clean_error(generate(tmp_.file("nowhere")), {"nowhere"}, "missing dir");
}

TEST_F(CliErrors, TokenIdOutsideVocab) {
  expect_clean_error(generate(model_, "999999"), {"999999", "vocabulary"}, "oov token");
  expect_clean_error(generate(model_, "1,2,32"), {"32", "vocabulary"}, "token == vocab_size");
}

TEST_F(CliErrors, MalformedTokenIds) {
  expect_clean_error(generate(model_, "1,x"), {"--token-ids", "'x'"}, "1,x");
  expect_clean_error(generate(model_, "-5"), {"--token-ids", "'-5'"}, "negative");
  expect_clean_error(generate(model_, "1.5"), {"--token-ids", "'1.5'"}, "fraction");
  expect_clean_error(generate(model_, "99999999999999999999"), {"--token-ids"}, "overflow");
  // An empty value as its own argument ("--token-ids=" with nothing makes CLI11 take the next
  // argument as the value, a usage error of its own).
  expect_clean_error(run_cli({"generate", "-m", model_, "--token-ids", "", "-n", "1"}, tmp_.path()),
                     {"--token-ids", "no token ids"}, "empty");
  expect_clean_error(generate(model_, ", ,"), {"--token-ids"}, "only separators");
}

TEST_F(CliErrors, BadSamplingFlags) {
  auto gen = [&](const std::string& dir, const std::string& flag, const std::string& value) {
    return run_cli({"generate", "-m", dir, "--token-ids=1,2", "-n", "2", flag, value}, tmp_.path());
  };
  expect_clean_error(gen(model_, "--logit-bias", "5"), {"--logit-bias", "'5'", "ID=BIAS"},
                     "no '='");
  expect_clean_error(gen(model_, "--logit-bias", "5=1,x=2"), {"--logit-bias", "'x=2'"}, "bad id");
  expect_clean_error(gen(model_, "--logit-bias", "-3=1"), {"--logit-bias", "'-3=1'"}, "negative");
  expect_clean_error(gen(model_, "--logit-bias", "5=abc"), {"--logit-bias", "'5=abc'"}, "bad bias");
  expect_clean_error(gen(model_, "--logit-bias", "5=nan"), {"--logit-bias", "finite"}, "nan");
  expect_clean_error(gen(model_, "--logit-bias", "5=-inf"), {"--logit-bias", "finite"}, "-inf");
  expect_clean_error(gen(model_, "--logit-bias", "5=1e40"), {"--logit-bias", "finite"},
                     "overflows a float");
  expect_clean_error(gen(model_, "--logit-bias", "99999999999=1"), {"--logit-bias", "range"},
                     "id overflow");
  // The logits' width (30 tokens) is known once the model is loaded; the last one is fine.
  expect_clean_error(gen(model_, "--logit-bias", "1=2,30=1"), {"--logit-bias", "30", "vocabulary"},
                     "id == logits width");
  EXPECT_EQ(gen(model_, "--logit-bias", "29=1").exit_code, 0);
  // Syntax is checked before anything is loaded: the missing model is not what is reported.
  expect_clean_error(gen(tmp_.file("nowhere"), "--logit-bias", "5"), {"--logit-bias"},
                     "before the load");
  expect_clean_error(gen(model_, "--repeat-penalty", "nan"), {"--repeat-penalty", "finite"},
                     "nan penalty");
  // Out of range: CLI11's own message (a usage error), no crash.
  for (const auto& [flag, value] :
       std::vector<std::pair<std::string, std::string>>{{"--repeat-penalty", "0"},
                                                        {"--presence-penalty", "3"},
                                                        {"--frequency-penalty", "-2.5"},
                                                        {"--logprobs", "21"},
                                                        {"--logprobs", "-1"}}) {
    const RunResult r = gen(model_, flag, value);
    EXPECT_EQ(r.exit_code, 2) << flag << " " << value;
    EXPECT_THAT(r.err, HasSubstr(flag)) << value;
  }
}

TEST_F(CliErrors, DumpLogitsToUnwritablePath) {
  const RunResult r =
      run_cli({"generate", "-m", model_, "--token-ids=1,2", "-n", "1", "--temperature", "0",
               "--dump-logits", tmp_.file("no/such/dir/out.npy")},
              tmp_.path());
  expect_clean_error(r, {"no/such/dir/out.npy"}, "unwritable dump path");
}

TEST_F(CliErrors, InspectReportsLoadErrorsToo) {
  const std::string dir = copy_model("inspect");
  write_file(dir + "/model.safetensors", "abc");
  expect_clean_error(run_cli({"inspect", "-m", dir}, tmp_.path()), {dir + "/model.safetensors"},
                     "inspect");
}

TEST_F(CliErrors, UsageErrorsExitNonZero) {
  // CLI11 prints its own usage text; only the exit code and the absence of a crash matter here.
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {},
           {"generate"},
           {"generate", "-m", "x"},
           {"frobnicate"},
           {"generate", "-m", "x", "--token-ids=1", "-n", "lots"}}) {
    const RunResult r = run_cli(args, tmp_.path());
    ASSERT_FALSE(r.timed_out);
    EXPECT_FALSE(r.signaled) << r.err;
    EXPECT_NE(r.exit_code, 0) << args.size();
    EXPECT_FALSE(r.err.empty());
  }
}

}  // namespace
}  // namespace inkling
