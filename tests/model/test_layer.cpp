// The layer-level forward: forward_layer() runs one layer from its own weights, geometry and
// caches (what a multi-token-prediction depth needs, with no special case), and forward_batch()
// exposes the final hidden state before and after the final norm.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "model/layer.h"
#include "model/model.h"
#include "ops/matmul.h"
#include "ops/norm.h"

namespace inkling {
namespace {

const std::string kLayerModel = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/full/og";
const std::vector<int32_t> kPrompt = {386, 10, 415, 335, 493, 459, 313, 395, 180, 238, 366};

// Keeps the named activations it is shown.
struct Keep : ActivationObserver {
  std::map<std::string, std::vector<float>> seen;
  void on_tensor(std::string_view name, std::span<const int64_t> shape,
                 const float* data) override {
    size_t n = 1;
    for (int64_t d : shape) n *= size_t(d);
    seen[std::string(name)].assign(data, data + n);
  }
  void on_ids(std::string_view, std::span<const int64_t>, const int32_t*) override {}
};

class Layer : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = Model::load(kLayerModel);
    ASSERT_TRUE(m.ok()) << m.status().message();
    model_ = std::move(m.value());
  }
  std::unique_ptr<Model> model_;
};

TEST_F(Layer, HiddenStatesBeforeAndAfterTheFinalNorm) {
  const ModelConfig& c = model_->config;
  const int64_t T = int64_t(kPrompt.size()), H = c.hidden, V = c.unpadded_vocab;
  Scratch s = Scratch::make(c, 64);
  SequenceState st = SequenceState::fresh(c, 64);
  std::vector<float> logits(size_t(T * V)), hidden(size_t(T * H)), normed(size_t(T * H));
  Segment seg{&st, kPrompt.data(), T, logits.data(), true, hidden.data(), normed.data()};
  Keep keep;
  forward_batch(*model_, &seg, 1, s, nullptr, &keep);
  // hidden = the last layer's output; normed = its final norm; logits = head(normed / mup).
  EXPECT_EQ(hidden, keep.seen["layers." + std::to_string(c.n_layers - 1)]);
  EXPECT_EQ(normed, keep.seen["norm"]);
  std::vector<float> renormed(hidden.size()), head_in(normed), want(logits.size());
  rms_norm_rows(hidden.data(), model_->weights.final_norm.data(), T, H, c.rms_eps, renormed.data());
  EXPECT_EQ(renormed, normed);
  for (float& v : head_in) v /= float(c.mup_divisor);
  matmul(head_in.data(), T, H, model_->weights.lm_head.slice_rows(0, V), want.data(), V, nullptr);
  EXPECT_EQ(want, logits);

  // Only the last row when all_positions is off; no logits asked for still gives the hidden.
  SequenceState st2 = SequenceState::fresh(c, 64);
  std::vector<float> last_hidden(size_t(H), -1.f), last_normed(size_t(H), -1.f);
  Segment only{&st2, kPrompt.data(), T, nullptr, false, last_hidden.data(), last_normed.data()};
  forward_batch(*model_, &only, 1, s, nullptr);
  EXPECT_TRUE(std::equal(last_hidden.begin(), last_hidden.end(), hidden.end() - H));
  EXPECT_TRUE(std::equal(last_normed.begin(), last_normed.end(), normed.end() - H));
}

// Layer 1's weights run as if they were an extra depth, with caches of their own, over the input
// the trunk gave that layer: the output is the trunk's layer-1 output, in one call and in two
// chunks (the second reading the first's KV and conv states).
TEST_F(Layer, OneLayerRunsFromItsOwnWeightsAndCaches) {
  const ModelConfig& c = model_->config;
  const int64_t T = int64_t(kPrompt.size()), H = c.hidden;
  Scratch s = Scratch::make(c, 64);
  SequenceState st = SequenceState::fresh(c, 64);
  Segment seg{&st, kPrompt.data(), T, nullptr, false};
  Keep keep;
  forward_batch(*model_, &seg, 1, s, nullptr, &keep);
  const std::vector<float>& in = keep.seen["layers.0"];
  const std::vector<float>& want = keep.seen["layers.1"];
  ASSERT_EQ(in.size(), size_t(T * H));
  const LayerSpec& spec = c.layers[1];
  const LayerWeights& w = model_->weights.layers[1];

  // A depth's own state: one LayerCache, not part of any SequenceState.
  LayerCache own = SequenceState::fresh(c, 64).layers[1];
  std::vector<float> x = in;
  const LayerSegment whole{&own, 0, T};
  forward_layer(c, spec, w, x.data(), {&whole, 1}, s, nullptr);
  EXPECT_EQ(x, want);

  LayerCache split = SequenceState::fresh(c, 64).layers[1];
  std::vector<float> y = in;
  const int64_t a = 4;
  const LayerSegment first{&split, 0, a}, second{&split, a, T - a};
  forward_layer(c, spec, w, y.data(), {&first, 1}, s, nullptr);
  forward_layer(c, spec, w, y.data() + a * H, {&second, 1}, s, nullptr);
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], want[i], 1e-5f * (1.f + std::fabs(want[i]))) << i;
}

}  // namespace
}  // namespace inkling
