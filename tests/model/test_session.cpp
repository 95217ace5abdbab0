// Session behaviour on a fixture model: incremental decode == one-shot prefill, causality, chunk
// size independence, snapshot/restore, and input validation that leaves the state untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "../common/fixtures.h"
#include "inkling/engine.h"

namespace inkling {
namespace {

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = testing::fixture_dir("full") + "/og";
    if (!std::filesystem::exists(model_ + "/config.json")) GTEST_SKIP() << "fixture missing";
    prompt_ = testing::json_ids(
        testing::read_json(testing::fixture_dir("full") + "/ref/prompt.json"), "prompt_ids");
    ASSERT_GE(prompt_.size(), 24u);
  }
  std::shared_ptr<Engine> load(int64_t chunk) {
    auto e = Engine::load(model_, EngineOptions{2, chunk});
    EXPECT_TRUE(e.ok()) << e.status().message();
    return e.ok() ? e.value() : nullptr;
  }
  static float max_diff(std::span<const float> a, std::span<const float> b) {
    float m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
    return m;
  }
  static int32_t argmax_of(std::span<const float> v) {
    return int32_t(std::max_element(v.begin(), v.end()) - v.begin());
  }
  std::string model_;
  std::vector<int32_t> prompt_;
};

TEST_F(SessionTest, IncrementalDecodeMatchesOneShotPrefill) {
  auto e = load(256);
  const int64_t V = e->info().unpadded_vocab;
  auto all = e->new_session()->prefill_all_logits(prompt_);
  ASSERT_TRUE(all.ok());
  auto s = e->new_session();
  for (size_t t = 0; t < prompt_.size(); ++t) {
    auto l = s->decode(prompt_[t]);
    ASSERT_TRUE(l.ok());
    EXPECT_LE(max_diff(l.value(), std::span<const float>(all->data() + t * size_t(V), size_t(V))),
              1e-4f)
        << "position " << t;
  }
}

TEST_F(SessionTest, ChunkSizeDoesNotChangeLogits) {
  auto ref = load(256)->new_session()->prefill_all_logits(prompt_);
  ASSERT_TRUE(ref.ok());
  for (int64_t chunk : {1, 3, 8, 13}) {
    auto got = load(chunk)->new_session()->prefill_all_logits(prompt_);
    ASSERT_TRUE(got.ok());
    EXPECT_LE(max_diff(*got, *ref), 1e-4f) << "chunk " << chunk;
  }
}

TEST_F(SessionTest, PrefillIsCausal) {
  auto e = load(256);
  const size_t V = size_t(e->info().unpadded_vocab), cut = prompt_.size() / 2;
  auto a = e->new_session()->prefill_all_logits(prompt_);
  auto changed = prompt_;
  for (size_t i = cut; i < changed.size(); ++i) changed[i] = (changed[i] + 7) % int32_t(V);
  auto b = e->new_session()->prefill_all_logits(changed);
  ASSERT_TRUE(a.ok() && b.ok());
  // Earlier positions may differ only by rounding (MoE expert batches change size), never by
  // information from later tokens, which moves logits by O(1).
  EXPECT_LE(max_diff(std::span<const float>(a->data(), cut * V),
                     std::span<const float>(b->data(), cut * V)),
            1e-4f);
  EXPECT_GT(max_diff(std::span<const float>(a->data() + cut * V, V),
                     std::span<const float>(b->data() + cut * V, V)),
            0.f);
}

TEST_F(SessionTest, SnapshotRestoreReplaysExactly) {
  auto e = load(4);
  auto s = e->new_session();
  const size_t half = prompt_.size() / 2;
  ASSERT_TRUE(s->prefill(std::span<const int32_t>(prompt_.data(), half)).ok());
  auto snap = s->snapshot();
  auto first = s->prefill(std::span<const int32_t>(prompt_.data() + half, prompt_.size() - half));
  ASSERT_TRUE(first.ok());
  std::vector<float> want(first->begin(), first->end());
  // Diverge, then restore and replay.
  ASSERT_TRUE(s->decode(3).ok());
  s->restore(*snap);
  EXPECT_EQ(s->position(), int64_t(half));
  auto again = s->prefill(std::span<const int32_t>(prompt_.data() + half, prompt_.size() - half));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(max_diff(again.value(), want), 0.f);
}

