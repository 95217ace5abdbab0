// Inkling 2 beyond the shared parity suite (test_parity.cpp runs its fixtures too): both layouts,
// chunked prefill that cuts across windows and attention-residual state, batched steps against
// sessions alone, snapshots, the config's cache-slot plan for the real Mini and Small, and one
// clear error per kind of bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../common/fixtures.h"
#include "../common/tmp_files.h"
#include "base/safetensors.h"
#include "inkling/engine.h"
#include "model/config.h"

namespace inkling {
namespace {

using testing::fixture_dir;
using testing::json_ids;
using testing::read_json;

struct I2Case {
  std::string fixture, layout;
};
std::string i2_case_name(const ::testing::TestParamInfo<I2Case>& i) {
  return i.param.fixture + "_" + i.param.layout;
}

class Inkling2 : public ::testing::TestWithParam<I2Case> {
 protected:
  void SetUp() override {
    dir_ = fixture_dir(GetParam().fixture);
    model_ = dir_ + "/" + GetParam().layout;
    if (!std::filesystem::exists(model_ + "/config.json")) GTEST_SKIP() << "no " << model_;
    prompt_ = json_ids(read_json(dir_ + "/ref/prompt.json"), "prompt_ids");
    ASSERT_FALSE(prompt_.empty());
  }
  std::shared_ptr<Engine> load(int64_t chunk, Numerics n = Numerics::kExact) {
    auto e = Engine::load(model_, testing::parity_options(2, chunk, n));
    EXPECT_TRUE(e.ok()) << e.status().message();
    return e.ok() ? e.value() : nullptr;
  }
  std::string dir_, model_;
  std::vector<int32_t> prompt_;
};

// Prefill chunks of 1, 3 and 7 tokens: rows cross the window (8), the relative extent (12) and the
// log-scaling floor (6) inside and between chunks; every position matches the reference.
TEST_P(Inkling2, ChunkedPrefillMatchesReference) {
  for (int64_t chunk : {1, 3, 7}) {
    auto e = load(chunk);
    ASSERT_TRUE(e);
    const auto r = testing::compare_logits(*e, prompt_, dir_ + "/ref/logits.npy");
    ASSERT_EQ(r.error, "");
    EXPECT_LE(r.max_diff, 1e-4f * r.max_ref) << "chunk " << chunk;
  }
}

TEST_P(Inkling2, GreedyMatchesReference) {
  auto e = load(256);
  ASSERT_TRUE(e);
  const auto want = json_ids(read_json(dir_ + "/ref/greedy.json"), "ids");
  ASSERT_EQ(want.size(), 64u);
  EXPECT_EQ(testing::greedy_ids(*e, prompt_, want.size()), want);
}

// Continuous batching: three sequences of different lengths stepped together get the bits each
// gets alone (every cache slot of every visit is the session's own).
TEST_P(Inkling2, BatchedStepIsBitwiseEachSessionAlone) {
  auto e = load(16);
  ASSERT_TRUE(e);
  std::vector<std::vector<int32_t>> in = {{prompt_.begin(), prompt_.begin() + 5},
                                          {prompt_.begin() + 3, prompt_.begin() + 14},
                                          {prompt_[7]}};
  std::vector<std::unique_ptr<Session>> batched, alone;
  std::vector<Session*> ptrs;
  for (size_t i = 0; i < in.size(); ++i) {
    batched.push_back(e->new_session());
    alone.push_back(e->new_session());
    ptrs.push_back(batched.back().get());
  }
  for (int step = 0; step < 6; ++step) {
    std::vector<std::span<const int32_t>> spans(in.begin(), in.end());
    ASSERT_TRUE(e->step(ptrs, spans).ok());
    for (size_t i = 0; i < in.size(); ++i) {
      auto want = alone[i]->prefill(in[i]);
      ASSERT_TRUE(want.ok());
      const auto got = batched[i]->last_logits();
      ASSERT_EQ(got.size(), want->size());
      if (in[i].size() == 1 && step > 0) {  // decode rows: bitwise
        EXPECT_TRUE(std::equal(got.begin(), got.end(), want->begin())) << i << " " << step;
      }
      float d = 0;
      for (size_t k = 0; k < got.size(); ++k) d = std::max(d, std::fabs(got[k] - (*want)[k]));
      EXPECT_LE(d, 1e-4f) << "seq " << i << " step " << step;
      in[i] = {int32_t(std::max_element(got.begin(), got.end()) - got.begin())};
    }
  }
}

TEST_P(Inkling2, SnapshotRestoreReplaysExactly) {
  auto e = load(256);
  ASSERT_TRUE(e);
  auto s = e->new_session();
  ASSERT_TRUE(s->prefill({prompt_.begin(), prompt_.begin() + 20}).ok());
  const auto snap = s->snapshot();
  auto a = s->prefill({prompt_.begin() + 20, prompt_.end()});
  ASSERT_TRUE(a.ok());
  const std::vector<float> first(a->begin(), a->end());
  s->restore(*snap);
  auto b = s->prefill({prompt_.begin() + 20, prompt_.end()});
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(std::equal(first.begin(), first.end(), b->begin()));
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, Inkling2,
    ::testing::Values(I2Case{"inkling2", "hf"}, I2Case{"inkling2", "tf"},
                      I2Case{"inkling2_loop", "hf"}, I2Case{"inkling2_loop", "tf"},
                      I2Case{"inkling2_loop_q", "hf"}, I2Case{"inkling2_mxfp8", "hf"},
                      I2Case{"inkling2_mxfp8", "tf"}, I2Case{"inkling2_loop_mlx", "mlx"}),
    i2_case_name);

// The real configs (the reference's defaults): Mini keeps 48 cache slots per token, Small 48.
TEST(Inkling2Config, RealMiniAndSmallCacheSlots) {
  auto mini = parse_config(R"({"model_type": "inkling2_loop",
    "text_config": {"model_type": "inkling2_loop_text"}})",
                           "mini");
  ASSERT_TRUE(mini.ok()) << mini.status().message();
  EXPECT_EQ(mini->family, Family::kInkling2);
  EXPECT_EQ(mini->hidden, 2304);
  EXPECT_EQ(mini->n_layers, 24);
  EXPECT_EQ(mini->schedule().size(), 48u);
  EXPECT_EQ(mini->cache_slots().size(), 48u);
  EXPECT_EQ(mini->moe_visits(), 48);  // every layer MoE: the expert exchanges per decode token
  EXPECT_EQ(mini->eos_ids, std::vector<int32_t>{200006});
  // Visit order: prelude 0-5, the core three times (slots 6-17, 24-35, 36-47), coda 18-23.
  const auto plan = mini->schedule();
  EXPECT_EQ(plan[6].layer, 6);
  EXPECT_EQ(plan[18].layer, 6);
  EXPECT_EQ(plan[18].slot, 24);
  EXPECT_EQ(plan[30].slot, 36);
  EXPECT_EQ(plan[42].layer, 18);
  EXPECT_EQ(plan[42].slot, 18);
  int full = 0;
  for (const auto& v : plan) full += !mini->layers[size_t(v.layer)].sliding;
  EXPECT_EQ(full, 8);  // layers 5 and 23 once, 11 and 17 three times
  auto small = parse_config(R"({"model_type": "inkling2"})", "small");
  ASSERT_TRUE(small.ok()) << small.status().message();
  EXPECT_EQ(small->hidden, 4608);
  EXPECT_EQ(small->cache_slots().size(), 48u);
  EXPECT_FALSE(small->v2.looped());
  // The original spelling of the loop fields.
  auto og = parse_config(R"({"model_type": "inkling2_loop", "text_config": {"loop_config":
    {"core_start": 12, "core_end": 18, "num_passes": 2, "gate_rank": 32}}})",
                         "og");
  ASSERT_TRUE(og.ok()) << og.status().message();
  EXPECT_EQ(og->v2.loop_start, 12);
  EXPECT_EQ(og->v2.loop_rank, 32);
  EXPECT_EQ(og->schedule().size(), 30u);
}

