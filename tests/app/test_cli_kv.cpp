// --kv-type on the commands that run the model, and inspect --ctx's memory plan.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "../common/run_cli.h"

namespace inkling {
namespace {

using testing::run_cli;
using testing::TempDir;

const std::string kKvModel = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/full/og";

TEST(CliKv, Bf16GeneratesAndBadTypesAreRefused) {
  TempDir dir;
  auto r = run_cli({"generate", "-m", kKvModel, "--token-ids", "386,10,415,335", "-n", "4",
                    "--temperature", "0", "--kv-type", "bf16"},
                   dir.path(), 60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(r.out.empty());
  for (const char* cmd : {"generate", "chat", "bench", "serve", "inspect"}) {
    r = run_cli({cmd, "-m", kKvModel, "--kv-type", "q3"}, dir.path(), 60);
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("--kv-type"), std::string::npos) << cmd << ": " << r.err;
  }
}

TEST(CliKv, InspectPrintsTheMemoryOfASession) {
  TempDir dir;
  auto f = run_cli({"inspect", "-m", kKvModel, "--ctx", "100000"}, dir.path(), 60);
  auto b =
      run_cli({"inspect", "-m", kKvModel, "--ctx", "100000", "--kv-type", "bf16"}, dir.path(), 60);
  ASSERT_EQ(f.exit_code, 0) << f.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  for (const char* line :
       {"session of 100000 tokens (KV f32)", "weights mapped", "KV cache", "scratch", "total"})
    EXPECT_NE(f.out.find(line), std::string::npos) << line << "\n" << f.out;
  EXPECT_NE(b.out.find("session of 100000 tokens (KV bf16)"), std::string::npos) << b.out;
  // The totals differ by half the f32 KV: read both "(N bytes)".
  auto total = [](const std::string& out) {
    const size_t at = out.rfind("total");
    const size_t open = out.find('(', at);
    return std::stoull(out.substr(open + 1));
  };
  EXPECT_GT(total(f.out), total(b.out));
  auto none = run_cli({"inspect", "-m", kKvModel}, dir.path(), 60);
  EXPECT_EQ(none.out.find("session of"), std::string::npos);
}

}  // namespace
}  // namespace inkling
