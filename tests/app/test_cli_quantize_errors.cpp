// `inkling quantize` on bad input and when interrupted. Bad options, a missing or corrupt source,
// an existing output: exit code 2 and exactly one "error: ..." line naming the option, file or
// tensor. Interrupted (SIGINT, SIGTERM or SIGKILL) mid-way: no output folder, a DST.partial
// without config.json that neither the engine nor mlx-vlm would load, and the same command run
// again resumes and writes exactly what an uninterrupted run writes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "../common/run_cli.h"
#include "../common/tmp_files.h"
#include "inkling/engine.h"
#include "quantize_helpers.h"

namespace inkling {
namespace {

namespace fs = std::filesystem;
using testing::fixture_path;
using ::testing::HasSubstr;
using testing::run_cli;
using testing::RunResult;
using testing::TempDir;

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

void expect_usage_error(const RunResult& r, std::initializer_list<std::string> parts,
                        int code = 2) {
  ASSERT_FALSE(r.timed_out);
  ASSERT_FALSE(r.signaled) << "signal " << r.signal << "\n" << r.err;
  EXPECT_EQ(r.exit_code, code) << r.err;
  const auto lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_EQ(lines[0].rfind("error: ", 0), 0u) << lines[0];
  for (const auto& p : parts) EXPECT_THAT(lines[0], HasSubstr(p));
}

class QuantizeErrors : public ::testing::Test {
 protected:
  RunResult q(std::vector<std::string> extra) {
    std::vector<std::string> args = {"quantize", "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args, tmp_.path(), 60);
  }
  std::string src_ = fixture_path("full/og");
  TempDir tmp_;
};

TEST_F(QuantizeErrors, BadBitsAndGroups) {
  expect_usage_error(q({"-m", src_, "-o", tmp_.file("o"), "--bits", "7"}),
                     {"--bits", "7 bits is not an MLX affine width", "2, 3, 4, 5, 6 or 8"});
  expect_usage_error(q({"-m", src_, "-o", tmp_.file("o"), "--group-size", "48"}),
                     {"--group-size", "group size 48", "32, 64 or 128"});
  expect_usage_error(q({"-m", src_, "-o", tmp_.file("o"), "--override", "attention=7"}),
                     {"--override 'attention=7'", "7 bits"});
  expect_usage_error(q({"-m", src_, "-o", tmp_.file("o"), "--override", "attention=4:48"}),
                     {"--override 'attention=4:48'", "group size 48"});
  expect_usage_error(q({"-m", src_, "-o", tmp_.file("o"), "--override", "attention"}),
                     {"--override 'attention'", "PATTERN=SPEC"});
  EXPECT_FALSE(fs::exists(tmp_.file("o")));
  EXPECT_FALSE(fs::exists(tmp_.file("o.partial")));
}

TEST_F(QuantizeErrors, PatternsRecipesAndModules) {
  expect_usage_error(q({"-m", src_, "-o", tmp_.file("o"), "--override", "*.nothing_here=8"}),
                     {"--override '*.nothing_here=8'", "matches no module of this model"});
  expect_usage_error(q({"-m", src_, "-o", tmp_.file("o"), "--override", "router=8"}),
                     {"router", "never quantized"});
  expect_usage_error(q({"-m", src_, "-o", tmp_.file("o"), "--recipe", "tiny"}),
                     {"--recipe", "unknown recipe 'tiny'", "fit-128gb"});
  expect_usage_error(q({"-m", src_, "-o", tmp_.file("o"), "--modules", "experts,mlp"}),
                     {"--modules", "'mlp' is not a module group"});
  // The dry run checks patterns against the config too.
  expect_usage_error(q({"--dry-run", "-m", src_, "--override", "lm_head=8"}),
                     {"pattern 'lm_head' matches no module"});
  EXPECT_FALSE(fs::exists(tmp_.file("o.partial")));
}

TEST_F(QuantizeErrors, OutputExistsOrMissing) {
  fs::create_directory(tmp_.file("o"));
  testing::write_file(tmp_.file("o") + "/keep.txt", "x");
  expect_usage_error(q({"-m", src_, "-o", tmp_.file("o")}),
                     {tmp_.file("o"), "already exists", "--force"});
  EXPECT_TRUE(fs::exists(tmp_.file("o") + "/keep.txt"));
  const RunResult forced = q({"-m", src_, "-o", tmp_.file("o"), "--force"});
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_FALSE(fs::exists(tmp_.file("o") + "/keep.txt"));
  EXPECT_TRUE(fs::exists(tmp_.file("o") + "/config.json"));
  expect_usage_error(q({"-m", src_}), {"-o/--output is required"});
}

TEST_F(QuantizeErrors, MissingOrCorruptSource) {
  expect_usage_error(q({"-m", tmp_.file("nowhere"), "-o", tmp_.file("o")}),
                     {tmp_.file("nowhere"), "no such folder"});
  // A folder with a config but a safetensors file cut short.
  const std::string bad = tmp_.file("bad");
  fs::copy(src_, bad);
  const std::string image = testing::read_file(bad + "/model.safetensors");
  testing::write_file(bad + "/model.safetensors", image.substr(0, image.size() - 100));
  expect_usage_error(q({"-m", bad, "-o", tmp_.file("o")}),
                     {bad + "/model.safetensors", "past the end"});
  // A tensor of the wrong shape.
  const std::string shape = tmp_.file("shape");
  fs::create_directory(shape);
  testing::write_file(shape + "/config.json", testing::tiny_config_json().dump());
  testing::tiny_safetensors(false, "", "model.layers.0.self_attn.q_proj.weight", {3, 8})
      .write(shape + "/model.safetensors");
  expect_usage_error(q({"-m", shape, "-o", tmp_.file("o")}),
                     {"model.layers.0.self_attn.q_proj.weight", "expected [8, 8], got [3, 8]"});
  // No config.json.
  const std::string nocfg = tmp_.file("nocfg");
  fs::create_directory(nocfg);
  expect_usage_error(q({"-m", nocfg, "-o", tmp_.file("o")}), {nocfg + "/config.json"});
  EXPECT_FALSE(fs::exists(tmp_.file("o")));
}

// A NaN in a weight is refused with the module and row, not written.
TEST_F(QuantizeErrors, NonFiniteWeightNamesTheModuleAndRow) {
  const std::string dir = tmp_.file("nan");
  fs::copy(fixture_path("full/hf"), dir);
  std::string image = testing::read_file(dir + "/model.safetensors");
  uint64_t hlen = 0;
  std::memcpy(&hlen, image.data(), 8);
  const auto header = nlohmann::json::parse(image.substr(8, hlen));
  const auto& t = header["model.layers.2.self_attn.q_proj.weight"];
  ASSERT_EQ(t["dtype"], "F32");
  const size_t at = 8 + hlen + t["data_offsets"][0].get<size_t>() + 5 * 64 * 4;  // row 5
  const float nan = std::nanf("");
  std::memcpy(image.data() + at, &nan, 4);
  testing::write_file(dir + "/model.safetensors", image);
  expect_usage_error(
      q({"-m", dir, "-o", tmp_.file("o")}),
      {"language_model.model.layers.2.self_attn.qkvr_proj", "row 5", "NaN or infinite"}, 1);
  EXPECT_FALSE(fs::exists(tmp_.file("o")));
}

// ---- interruption ---------------------------------------------------------------------------

class QuantizeInterrupt : public ::testing::Test {
 protected:
  // Many tiny shards, each followed by a pause, so a signal lands between shards.
  std::vector<std::string> args(const std::string& out) {
    return {"quantize", "-m", fixture_path("quant_nvfp4/model"),
            "-o",       out,  "--max-shard-mb",
            "0.05",     "-t", "2"};
  }
  int finished_shards(const std::string& part) {
    int n = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(part, ec))
      n += e.path().extension() == ".safetensors";
    return n;
  }
  // The state an interrupted run must leave: no DST, a DST.partial that does not load.
  void expect_unloadable_partial(const std::string& out) {
    EXPECT_FALSE(fs::exists(out));
    ASSERT_TRUE(fs::exists(out + ".partial"));
    EXPECT_FALSE(fs::exists(out + ".partial/config.json"));
    EXPECT_FALSE(Engine::load(out + ".partial").ok());
  }
  // The resumed run's output equals an uninterrupted run's.
  void expect_same_as_fresh(const std::string& out) {
    const std::string fresh = tmp_.file("fresh");
    auto a = args(fresh);
    a.push_back("-q");
    ASSERT_EQ(run_cli(a, tmp_.path(), 120).exit_code, 0);
    auto x = testing::read_tensors(fresh), y = testing::read_tensors(out);
    ASSERT_EQ(x.size(), y.size());
    for (const auto& [name, t] : x) EXPECT_TRUE(y.count(name) && y[name].bytes == t.bytes) << name;
    EXPECT_TRUE(Engine::load(out).ok());
    EXPECT_FALSE(fs::exists(out + ".partial"));
  }
  void interrupt_and_resume(int sig) {
    const std::string out = tmp_.file("o"), part = out + ".partial";
    {
      testing::BackgroundRun run(args(out), tmp_.path(), {"INKLING_QUANTIZE_PAUSE_MS=150"});
      ASSERT_TRUE(run.started());
      ASSERT_TRUE(testing::wait_for([&] { return finished_shards(part) >= 2; }));
      run.signal(sig);
      const int rc = run.wait();
      if (sig == SIGKILL) {
        EXPECT_EQ(rc, 128 + SIGKILL);
      } else {
        EXPECT_EQ(rc, 130) << run.err();
        EXPECT_THAT(run.err(), HasSubstr("interrupted"));
        EXPECT_THAT(run.err(), HasSubstr("run the same command again to resume"));
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(part, ec))  // the cut shard is removed
          EXPECT_NE(e.path().extension(), ".tmp") << e.path();
      }
    }
    expect_unloadable_partial(out);
    const int kept = finished_shards(part);
    EXPECT_GE(kept, 2);
    const RunResult again = run_cli(args(out), tmp_.path(), 120);
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_THAT(again.err, HasSubstr("resuming: " + std::to_string(kept) + " of "));
    expect_same_as_fresh(out);
  }
  TempDir tmp_;
};

TEST_F(QuantizeInterrupt, SigintLeavesNoLoadableFolderAndResumes) {
  interrupt_and_resume(SIGINT);
}
TEST_F(QuantizeInterrupt, SigtermLeavesNoLoadableFolderAndResumes) {
  interrupt_and_resume(SIGTERM);
}
TEST_F(QuantizeInterrupt, SigkillLeavesNoLoadableFolderAndResumes) {
  interrupt_and_resume(SIGKILL);
}

// A partial folder of another run (other options) is not silently reused.
TEST_F(QuantizeInterrupt, StalePartialOfOtherOptionsIsRefusedUnlessForced) {
  const std::string out = tmp_.file("o");
  {
    testing::BackgroundRun run(args(out), tmp_.path(), {"INKLING_QUANTIZE_PAUSE_MS=150"});
    ASSERT_TRUE(testing::wait_for([&] { return finished_shards(out + ".partial") >= 1; }));
    run.signal(SIGKILL);
    run.wait();
  }
  auto other = args(out);
  other.push_back("--bits");
  other.push_back("8");
  expect_usage_error(run_cli(other, tmp_.path(), 60),
                     {out + ".partial", "another source or other options", "--force"}, 1);
  other.push_back("--force");
  other.push_back("-q");
  const RunResult forced = run_cli(other, tmp_.path(), 120);
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_TRUE(Engine::load(out).ok());
}

}  // namespace
}  // namespace inkling
