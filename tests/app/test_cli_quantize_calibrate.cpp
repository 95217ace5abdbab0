// `inkling quantize --calibrate / --imatrix / --search` on the demo model: the importance matrix
// covers every matrix the forward pass multiplies (routed experts over their own tokens), a
// saved one reproduces the calibrated run byte for byte, the output loads and generates, and bad
// calibration input or another model's importance matrix is one clear error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "../common/run_cli.h"
#include "../common/tmp_files.h"
#include "quantize/imatrix.h"
#include "quantize_helpers.h"

namespace inkling {
namespace {

using ::testing::HasSubstr;
using testing::read_tensors;
using testing::run_cli;
using testing::RunResult;
using testing::TempDir;

const std::string kDemo = std::string(INKLING_SOURCE_DIR) + "/models/inkling-demo";

// English text the demo model's tokenizer reads (the project's own docs: plenty of tokens).
std::string calibration_text() {
  std::ifstream f(std::string(INKLING_SOURCE_DIR) + "/docs/quantization.md");
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

class QuantizeCalibrate : public ::testing::Test {
 protected:
  RunResult q(std::vector<std::string> extra, int timeout = 120) {
    std::vector<std::string> args = {"quantize", "-m", kDemo, "--bits", "4", "-t", "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args, tmp_.path(), timeout);
  }
  void SetUp() override { write(tmp_.file("calib.txt"), calibration_text()); }
  TempDir tmp_;
};

TEST_F(QuantizeCalibrate, ImatrixCoversTheProductsAndReproducesTheRun) {
  const RunResult a =
      q({"-o", tmp_.file("a"), "--calibrate", tmp_.file("calib.txt"), "--calibrate-tokens", "4096",
         "--calibrate-window", "256", "--imatrix", tmp_.file("demo.imatrix")});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_THAT(a.out, HasSubstr("calibrated on 4096 tokens (16 windows)"));
  // Every matrix but the embedding (a gather, not a product) is covered.
  EXPECT_THAT(a.out, HasSubstr("importance: 47 of 48 matrices covered"));

  auto m = load_imatrix(tmp_.file("demo.imatrix"));
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->meta.at("tokens"), "4096");
  const std::string L = "language_model.model.layers.";
  // Attention sees every token; the routed experts of a MoE layer share out top_k per token.
  bool saw_experts = false;
  for (const auto& [name, e] : m->entries) {
    EXPECT_EQ(e.mean_sq.size(), size_t(e.n * e.cols)) << name;
    if (name.find("switch_mlp.gate_proj") != std::string::npos) {
      saw_experts = true;
      int64_t sum = 0;
      for (int64_t t : e.tokens) sum += t;
      EXPECT_GT(e.n, 1) << name;
      EXPECT_EQ(sum % 4096, 0) << name << ": top_k x tokens";
      EXPECT_GT(sum, 4096) << name;
    }
    if (name.find("self_attn.qkvr_proj") != std::string::npos) {
      EXPECT_EQ(e.tokens[0], 4096) << name;
      double mean = 0;
      for (float v : e.mean_sq) mean += v;
      EXPECT_GT(mean, 0) << name;
    }
  }
  EXPECT_TRUE(saw_experts);
  EXPECT_FALSE(m->entries.count("language_model.model.embed_tokens"));

  // The saved file reproduces the calibrated run; plain search and the MLX rule differ from it.
  const RunResult b = q({"-o", tmp_.file("b"), "--imatrix", tmp_.file("demo.imatrix"), "-q"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const auto ta = read_tensors(tmp_.file("a")), tb = read_tensors(tmp_.file("b"));
  ASSERT_EQ(ta.size(), tb.size());
  for (const auto& [name, t] : ta) EXPECT_EQ(t.bytes, tb.at(name).bytes) << name;
  const RunResult c = q({"-o", tmp_.file("c"), "-q"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const auto tc = read_tensors(tmp_.file("c"));
  const std::string w = L + "0.self_attn.qkvr_proj.weight";
  ASSERT_TRUE(tc.count(w));
  EXPECT_NE(ta.at(w).bytes, tc.at(w).bytes);

  // The output is an ordinary MLX folder: it loads and generates.
  const RunResult g = run_cli(
      {"generate", "-m", tmp_.file("a"), "-p", "In the beginning", "-n", "8", "--temperature", "0"},
      tmp_.path(), 60);
  EXPECT_EQ(g.exit_code, 0) << g.err;
}

TEST_F(QuantizeCalibrate, BadCalibrationTextIsOneError) {
  write(tmp_.file("empty.txt"), "");
  write(tmp_.file("bad.txt"), std::string("In the beginning \xff\xfe was", 22));
  write(tmp_.file("short.txt"), "In the beginning God created the heaven and the earth.");
  struct Case {
    std::string file, what;
  } cases[] = {{"empty.txt", "the calibration text is empty"},
               {"bad.txt", "not UTF-8 text"},
               {"short.txt", "shorter than one window"},
               {"missing.txt", "no such file"}};
  for (const Case& c : cases) {
    const RunResult r = q({"-o", tmp_.file("o"), "--calibrate", tmp_.file(c.file), "-q"});
    EXPECT_EQ(r.exit_code, 2) << c.file << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.what)) << c.file;
    EXPECT_THAT(r.err, HasSubstr(c.file)) << c.file;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(std::filesystem::exists(tmp_.file("o")));
  }
}

TEST_F(QuantizeCalibrate, AnotherModelsImatrixOrAFileOfOtherTensorsIsRefused) {
  // The demo model's matrices, one renamed and one reshaped: both are another model's.
  Imatrix m;
  ImatrixEntry e;
  e.cols = 8;
  e.mean_sq.assign(8, 1.f);
  e.tokens = {10};
  m.entries["language_model.model.layers.0.self_attn.qkvr_proj"] = e;
  ASSERT_TRUE(save_imatrix(m, tmp_.file("shape.imatrix")));
  Imatrix other;
  other.entries["model.layers.0.attn.q_proj"] = e;
  ASSERT_TRUE(save_imatrix(other, tmp_.file("name.imatrix")));
  write(tmp_.file("junk.imatrix"), "not a safetensors file at all");
  struct Case {
    std::string file, what;
  } cases[] = {{"shape.imatrix", "this model's matrix needs"},
               {"name.imatrix", "no such matrix in this model"},
               {"junk.imatrix", "junk.imatrix"}};
  for (const Case& c : cases) {
    const RunResult r = q({"-o", tmp_.file("o"), "--imatrix", tmp_.file(c.file), "-q"});
    EXPECT_EQ(r.exit_code, 2) << c.file << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.what)) << c.file;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
}  // namespace inkling
