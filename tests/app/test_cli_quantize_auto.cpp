// `inkling quantize --recipe auto` on the demo model: the plan fills the budget without passing
// it, mixes widths, writes a folder that loads and generates, and its saved cost table gives the
// same plan again without calibration text; the dry run prints the plan; a missing budget or
// calibration, --bits, a budget nothing fits and another model's table are one error each.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "../common/run_cli.h"
#include "../common/tmp_files.h"
#include "quantize_helpers.h"

namespace inkling {
namespace {

using ::testing::HasSubstr;
using testing::read_tensors;
using testing::run_cli;
using testing::RunResult;
using testing::TempDir;

constexpr const char* kWidths = "2,4";
const std::string kAutoDemo = std::string(INKLING_SOURCE_DIR) + "/models/inkling-demo";

class QuantizeAuto : public ::testing::Test {
 protected:
  RunResult q(std::vector<std::string> extra, int timeout = 900) {
    std::vector<std::string> args = {"quantize", "-m", kAutoDemo, "-t", "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args, tmp_.path(), timeout);
  }
  void SetUp() override {
    std::ifstream f(std::string(INKLING_SOURCE_DIR) + "/docs/quantization.md");
    std::ofstream(tmp_.file("calib.txt")) << f.rdbuf();
  }
  // Small calibration: quick, and enough to rank the units. Two widths around the 3-bit budget:
  // every (group, width) is encoded with the range search, the test's cost (a CI machine took
  // over 300 s with four widths).
  std::vector<std::string> calib() {
    return {"--calibrate",          tmp_.file("calib.txt"),
            "--calibrate-window",   "128",
            "--calibrate-tokens",   "512",
            "--sensitivity-tokens", "256",
            "--auto-bits",          kWidths,
            "--auto-groups",        "64"};
  }
  static uint64_t tensor_bytes(const std::string& dir) {
    uint64_t n = 0;
    for (const auto& [name, t] : read_tensors(dir))
      if (name.find("mtp.") == std::string::npos) n += t.bytes.size();
    return n;
  }
  TempDir tmp_;
};

TEST_F(QuantizeAuto, FillsTheBudgetAndItsTableReproducesThePlan) {
  // The budget: what uniform 3-bit writes.
  const RunResult u = q({"-o", tmp_.file("u3"), "--recipe", "uniform", "--bits", "3", "-q"});
  ASSERT_EQ(u.exit_code, 0) << u.err;
  const uint64_t budget = tensor_bytes(tmp_.file("u3"));
  char gib[32];
  std::snprintf(gib, sizeof gib, "%.12f", double(budget) / (1024.0 * 1024 * 1024));
  std::vector<std::string> args = {"-o",
                                   tmp_.file("a"),
                                   "--recipe",
                                   "auto",
                                   "--weights-gb",
                                   gib,
                                   "--sensitivity",
                                   tmp_.file("costs.json")};
  for (const std::string& s : calib()) args.push_back(s);
  const RunResult a = q(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_THAT(a.out, HasSubstr("recipe auto: 18 module groups, costs measured over 256"));
  EXPECT_THAT(a.out, HasSubstr("predicted KL"));
  const uint64_t bytes = tensor_bytes(tmp_.file("a"));
  EXPECT_LE(bytes, budget);
  EXPECT_GT(double(bytes), 0.97 * double(budget)) << "the budget is used";
  // Several widths, the router as floats.
  std::set<std::string> widths;
  std::ifstream cfg(tmp_.file("a") + "/config.json");
  const std::string text((std::istreambuf_iterator<char>(cfg)), {});
  const std::regex bits_re(R"("bits": (\d))");
  for (std::sregex_iterator it(text.begin(), text.end(), bits_re), end; it != end; ++it)
    widths.insert((*it)[1]);
  EXPECT_GE(widths.size(), 2u) << text;
  const RunResult g =
      run_cli({"generate", "-m", tmp_.file("a"), "-p", "The", "-n", "4"}, tmp_.path());
  ASSERT_EQ(g.exit_code, 0) << g.err;

  // The saved table, without calibration text: the same plan.
  const RunResult c =
      q({"-o", tmp_.file("c"), "--recipe", "auto", "--weights-gb", gib, "--sensitivity",
         tmp_.file("costs.json"), "--auto-bits", kWidths, "--auto-groups", "64", "--search"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_THAT(c.out, HasSubstr("(read from the sensitivity table)"));
  std::ifstream cfg_c(tmp_.file("c") + "/config.json");
  const std::string text_c((std::istreambuf_iterator<char>(cfg_c)), {});
  auto quant_block = [](const std::string& t) { return t.substr(t.find("\"quantization\"")); };
  EXPECT_EQ(quant_block(text_c).substr(0, 2000), quant_block(text).substr(0, 2000));

  // The dry run prints the same plan.
  const RunResult d = q({"--dry-run", "--recipe", "auto", "--weights-gb", gib, "--sensitivity",
                         tmp_.file("costs.json"), "--auto-bits", kWidths, "--auto-groups", "64"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_THAT(d.out, HasSubstr("recipe auto: 18 module groups"));
}

TEST_F(QuantizeAuto, BadRequestsAreOneErrorEach) {
  auto err = [&](std::vector<std::string> extra, const std::string& want) {
    const RunResult r = q(extra);
    EXPECT_EQ(r.exit_code, 2) << want << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(want));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  };
  err({"--dry-run", "--recipe", "auto", "--calibrate", tmp_.file("calib.txt")},
      "give the budget, --memory-gb G (with --context N) or --weights-gb G");
  err({"--dry-run", "--recipe", "auto", "--memory-gb", "4"}, "give --calibrate TEXT");
  err({"--dry-run", "--recipe", "auto", "--memory-gb", "4", "--bits", "3", "--calibrate",
       tmp_.file("calib.txt")},
      "--bits: recipe auto chooses the widths");
  err({"--dry-run", "--recipe", "auto", "--memory-gb", "4", "--auto-bits", "7", "--calibrate",
       tmp_.file("calib.txt")},
      "--auto-bits");
  err({"--dry-run", "--recipe", "auto", "--memory-gb", "4", "--auto-groups", "48", "--calibrate",
       tmp_.file("calib.txt")},
      "--auto-groups");
  err({"--dry-run", "--recipe", "auto", "--memory-gb", "4", "--group-size", "32", "--calibrate",
       tmp_.file("calib.txt")},
      "--group-size: recipe auto chooses the group sizes");
  // Nothing fits: the smallest plan is named.
  std::vector<std::string> tiny = {"--dry-run", "--recipe", "auto", "--weights-gb", "0.0001"};
  for (const std::string& s : calib()) tiny.push_back(s);
  err(tiny, "the smallest plan of these widths needs");
  // The KV cache alone is over the memory budget.
  std::vector<std::string> kv = {"--dry-run", "--recipe",  "auto",   "--memory-gb",
                                 "0.01",      "--context", "1000000"};
  for (const std::string& s : calib()) kv.push_back(s);
  err(kv, "leaves nothing for the quantized matrices");
  // Another model's table.
  std::ofstream(tmp_.file("other.json"))
      << R"({"format": "inkling-sensitivity", "model_type": "inkling", "specs": ["q4/g64"],
            "kl_nats_per_token": {"embed": [0.1], "attention.40": [0.2]}})";
  err({"--dry-run", "--recipe", "auto", "--memory-gb", "4", "--sensitivity",
       tmp_.file("other.json")},
      "has no cost for attention.0");
}

}  // namespace
}  // namespace inkling
