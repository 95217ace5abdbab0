// Parity against transformers: teacher-forced logits and 64-token greedy continuations for every
// committed fixture in every layout it was saved in (tools/make_fixtures.py made them).
#include <gtest/gtest.h>

#include <cmath>

#include "../common/fixtures.h"
#include "inkling/engine.h"
#include "inkling/sampler.h"

namespace inkling {
namespace {

using testing::fixture_dir;
using testing::json_ids;
using testing::read_json;

struct ParityCase {
  std::string fixture, layout;
};

std::string case_name(const ::testing::TestParamInfo<ParityCase>& i) {
  return i.param.fixture + "_" + i.param.layout;
}

class Parity : public ::testing::TestWithParam<ParityCase> {
 protected:
  void SetUp() override {
    dir_ = fixture_dir(GetParam().fixture);
    model_ = dir_ + "/" + GetParam().layout;
    if (!std::filesystem::exists(model_ + "/config.json")) GTEST_SKIP() << "no " << model_;
    auto e = Engine::load(model_, testing::parity_options(2, 256));
    ASSERT_TRUE(e.ok()) << e.status().message();
    engine_ = e.value();
    prompt_ = json_ids(read_json(dir_ + "/ref/prompt.json"), "prompt_ids");
    ASSERT_FALSE(prompt_.empty());
  }
  std::string dir_, model_;
  std::shared_ptr<Engine> engine_;
  std::vector<int32_t> prompt_;
};

TEST_P(Parity, TeacherForcedLogits) {
  const auto r = testing::compare_logits(*engine_, prompt_, dir_ + "/ref/logits.npy");
  ASSERT_EQ(r.error, "");
  std::printf("[parity] %s/%s: max|diff| %.3g, max|logit| %.3g, ratio %.3g\n",
              GetParam().fixture.c_str(), GetParam().layout.c_str(), r.max_diff, r.max_ref,
              r.max_diff / r.max_ref);
  EXPECT_LE(r.max_diff, 1e-4f * r.max_ref);
}

TEST_P(Parity, Greedy64TokensExact) {
  const auto want = json_ids(read_json(dir_ + "/ref/greedy.json"), "ids");
  ASSERT_EQ(want.size(), 64u);
  const auto got = testing::greedy_ids(*engine_, prompt_, want.size());
  std::printf("[parity] %s/%s: greedy %zu/%zu tokens match\n", GetParam().fixture.c_str(),
              GetParam().layout.c_str(), testing::matching_prefix(got, want), want.size());
  EXPECT_EQ(got, want);
}

// Fast numerics on the same fixtures: no further from transformers f32 than transformers' own bf16
// run (testing::fast_parity_bar); f32 fixtures keep f32 products, so they stay at exact's bar.
TEST_P(Parity, TeacherForcedLogitsFast) {
  auto e = Engine::load(model_, testing::parity_options(2, 256, Numerics::kFast));
  ASSERT_TRUE(e.ok()) << e.status().message();
  const auto r = testing::compare_logits(**e, prompt_, dir_ + "/ref/logits.npy");
  ASSERT_EQ(r.error, "");
  std::printf("[parity fast] %s/%s: max|diff| %.3g, max|logit| %.3g, ratio %.3g\n",
              GetParam().fixture.c_str(), GetParam().layout.c_str(), r.max_diff, r.max_ref,
              r.max_diff / r.max_ref);
  // Quantized experts (inkling2_loop_q, inkling2_mxfp8) take fast products like bf16 weights do,
  // MLX affine weights (inkling2_loop_mlx) int8 activations.
  const std::string& f = GetParam().fixture;
  const bool f32 =
      f != "bf16" && f != "inkling2_loop_q" && f != "inkling2_mxfp8" && f != "inkling2_loop_mlx";
  EXPECT_LE(r.max_diff,
            (f32 ? 1e-4 : testing::fast_parity_bar(dir_, testing::kFastParityBar)) * r.max_ref);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, Parity,
    ::testing::Values(ParityCase{"full", "hf"}, ParityCase{"full", "og"},
                      ParityCase{"hfspell", "hf"}, ParityCase{"hfspell", "og"},
                      ParityCase{"bf16", "hf"}, ParityCase{"bf16", "og"},
                      ParityCase{"defaults", "hf"}, ParityCase{"defaults", "og"},
                      ParityCase{"inkling2", "hf"}, ParityCase{"inkling2", "tf"},
                      ParityCase{"inkling2_loop", "hf"}, ParityCase{"inkling2_loop", "tf"},
                      ParityCase{"inkling2_loop_q", "hf"}, ParityCase{"inkling2_mxfp8", "hf"},
                      ParityCase{"inkling2_mxfp8", "tf"}, ParityCase{"inkling2_loop_mlx", "mlx"}),
    case_name);

}  // namespace
}  // namespace inkling