TEST(Inkling2Config, BadFieldsNameTheField) {
  struct Bad {
    const char* json;
    const char* field;
  };
  for (const Bad& b : {
           Bad{R"({"model_type": "inkling2_loop", "loop_layer_index_start": 4})",
               "loop_layer_index_start"},
           Bad{R"({"model_type": "inkling2_loop", "loop_layer_index_end": 30})",
               "loop_layer_index_end"},
           Bad{R"({"model_type": "inkling2_loop", "loop_config": [1, 2]})", "loop_config"},
           Bad{R"({"model_type": "inkling2_loop", "loop_config": {"num_passes": "3"}})",
               "loop_config.num_passes"},
           Bad{R"({"model_type": "inkling2", "final_logit_softcapping": 0})",
               "final_logit_softcapping"},
           Bad{R"({"model_type": "inkling2", "scoring_func": "softmax"})", "scoring_func"},
           Bad{R"({"model_type": "inkling2", "n_shared_experts": 2})", "n_shared_experts"},
           Bad{R"({"model_type": "inkling2", "n_layers_per_attn_res_block": 0})",
               "n_layers_per_attn_res_block"},
       }) {
    auto c = parse_config(b.json, "bad");
    ASSERT_FALSE(c.ok()) << b.json;
    EXPECT_NE(c.status().message().find(b.field), std::string::npos) << c.status().message();
  }
}