TEST_F(SessionTest, BadTokenIsRejectedWithoutSideEffects) {
  auto e = load(256);
  auto s = e->new_session();
  ASSERT_TRUE(s->prefill(std::span<const int32_t>(prompt_.data(), 4)).ok());
  const std::vector<int32_t> bad = {1, int32_t(e->info().vocab_size)};
  auto r = s->prefill(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("outside the vocabulary"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(s->position(), 4);
  EXPECT_FALSE(s->decode(-1).ok());
  EXPECT_FALSE(s->prefill({}).ok());
}

TEST_F(SessionTest, ContextLimitIsEnforcedWithoutSideEffects) {
  auto e = Engine::load(model_, EngineOptions{2, 256, 10});
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e.value()->info().max_context, 10);
  auto s = e.value()->new_session();
  ASSERT_TRUE(s->prefill(std::span<const int32_t>(prompt_.data(), 8)).ok());
  auto r = s->prefill(std::span<const int32_t>(prompt_.data(), 3));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("context length exceeded: 8 cached + 3 new tokens > 10"),
            std::string::npos)
      << r.status().message();
  EXPECT_EQ(s->position(), 8);
  EXPECT_TRUE(s->prefill(std::span<const int32_t>(prompt_.data(), 2)).ok());
  // The fixture's config says max_position_embeddings 4096: that is the default limit.
  EXPECT_EQ(load(256)->info().max_context, 4096);
}

TEST_F(SessionTest, FastForwardFillsCachesForBenchmarks) {
  auto e = load(16);
  auto s = e->new_session();
  ASSERT_TRUE(s->prefill(std::span<const int32_t>(prompt_.data(), 4)).ok());
  ASSERT_TRUE(s->fast_forward(100, 1).ok());  // far past the window: the sliding rings wrap
  EXPECT_EQ(s->position(), 104);
  auto l = s->decode(prompt_[0]);
  ASSERT_TRUE(l.ok());
  for (float v : l.value()) ASSERT_TRUE(std::isfinite(v));
  EXPECT_EQ(s->position(), 105);
  EXPECT_FALSE(s->fast_forward(5000, 1).ok());  // past the fixture's 4096 positions
  EXPECT_EQ(s->position(), 105);
}

TEST_F(SessionTest, ReserveChangesNoResultAndRespectsTheLimit) {
  auto e = load(16);
  auto plain = e->new_session(), reserved = e->new_session();
  ASSERT_TRUE(reserved->reserve(300).ok());
  EXPECT_EQ(reserved->position(), 0);
  const std::span<const int32_t> p(prompt_.data(), prompt_.size());
  auto copy = [](std::span<const float> v) { return std::vector<float>(v.begin(), v.end()); };
  auto a = plain->prefill(p);
  ASSERT_TRUE(a.ok());
  const std::vector<float> want = copy(a.value());
  auto b = reserved->prefill(p);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(copy(b.value()), want);
  for (int i = 0; i < 3; ++i) {
    auto x = plain->decode(prompt_[size_t(i)]);
    ASSERT_TRUE(x.ok());
    const std::vector<float> xv = copy(x.value());
    auto y = reserved->decode(prompt_[size_t(i)]);
    ASSERT_TRUE(y.ok());
    EXPECT_EQ(copy(y.value()), xv) << i;
  }
  EXPECT_FALSE(reserved->reserve(5000).ok());  // past the fixture's 4096 positions
  EXPECT_TRUE(reserved->reserve(10).ok());     // never shrinks, never fails below the size
}

TEST_F(SessionTest, BatchedStepMatchesSeparateSessions) {
  auto e = load(8);  // small chunk: long inputs span several passes mixed with other sessions
  const int64_t V = e->info().unpadded_vocab;
  // Three sequences of different lengths prefilled together, then decoded together.
  std::vector<std::vector<int32_t>> prompts = {
      {prompt_.begin(), prompt_.begin() + 5}, {prompt_.begin() + 3, prompt_.end()}, {prompt_[7]}};
  std::vector<std::unique_ptr<Session>> batched, alone;
  std::vector<Session*> ptrs;
  for (size_t i = 0; i < prompts.size(); ++i) {
    batched.push_back(e->new_session());
    alone.push_back(e->new_session());
    ptrs.push_back(batched.back().get());
  }
  for (int step = 0; step < 4; ++step) {
    std::vector<std::span<const int32_t>> in;
    for (auto& p : prompts) in.emplace_back(p);
    ASSERT_TRUE(e->step(ptrs, in).ok());
    for (size_t i = 0; i < prompts.size(); ++i) {
      auto want = alone[i]->prefill(prompts[i]);
      ASSERT_TRUE(want.ok());
      EXPECT_EQ(batched[i]->position(), alone[i]->position());
      EXPECT_LE(max_diff(batched[i]->last_logits(), want.value()), 1e-4f)
          << "seq " << i << " step " << step;
      ASSERT_EQ(batched[i]->last_logits().size(), size_t(V));
      prompts[i] = {int32_t((argmax_of(want.value()) + int32_t(i)) % V)};  // next input: one token
    }
  }
  // Invalid input in any session: error, nobody advances.
  const int64_t before = batched[0]->position();
  std::vector<int32_t> bad = {int32_t(e->info().vocab_size)};
  std::vector<std::span<const int32_t>> in = {prompts[0], bad, prompts[2]};
  EXPECT_FALSE(e->step(ptrs, in).ok());
  EXPECT_EQ(batched[0]->position(), before);
}

}  // namespace
}  // namespace inkling
