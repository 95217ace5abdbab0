// --numerics fast|exact on every command that loads the model: a bad value is one error line
// before anything is loaded; generate (--json and text), bench (--json and the report), inspect
// and chat's /stats report the mode, fast by default; and the mode reaches the kernels: the
// teacher-forced logits of the bf16 demo model differ between the modes exactly when inspect
// lists other kernels for them (on a CPU without AVX512-BF16, fast binds the f32 kernels too).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../common/run_cli.h"

namespace inkling {
namespace {

using ::testing::HasSubstr;
using testing::run_cli;
using testing::TempDir;

const std::string kNumericsModel = std::string(INKLING_SOURCE_DIR) + "/models/inkling-demo";

class CliNumerics : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kNumericsModel + "/model.safetensors"))
      GTEST_SKIP() << "no demo model";
  }
  // `extra` plus --numerics MODE, or no --numerics at all when `mode` is empty.
  static std::vector<std::string> with_mode(std::vector<std::string> args,
                                            const std::string& mode) {
    if (!mode.empty()) args.insert(args.end(), {"--numerics", mode});
    return args;
  }
  TempDir tmp_;
};

TEST_F(CliNumerics, BadValueIsOneErrorLineBeforeTheModelLoads) {
  // A folder that does not exist: the flag is what is reported, not the model.
  for (const char* cmd : {"generate", "chat", "bench", "serve", "inspect"}) {
    auto r = run_cli({cmd, "-m", tmp_.file("nowhere"), "--numerics", "x"}, tmp_.path(), 30);
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.err;
    EXPECT_EQ(r.err, "error: --numerics: numerics 'x': expected fast or exact\n") << cmd;
    EXPECT_EQ(r.out, "") << cmd;
  }
  auto h = run_cli({"generate", "--help"}, tmp_.path());
  EXPECT_THAT(h.out, HasSubstr("--numerics TEXT=fast"));
}

TEST_F(CliNumerics, GenerateReportsTheMode) {
  for (const std::string mode : {"", "fast", "exact"}) {
    const std::string want = mode.empty() ? "fast" : mode;
    auto r = run_cli(with_mode({"generate", "-m", kNumericsModel, "-p", "In the beginning", "-n",
                                "3", "--temperature", "0", "-t", "1", "--json"},
                               mode),
                     tmp_.path(), 60);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["numerics"], want) << mode;
    EXPECT_EQ(j["ids"].size(), 3u);
    r = run_cli(with_mode({"generate", "-m", kNumericsModel, "-p", "In the beginning", "-n", "3",
                           "--temperature", "0", "-t", "1"},
                          mode),
                tmp_.path(), 60);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err, HasSubstr("; numerics: " + want + "\n")) << mode;
  }
}

TEST_F(CliNumerics, InspectReportsTheModeAndItsKernels) {
  auto fast = run_cli({"inspect", "-m", kNumericsModel}, tmp_.path(), 60);
  auto fast2 = run_cli({"inspect", "-m", kNumericsModel, "--numerics", "fast"}, tmp_.path(), 60);
  auto exact = run_cli({"inspect", "-m", kNumericsModel, "--numerics", "exact"}, tmp_.path(), 60);
  ASSERT_EQ(fast.exit_code, 0) << fast.err;
  ASSERT_EQ(exact.exit_code, 0) << exact.err;
  EXPECT_THAT(fast.out, HasSubstr("\nnumerics: fast ("));
  EXPECT_EQ(fast.out, fast2.out);  // fast is the default
  EXPECT_THAT(exact.out, HasSubstr("\nnumerics: exact (f32 activations in every product)\n"));
  // Exact binds the f32-activation kernels: none of them takes x as bf16 or int8.
  EXPECT_THAT(exact.out, ::testing::Not(HasSubstr("(x bf16)")));
  EXPECT_THAT(exact.out, ::testing::Not(HasSubstr("(x int8)")));

  // The logits follow the kernels: they differ between the modes exactly when the kernels do.
  auto logits = [&](const std::string& mode) {
    const std::string path = tmp_.file("logits_" + mode + ".npy");
    auto r =
        run_cli({"generate", "-m", kNumericsModel, "-p", "In the beginning God created", "-n", "1",
                 "--temperature", "0", "-t", "1", "--numerics", mode, "--dump-logits", path},
                tmp_.path(), 60);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return testing::read_file(path);
  };
  const std::string lf = logits("fast"), le = logits("exact");
  ASSERT_FALSE(lf.empty());
  ASSERT_EQ(lf.size(), le.size());
  auto kernels = [](const std::string& out) {
    std::string k;
    for (size_t p = out.find("kernels:"); p != std::string::npos; p = out.find("kernels:", p + 1))
      k += out.substr(p, out.find('\n', p) - p) + "\n";
    return k;
  };
  EXPECT_FALSE(kernels(fast.out).empty());
  EXPECT_EQ(kernels(fast.out) != kernels(exact.out), lf != le)
      << "fast kernels:\n"
      << kernels(fast.out) << "exact kernels:\n"
      << kernels(exact.out);
}

TEST_F(CliNumerics, BenchReportsTheMode) {
  const auto base = std::vector<std::string>{
      "bench", "-m", kNumericsModel, "--prompt-tokens", "4", "--gen-tokens", "4", "-t", "1"};
  for (const std::string mode : {"", "exact"}) {
    auto args = with_mode(base, mode);
    args.push_back("--json");
    auto r = run_cli(args, tmp_.path(), 120);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["numerics"], mode.empty() ? "fast" : mode) << mode;
  }
  // The report says which mode ran (each run measures the machine's limits: one is enough).
  auto r = run_cli(with_mode(base, "exact"), tmp_.path(), 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\nnumerics:  exact (")) << r.out;
}

TEST_F(CliNumerics, ChatStatsReportTheMode) {
  testing::write_file(tmp_.file("in.txt"), "Hello\n/stats\n");
  for (const std::string mode : {"", "exact"}) {
    const std::string want = mode.empty() ? "fast" : mode;
    auto r = run_cli(with_mode({"chat", "-m", kNumericsModel, "-n", "2", "--temperature", "0", "-t",
                                "1", "--no-history"},
                               mode),
                     tmp_.path(), 60, tmp_.file("in.txt"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("\nengine: numerics " + want + ", KV cache f32\n")) << r.out;
  }
}

}  // namespace
}  // namespace inkling
