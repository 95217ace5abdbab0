// The shipped demo model (models/inkling-demo, bf16, OG layout with MTP tensors) against
// transformers float32 eager on the same bf16 weights (tests/fixtures/demo, written by
// tools/export_demo.py): teacher-forced logits, a 64-token greedy continuation of a text prompt,
// and the perplexity of a validation passage of a few hundred tokens. (Its tokenizer and chat
// template are checked in tests/app/test_cli_demo.cpp, which links the text library.)
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "../common/fixtures.h"
#include "inkling/engine.h"
#include "inkling/sampler.h"

namespace inkling {
namespace {

using testing::json_ids;
using testing::read_json;

const std::string kModel = std::string(INKLING_SOURCE_DIR) + "/models/inkling-demo";
const std::string kRef = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/demo";

class DemoModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(kModel + "/model.safetensors") ||
        !std::filesystem::exists(kRef + "/logits.npy"))
      return;
    auto e = Engine::load(kModel, testing::parity_options(2, 256));
    if (e.ok())
      engine_ = e.value();
    else
      error_ = e.status().message();
  }
  static void TearDownTestSuite() { engine_.reset(); }
  void SetUp() override {
    if (!engine_ && error_.empty()) GTEST_SKIP() << "no demo model or reference";
    ASSERT_TRUE(engine_) << error_;
  }
  static inline std::shared_ptr<Engine> engine_;
  static inline std::string error_;
};

TEST_F(DemoModel, ConfigHasEveryFeatureLive) {
  const ModelInfo& info = engine_->info();
  EXPECT_EQ(info.vocab_size, 4096);
  EXPECT_EQ(info.unpadded_vocab, 4060);  // padded vocabulary
}

TEST_F(DemoModel, TeacherForcedLogits) {
  const auto prompt = json_ids(read_json(kRef + "/prompt.json"), "prompt_ids");
  ASSERT_EQ(prompt.size(), 32u);
  const auto r = testing::compare_logits(*engine_, prompt, kRef + "/logits.npy");
  ASSERT_EQ(r.error, "");
  std::printf("[demo] max|diff| %.3g, max|logit| %.3g, ratio %.3g\n", r.max_diff, r.max_ref,
              r.max_diff / r.max_ref);
  EXPECT_LE(r.max_diff, 1e-4f * r.max_ref);
}

TEST_F(DemoModel, Greedy64FromTextPrompt) {
  const auto ref = read_json(kRef + "/greedy.json");
  const auto prompt = json_ids(ref, "prompt_ids");  // "In the beginning" (see test_cli_demo)
  const auto want = json_ids(ref, "ids");
  ASSERT_EQ(want.size(), 64u);
  const auto got = testing::greedy_ids(*engine_, prompt, want.size());
  std::printf("[demo] greedy %zu/%zu tokens match\n", testing::matching_prefix(got, want),
              want.size());
  EXPECT_EQ(got, want);
}

TEST_F(DemoModel, ValidationPerplexityWithinHalfPercent) {
  const auto ref = read_json(kRef + "/ppl.json");
  const auto ids = json_ids(ref, "ids");
  ASSERT_GE(ids.size(), 256u);
  auto logits = engine_->new_session()->prefill_all_logits(ids);
  ASSERT_TRUE(logits.ok()) << logits.status().message();
  const size_t V = static_cast<size_t>(engine_->info().unpadded_vocab);
  ASSERT_EQ(logits->size(), ids.size() * V);
  double nll = 0;
  for (size_t t = 0; t + 1 < ids.size(); ++t) {
    const float* row = logits->data() + t * V;
    double mx = row[0];
    for (size_t v = 1; v < V; ++v) mx = std::max(mx, double(row[v]));
    double sum = 0;
    for (size_t v = 0; v < V; ++v) sum += std::exp(double(row[v]) - mx);
    nll += mx + std::log(sum) - double(row[ids[t + 1]]);
  }
  const double n = double(ids.size() - 1);
  const double ppl = std::exp(nll / n), want = ref["ppl"].get<double>();
  std::printf("[demo] validation passage of %zu tokens: perplexity %.4f (transformers %.4f)\n",
              ids.size(), ppl, want);
  EXPECT_NEAR(ppl, want, 0.005 * want);
}

}  // namespace
}  // namespace inkling