struct Edit {
  std::string drop, reshape, want;
};

// Writes `src` with one tensor dropped or one column fewer and expects one error naming `want`.
void expect_load_error(const std::string& src, const std::vector<Edit>& edits) {
  if (!std::filesystem::exists(src + "/model.safetensors")) GTEST_SKIP();
  const auto st = TensorStore::open_dir(src);
  ASSERT_TRUE(st.ok());
  for (const Edit& ed : edits) {
    testing::TempDir dir;
    testing::write_file(dir.file("config.json"), testing::read_file(src + "/config.json"));
    testing::SafetensorsBuilder out;
    for (const auto& [name, t] : st->all()) {
      if (name == ed.drop) continue;
      std::vector<int64_t> shape = t->shape;
      std::string bytes(reinterpret_cast<const char*>(t->data), t->nbytes);
      if (name == ed.reshape) {  // one column fewer
        shape.back() -= 1;
        bytes.resize(size_t(t->numel() / t->shape.back() * shape.back()) * dtype_size(t->dtype));
      }
      out.add(name, dtype_name(t->dtype), shape, bytes);
    }
    out.write(dir.file("model.safetensors"));
    auto e = Engine::load(dir.path(), EngineOptions{1, 16});
    ASSERT_FALSE(e.ok()) << ed.drop << ed.reshape;
    EXPECT_NE(e.status().message().find(ed.want), std::string::npos) << e.status().message();
  }
}

// Checkpoint damage: one error naming the tensor, never a crash.
TEST(Inkling2Load, MissingOrMisshapenTensorsNameTheTensor) {
  expect_load_error(
      fixture_dir("inkling2_loop") + "/hf",
      {Edit{"model.llm.middle_cycle_cross_pass_kv_queries", "", "og_kv_queries"},
       Edit{"model.llm.layers.4.attn.k_sconv.weight_proj", "", "weight_proj"},
       Edit{"model.llm.layers.3.controllers.mlp.gain_weight", "", "message_gate_proj"},
       Edit{"", "model.llm.layers.2.attn.wq_du.weight", "model.llm.layers.2.attn.wq_du.weight"},
       Edit{"", "model.llm.layers.1.mlp.experts.w13_weight", "w13_weight"}});
}

// The release's quantized experts: a missing or misshapen companion, a scale without its values.
TEST(Inkling2Load, QuantizedExpertDamageNamesTheTensor) {
  const std::string L = "model.llm.layers.";
  expect_load_error(
      fixture_dir("inkling2_loop_q") + "/hf",
      {Edit{L + "0.mlp.experts.w2_weight_amax", "", "w2_weight_amax"},
       Edit{L + "2.mlp.experts.w13_weight_outer_scale_denominator", "",
            "w13_weight_outer_scale_denominator"},
       Edit{L + "1.mlp.experts.w13_weight_scale", "", "w13_weight"},
       Edit{L + "6.mlp.experts.w2_weight_scale", "", "w2_weight: dtype F8_E4M3 holds quantized"},
       Edit{L + "7.mlp.experts.w13_weight", "", "mlp.experts.gate_proj"},
       Edit{"", L + "8.mlp.experts.w13_weight_scale", "w13_weight_scale"},
       Edit{"", L + "3.mlp.experts.w2_weight", "w2_weight"},
       Edit{"", L + "4.mlp.experts.w2_weight_amax", "w2_weight_amax"}});
}

}  // namespace
}  // namespace inkling
