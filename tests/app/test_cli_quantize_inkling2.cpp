// `inkling quantize` of Inkling 2: the output of either source layout is, byte for byte, what MLX's
// own mx.quantize wrote for the same model (tests/fixtures/inkling2_loop_mlx, made by
// tools/make_inkling2_fixtures.py), it runs to transformers on MLX's dequantized weights, quantized
// sources (NVFP4 + MXFP8 experts) requantize, and the dry run sizes the real Mini and Small.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../common/fixtures.h"
#include "../common/run_cli.h"
#include "../common/tmp_files.h"
#include "inkling/engine.h"
#include "model/model.h"
#include "ops/quant.h"
#include "quantize_helpers.h"

namespace inkling {
namespace {

using testing::fixture_path;
using ::testing::HasSubstr;
using testing::read_tensors;
using testing::run_cli;
using testing::RunResult;
using testing::table_gib;
using testing::TempDir;

// The specs the fixture's mx.quantize used (MLX_OVERRIDES in the generator).
const std::vector<std::string> kSpecs = {
    "--bits",     "4",          "--group-size",
    "32",         "--override", "attention=8:64",
    "--override", "embed=6",    "--override",
    "head=5:64",  "--override", "model.layers.0.self_attn.o_proj.linear=off"};

RunResult quantize(const std::string& src, const std::string& dst, const std::string& scratch,
                   std::vector<std::string> extra = kSpecs) {
  std::vector<std::string> args = {"quantize", "-q", "-m", src, "-o", dst};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_cli(args, scratch, 120);
}

nlohmann::json quantization_block(const std::string& dir) {
  return testing::read_json(dir + "/config.json").at("quantization");
}

class QuantizeInkling2 : public ::testing::TestWithParam<std::string> {};

TEST_P(QuantizeInkling2, WritesWhatMlxWrites) {
  TempDir tmp;
  const std::string fx = fixture_path("inkling2_loop_mlx");
  const RunResult r = quantize(fx + "/" + GetParam(), tmp.file("o"), tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto mine = read_tensors(tmp.file("o")), mlx = read_tensors(fx + "/mlx");
  ASSERT_FALSE(mlx.empty());
  EXPECT_EQ(mine.size(), mlx.size());
  int quantized = 0;
  for (const auto& [name, t] : mlx) {
    ASSERT_TRUE(mine.count(name)) << name << " not written";
    EXPECT_EQ(mine[name].dtype, t.dtype) << name;
    EXPECT_EQ(mine[name].shape, t.shape) << name;
    EXPECT_TRUE(mine[name].bytes == t.bytes) << name << ": bytes differ from MLX's";
    quantized += name.size() > 7 && name.compare(name.size() - 7, 7, ".scales") == 0;
  }
  EXPECT_EQ(quantized, 97);  // embed, head, 68 attention linears, 27 expert stacks
  EXPECT_EQ(quantization_block(tmp.file("o")), quantization_block(fx + "/mlx"));

  // And it runs to the reference (transformers on MLX's dequantized weights).
  auto e = Engine::load(tmp.file("o"), testing::parity_options(2, 256));
  ASSERT_TRUE(e.ok()) << e.status().message();
  const auto prompt = testing::json_ids(testing::read_json(fx + "/ref/prompt.json"), "prompt_ids");
  const auto p = testing::compare_logits(**e, prompt, fx + "/ref/logits.npy");
  ASSERT_EQ(p.error, "");
  EXPECT_LE(p.max_diff, 1e-4f * p.max_ref);
}

INSTANTIATE_TEST_SUITE_P(Layouts, QuantizeInkling2, ::testing::Values("hf", "tf"),
                         [](const auto& i) { return i.param; });

// Mini as released (NVFP4 experts in layers 0-4, MXFP8 in 5-8, original layout) requantizes: the
// experts are decoded as the engine runs them, then written MLX affine, and the folder loads.
TEST(QuantizeInkling2Sources, Nvfp4AndMxfp8ExpertsRequantize) {
  TempDir tmp;
  const RunResult r = quantize(fixture_path("inkling2_loop_q/hf"), tmp.file("o"), tmp.path(),
                               {"--bits", "8", "--group-size", "32"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto t = read_tensors(tmp.file("o"));
  for (int l = 0; l < 9; ++l)
    for (const char* p : {"gate_proj", "up_proj", "down_proj"}) {
      const std::string m = "model.layers." + std::to_string(l) + ".mlp.switch_mlp." + p;
      ASSERT_TRUE(t.count(m + ".scales")) << m;
      EXPECT_EQ(t[m + ".weight"].dtype, DType::U32) << m;
      EXPECT_EQ(t[m + ".scales"].dtype, DType::BF16) << m;  // NVFP4 / MXFP8 sources: bf16 scales
    }
  // Every expert row decodes to its source row within the 8-bit step of its group (a misplaced
  // row, expert or half of w13 would be off by the weights' own size).
  auto src = Model::load(fixture_path("inkling2_loop_q/hf"));
  auto out = Model::load(tmp.file("o"));
  ASSERT_TRUE(src.ok()) << src.status().message();
  ASSERT_TRUE(out.ok()) << out.status().message();
  const auto& a = (*src)->weights.v2.layers;
  const auto& b = (*out)->weights.v2.layers;
  ASSERT_EQ(a.size(), b.size());
  double worst = 0;
  int rows = 0;
  for (size_t l = 0; l < a.size(); ++l)
    for (size_t x = 0; x < a[l].moe.routed.size(); ++x)
      for (auto pick : {&SwiGluWeights::gate, &SwiGluWeights::up, &SwiGluWeights::down}) {
        const MatView& u = a[l].moe.routed[x].*pick;
        const MatView& v = b[l].moe.routed[x].*pick;
        ASSERT_EQ(v.format, WeightFormat::kAffine);
        ASSERT_EQ(u.rows, v.rows);
        ASSERT_EQ(u.cols, v.cols);
        std::vector<float> ru(size_t(u.cols)), rv(size_t(v.cols));
        for (int64_t r = 0; r < u.rows; r += 7, ++rows) {
          dequant_row(u, r, ru.data());
          dequant_row(v, r, rv.data());
          for (int64_t g = 0; g < u.cols; g += 32) {
            float lo = ru[size_t(g)], hi = lo;
            for (int64_t k = g; k < g + 32; ++k) {
              lo = std::min(lo, ru[size_t(k)]);
              hi = std::max(hi, ru[size_t(k)]);
            }
            const double step = std::max(double(hi - lo) / 255, 1e-30);
            for (int64_t k = g; k < g + 32; ++k)
              worst = std::max(worst, std::abs(double(rv[size_t(k)] - ru[size_t(k)])) / step);
          }
        }
      }
  std::printf("[quantize inkling2] NVFP4/MXFP8 -> q8/g32: %d expert rows, worst %.2f steps\n", rows,
              worst);
  // Half a step, plus the bf16 rounding of the scale (2^-9 relative, times up to 255 levels) and of
  // the bias: under 2.5 steps. A misplaced row is off by hundreds.
  EXPECT_LE(worst, 2.5);
  auto e = Engine::load(tmp.file("o"), testing::parity_options(2, 256));
  ASSERT_TRUE(e.ok()) << e.status().message();
}

// The recipes sized for the real models (config.json only: the reference's defaults).
TEST(QuantizeDryRunInkling2, MiniAndSmallRecipesFit) {
  TempDir tmp;
  const std::string mini = tmp.file("mini"), small = tmp.file("small");
  std::filesystem::create_directories(mini);
  std::filesystem::create_directories(small);
  std::ofstream(mini + "/config.json")
      << R"({"model_type": "inkling2_loop", "text_config": {"model_type": "inkling2_loop_text"}})";
  std::ofstream(small + "/config.json") << R"({"model_type": "inkling2"})";
  const RunResult m = run_cli({"quantize", "--dry-run", "-m", mini, "--recipe", "mini-16gb",
                               "--memory-gb", "16", "--context", "32768"},
                              tmp.path());
  ASSERT_EQ(m.exit_code, 0) << m.err;
  std::printf("%s", m.out.c_str());
  // 24 layers x 128 experts x 3 matrices of 1152 x 2304 at 3 bits + bf16 scale and bias per 64.
  EXPECT_NEAR(table_gib(m.out, "routed experts"),
              24.0 * 128 * 3 * 1152 * 2304 * 3.5 / 8 / (1024.0 * 1024 * 1024), 1e-3);
  EXPECT_THAT(m.out, HasSubstr("fits 16 GiB with 32768 tokens (f32 KV): yes"));
  // The looped core keeps a cache per pass: 8 visits of full layers (5, 23, and 11, 17 thrice).
  EXPECT_THAT(m.out, HasSubstr("8 global layer visits: 64.0 KiB per token in f32"));
  EXPECT_THAT(m.out, HasSubstr("40 sliding layer visits"));
  const RunResult s = run_cli({"quantize", "--dry-run", "-m", small, "--recipe", "small-256gb",
                               "--memory-gb", "256", "--context", "32768"},
                              tmp.path());
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_NEAR(table_gib(s.out, "routed experts"),
              48.0 * 384 * 3 * 2304 * 4608 * 3.5 / 8 / (1024.0 * 1024 * 1024), 1e-3);
  EXPECT_THAT(s.out, HasSubstr("fits 256 GiB with 32768 tokens (f32 KV): yes"));
  EXPECT_THAT(s.out, HasSubstr("8 global layers"));
}

}  // namespace
}  // namespace inkling
