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

struct Case {
  std::string fixture, layout;
};

std::string case_name(const ::testing::TestParamInfo<Case>& i) {
  return i.param.fixture + "_" + i.param.layout;
}

class Parity : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    dir_ = fixture_dir(GetParam().fixture);
    model_ = dir_ + "/" + GetParam().layout;
    if (!std::filesystem::exists(model_ + "/config.json")) GTEST_SKIP() << "no " << model_;
    auto e = Engine::load(model_, EngineOptions{2, 256});
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
  auto ref = read_npy_f32(dir_ + "/ref/logits.npy");
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  const int64_t V = engine_->info().unpadded_vocab;
  ASSERT_EQ(ref->shape, (std::vector<int64_t>{int64_t(prompt_.size()), V}));
  auto got = engine_->new_session()->prefill_all_logits(prompt_);
  ASSERT_TRUE(got.ok()) << got.status().message();
  float max_ref = 0, max_diff = 0;
  for (size_t i = 0; i < ref->data.size(); ++i) {
    max_ref = std::max(max_ref, std::fabs(ref->data[i]));
    max_diff = std::max(max_diff, std::fabs(ref->data[i] - (*got)[i]));
  }
  RecordProperty("max_abs_diff", std::to_string(max_diff));
  std::printf("[parity] %s/%s: max|diff| %.3g, max|logit| %.3g, ratio %.3g\n",
              GetParam().fixture.c_str(), GetParam().layout.c_str(), max_diff, max_ref,
              max_diff / max_ref);
  EXPECT_LE(max_diff, 1e-4f * max_ref);
}

TEST_P(Parity, Greedy64TokensExact) {
  const auto want = json_ids(read_json(dir_ + "/ref/greedy.json"), "ids");
  ASSERT_FALSE(want.empty());
  auto s = engine_->new_session();
  auto logits = s->prefill(prompt_);
  ASSERT_TRUE(logits.ok());
  std::vector<int32_t> got;
  for (size_t i = 0; i < want.size(); ++i) {
    got.push_back(argmax(logits.value()));
    if (i + 1 < want.size()) logits = s->decode(got.back());
    ASSERT_TRUE(logits.ok());
  }
  size_t matched = 0;
  while (matched < got.size() && got[matched] == want[matched]) ++matched;
  std::printf("[parity] %s/%s: greedy %zu/%zu tokens match\n", GetParam().fixture.c_str(),
              GetParam().layout.c_str(), matched, want.size());
  EXPECT_EQ(got, want);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Parity,
                         ::testing::Values(Case{"full", "hf"}, Case{"full", "og"},
                                           Case{"hfspell", "hf"}, Case{"hfspell", "og"},
                                           Case{"bf16", "hf"}, Case{"bf16", "og"},
                                           Case{"defaults", "hf"}, Case{"defaults", "og"}),
                         case_name);

}  // namespace
}  // namespace inkling
