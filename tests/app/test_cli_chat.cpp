// `inkling chat` driven through stdin on a tiny random model with the real vocabulary: several
// turns (the second reuses the first turn's prompt state), /reset, and a clean exit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "../common/run_cli.h"

namespace inkling {
namespace {

using testing::run_cli;
using testing::TempDir;
using testing::write_file;

TEST(CliChat, MultiTurnSessionEndsCleanly) {
  const std::string tok = std::string(INKLING_SOURCE_DIR) + "/tests/data/inkling";
  if (!std::filesystem::exists(tok + "/tokenizer.json")) GTEST_SKIP() << "no shared tokenizer data";
  TempDir dir;
  const std::string model = dir.path() + "/model";
  // Build the model with the server tests' generator.
  const std::string maker = std::string(INKLING_BINARY_DIR) + "/make_tiny_chat_model";
  ASSERT_EQ(std::system((maker + " " + model + " " + tok + " > /dev/null").c_str()), 0);
  write_file(dir.path() + "/turns.txt",
             "Hello there\nAnd again\n/reset\nFresh start\n/exit\nnever read\n");
  auto r = run_cli({"chat", "-m", model, "-n", "8", "--seed", "3", "--show-reasoning"}, dir.path(),
                   120, dir.path() + "/turns.txt");
  ASSERT_FALSE(r.timed_out);
  ASSERT_FALSE(r.signaled) << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // One answer line per turn before /exit (three turns; the random model's text may be empty).
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 3) << r.out;
}

}  // namespace
}  // namespace inkling
