// bind_weights(): a complete tiny checkpoint (both layouts) binds with every view pointing at
// the right bytes; a missing tensor, a misshaped one (reported with the checkpoint's own name
// and shapes), an unsupported dtype or a config that disagrees with the weights each fail with
// one clear message.
#include "model/weights.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "../common/tmp_files.h"
#include "model/config.h"
#include "model/layouts.h"

namespace inkling {
namespace {

using ::testing::HasSubstr;
using testing::TinyDims;

// An in-memory checkpoint: owned byte buffers + the TensorMap of contiguous views over them.
class Checkpoint {
 public:
  explicit Checkpoint(bool og) {
    uint32_t seed = 1;
    for (const auto& s : testing::tiny_tensor_specs(og))
      add(s.name, s.shape, testing::tiny_values(s, ++seed));
  }
  void add(const std::string& name, const std::vector<int64_t>& shape, const std::vector<float>& v,
           DType dt = DType::F32) {
    std::string& b = bufs_.emplace_back(v.size() * dtype_size(dt), '\0');
    for (size_t i = 0; i < v.size(); ++i) {
      if (dt == DType::F32) {
        std::memcpy(b.data() + 4 * i, &v[i], 4);
      } else if (dt == DType::BF16) {
        const uint16_t h = f32_to_bf16(v[i]);
        std::memcpy(b.data() + 2 * i, &h, 2);
      } else if (dt == DType::I32) {
        const int32_t x = int32_t(v[i] * 100);
        std::memcpy(b.data() + 4 * i, &x, 4);
      } else {
        b[i * dtype_size(dt)] = char(int(v[i] * 100));
      }
    }
    TensorInfo t;
    t.name = name;
    t.dtype = dt;
    t.shape = shape;
    t.data = reinterpret_cast<const uint8_t*>(b.data());
    t.nbytes = b.size();
    map_[name] = ref_from_info(t);
  }
  void remove(const std::string& name) { ASSERT_EQ(map_.erase(name), 1u) << name; }
  void reshape(const std::string& name, const std::vector<int64_t>& shape) {
    ASSERT_TRUE(map_.count(name)) << name;
    add(name, shape, std::vector<float>(size_t(testing::numel(shape)), 0.5f));
  }
  void retype(const std::string& name, DType dt) {
    ASSERT_TRUE(map_.count(name)) << name;
    const auto shape = map_[name].shape;
    add(name, shape, std::vector<float>(size_t(testing::numel(shape)), 0.25f), dt);
  }
  const TensorMap& raw() const { return map_; }
  const TensorRef& at(const std::string& name) const { return map_.at(name); }

 private:
  std::deque<std::string> bufs_;
  TensorMap map_;
};

ModelConfig tiny_config(bool og) {
  auto c = parse_config(testing::tiny_config_json(og).dump(), "tiny/config.json");
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? c.value() : ModelConfig{};
}

// sanitize + bind; returns the bind (or sanitize) result.
Result<Weights> load(const Checkpoint& ck, const ModelConfig& c) {
  SanitizeReport rep;
  auto canon = sanitize(ck.raw(), &rep);
  if (!canon.ok()) return canon.status();
  return bind_weights(c, canon.value());
}

std::string load_error(const Checkpoint& ck, const ModelConfig& c) {
  auto w = load(ck, c);
  EXPECT_FALSE(w.ok()) << "bound successfully";
  if (w.ok()) return "";
  EXPECT_EQ(w.status().message().find('\n'), std::string::npos);
  return w.status().message();
}

float f32_at(const uint8_t* p, size_t i) {
  return load_as_f32(DType::F32, p, i);
}

TEST(Bind, CompleteTransformersCheckpoint) {
  const TinyDims d;
  Checkpoint ck(false);
  auto r = load(ck, tiny_config(false));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Weights& w = r.value();
  EXPECT_TRUE(w.unused.empty()) << w.unused.front();
  ASSERT_EQ(w.layers.size(), 2u);
  EXPECT_EQ(w.embed.rows, d.V);
  EXPECT_EQ(w.embed.cols, d.H);
  EXPECT_EQ(w.embed.data, ck.at("model.embed_tokens.weight").data);
  EXPECT_EQ(w.lm_head.data, ck.at("lm_head.weight").data);
  EXPECT_EQ(w.embed_norm.size(), size_t(d.H));
  EXPECT_EQ(w.embed_norm[3], f32_at(ck.at("model.embed_norm.weight").data, 3));

  const LayerWeights& l0 = w.layers[0];  // sliding, dense
  EXPECT_EQ(l0.attn.q.rows, d.swa_nh * d.swa_hd);
  EXPECT_EQ(l0.attn.k.rows, d.swa_nkv * d.swa_hd);
  EXPECT_EQ(l0.attn.r.rows, d.swa_nh * d.d_rel);
  EXPECT_EQ(l0.attn.o.cols, d.swa_nh * d.swa_hd);
  EXPECT_EQ(l0.attn.rel_proj.size(), size_t(d.d_rel * d.W));
  EXPECT_EQ(l0.dense.gate.rows, d.Id);
  EXPECT_EQ(l0.dense.down.cols, d.Id);
  EXPECT_EQ(l0.dense_scale, f32_at(ck.at("model.layers.0.mlp.global_scale").data, 0));
  // Convs [C, 1, K] flatten to [C, K] in the same order.
  const TensorRef& conv = ck.at("model.layers.0.attn_sconv.conv1d.weight");
  ASSERT_EQ(l0.attn_conv.size(), size_t(d.H * d.K));
  for (size_t i = 0; i < l0.attn_conv.size(); ++i) EXPECT_EQ(l0.attn_conv[i], f32_at(conv.data, i));

  const LayerWeights& l1 = w.layers[1];  // global, MoE
  EXPECT_EQ(l1.attn.q.rows, d.nh * d.hd);
  EXPECT_EQ(l1.attn.k.rows, d.nkv * d.hd);
  EXPECT_EQ(l1.attn.rel_proj.size(), size_t(d.d_rel * d.R));
  EXPECT_EQ(l1.moe.router.rows, d.E + d.S);
  EXPECT_EQ(l1.moe.router_bias.size(), size_t(d.E));
  EXPECT_EQ(l1.moe.router_scale, f32_at(ck.at("model.layers.1.mlp.gate.global_scale").data, 0));
  ASSERT_EQ(l1.moe.routed.size(), size_t(d.E));
  ASSERT_EQ(l1.moe.shared.size(), size_t(d.S));
  // gate_up_proj [E, 2I, H]: expert e's gate is rows [0, I), up rows [I, 2I).
  const TensorRef& gu = ck.at("model.layers.1.mlp.experts.gate_up_proj");
  const size_t per_expert = size_t(2 * d.I * d.H) * 4;
  for (int64_t e = 0; e < d.E; ++e) {
    EXPECT_EQ(l1.moe.routed[size_t(e)].gate.data, gu.data + size_t(e) * per_expert);
    EXPECT_EQ(l1.moe.routed[size_t(e)].up.data,
              gu.data + size_t(e) * per_expert + size_t(d.I * d.H) * 4);
    EXPECT_EQ(l1.moe.routed[size_t(e)].gate.row_stride, d.H);
    EXPECT_EQ(l1.moe.routed[size_t(e)].down.rows, d.H);
    EXPECT_EQ(l1.moe.routed[size_t(e)].down.cols, d.I);
  }
}

TEST(Bind, CompleteOriginalCheckpoint) {
  const TinyDims d;
  Checkpoint ck(true);
  auto r = load(ck, tiny_config(true));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Weights& w = r.value();
  EXPECT_TRUE(w.unused.empty());
  EXPECT_EQ(w.embed.data, ck.at("model.llm.embed.weight").data);
  EXPECT_EQ(w.lm_head.data, ck.at("model.llm.unembed.weight").data);
  // Dense w13 [2Id, H], rows g0,u0,g1,u1: gate row j = row 2j, up row j = row 2j+1.
  const TensorRef& w13 = ck.at("model.llm.layers.0.mlp.w13_dn.weight");
  const SwiGluWeights& dense = w.layers[0].dense;
  EXPECT_EQ(dense.gate.rows, d.Id);
  EXPECT_EQ(dense.gate.row_stride, 2 * d.H);
  for (int64_t j = 0; j < d.Id; ++j) {
    EXPECT_EQ(dense.gate.row(j), w13.data + size_t(2 * j * d.H) * 4);
    EXPECT_EQ(dense.up.row(j), w13.data + size_t((2 * j + 1) * d.H) * 4);
  }
  // Experts w13 [E, 2I, H] interleaved per expert.
  const TensorRef& ew = ck.at("model.llm.layers.1.mlp.experts.w13_weight");
  const auto& routed = w.layers[1].moe.routed;
  ASSERT_EQ(routed.size(), size_t(d.E));
  for (int64_t e = 0; e < d.E; ++e)
    for (int64_t j = 0; j < d.I; ++j) {
      EXPECT_EQ(routed[size_t(e)].gate.row(j), ew.data + size_t((e * 2 * d.I + 2 * j) * d.H) * 4);
      EXPECT_EQ(routed[size_t(e)].up.row(j), ew.data + size_t((e * 2 * d.I + 2 * j + 1) * d.H) * 4);
    }
  const TensorRef& sw = ck.at("model.llm.layers.1.mlp.shared_experts.shared_w13_weight");
  ASSERT_EQ(w.layers[1].moe.shared.size(), size_t(d.S));
  EXPECT_EQ(w.layers[1].moe.shared[0].up.row(1), sw.data + size_t(3 * d.H) * 4);
  // F32 router bias read in order.
  const TensorRef& bias = ck.at("model.llm.layers.1.mlp.gate.bias");
  for (int64_t e = 0; e < d.E; ++e)
    EXPECT_EQ(w.layers[1].moe.router_bias[size_t(e)], f32_at(bias.data, size_t(e)));
}

TEST(Bind, Bf16WeightsAreAccepted) {
  Checkpoint ck(false);
  ck.retype("model.layers.0.self_attn.q_proj.weight", DType::BF16);
  ck.retype("model.layers.0.input_layernorm.weight", DType::BF16);
  auto r = load(ck, tiny_config(false));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->layers[0].attn.q.dtype, DType::BF16);
  EXPECT_EQ(r->layers[0].attn_norm[0], 0.25f);
}

TEST(Bind, ExtraTensorIsReportedUnused) {
  Checkpoint ck(true);
  ck.add("model.llm.layers.0.attn.extra_bias", {2}, {1, 2});
  auto r = load(ck, tiny_config(true));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->unused, (std::vector<std::string>{"model.llm.layers.0.attn.extra_bias"}));
}

TEST(BindBad, MissingTensor) {
  for (const std::string name :
       {"model.layers.1.self_attn.r_proj.weight", "lm_head.weight", "model.embed_norm.weight",
        "model.layers.0.mlp.global_scale", "model.layers.1.mlp.gate.e_score_correction_bias",
        "model.layers.1.mlp.shared_experts.down_proj",
        "model.layers.0.self_attn.k_sconv.conv1d.weight"}) {
    Checkpoint ck(false);
    ck.remove(name);
    EXPECT_THAT(load_error(ck, tiny_config(false)), HasSubstr("missing tensor '" + name + "'"));
  }
  // Removing a fused tensor loses both halves; the first one looked up is named.
  Checkpoint og(true);
  og.remove("model.llm.layers.1.mlp.experts.w13_weight");
  EXPECT_THAT(load_error(og, tiny_config(true)),
              HasSubstr("missing tensor 'model.layers.1.mlp.experts.gate_proj'"));
}

TEST(BindBad, WrongShapeNamesCheckpointTensorAndShapes) {
  const TinyDims d;
  const int64_t q_rows = d.nh * d.hd;  // layer 1 is global
  struct Case {
    bool og;
    std::string name;
    std::vector<int64_t> shape;
    std::string want;
  };
  const std::vector<Case> cases = {
      {true,
       "model.llm.layers.1.attn.wq_du.weight",
       {d.H, q_rows},
       "model.llm.layers.1.attn.wq_du.weight: expected [16, 8], got [8, 16]"},
      {false,
       "model.layers.1.self_attn.q_proj.weight",
       {d.H, q_rows},
       "model.layers.1.self_attn.q_proj.weight: expected [16, 8], got [8, 16]"},
      {true,
       "model.llm.layers.0.mlp.w13_dn.weight",
       {2 * d.Id - 2, d.H},
       "model.llm.layers.0.mlp.w13_dn.weight: expected [24, 8], got [22, 8]"},
      {true,
       "model.llm.layers.1.mlp.experts.w13_weight",
       {d.E, 2 * d.I + 2, d.H},
       "model.llm.layers.1.mlp.experts.w13_weight: expected [4, 8, 8], got [4, 10, 8]"},
      {false,
       "model.layers.1.mlp.experts.gate_up_proj",
       {d.E + 1, 2 * d.I, d.H},
       "model.layers.1.mlp.experts.gate_up_proj: expected [4, 8, 8], got [5, 8, 8]"},
      {true,
       "model.llm.layers.1.attn.k_sconv.weight",
       {d.nkv * d.hd, 1, d.K + 1},
       "model.llm.layers.1.attn.k_sconv.weight: expected [8, 1, 3], got [8, 1, 4]"},
      {false,
       "model.layers.0.mlp_sconv.conv1d.weight",
       {d.H, d.K + 1, 1},
       "model.layers.0.mlp_sconv.conv1d.weight: expected [8, 3, 1], got [8, 4, 1]"},
      {true,
       "model.llm.layers.1.attn.rel_logits_proj.proj",
       {d.d_rel, d.W},
       "model.llm.layers.1.attn.rel_logits_proj.proj: expected [2, 6], got [2, 4]"},
      {true,
       "model.llm.layers.1.mlp.gate.bias",
       {d.E + d.S},
       "model.llm.layers.1.mlp.gate.bias: expected [4], got [5]"},
      {false,
       "model.embed_tokens.weight",
       {d.Vu, d.H},
       "model.embed_tokens.weight: expected [32, 8], got [30, 8]"},
      {true,
       "model.llm.layers.0.mlp.global_scale",
       {},
       "model.llm.layers.0.mlp.global_scale: expected [1], got []"},
  };
  for (const auto& c : cases) {
    Checkpoint ck(c.og);
    ck.reshape(c.name, c.shape);
    EXPECT_THAT(load_error(ck, tiny_config(c.og)), HasSubstr(c.want)) << c.name;
  }
}

TEST(BindBad, FusedOddRowCountFailsInSanitize) {
  const TinyDims d;
  Checkpoint ck(true);
  ck.reshape("model.llm.layers.0.mlp.w13_dn.weight", {2 * d.Id - 1, d.H});
  EXPECT_THAT(load_error(ck, tiny_config(true)), HasSubstr("model.llm.layers.0.mlp.w13_dn.weight"));
}

TEST(BindBad, UnsupportedDtype) {
  Checkpoint ck(true);
  ck.retype("model.llm.layers.0.attn.wq_du.weight", DType::I32);
  const std::string m = load_error(ck, tiny_config(true));
  EXPECT_THAT(m, HasSubstr("model.llm.layers.0.attn.wq_du.weight"));
  EXPECT_THAT(m, HasSubstr("I32"));
  Checkpoint v(false);
  v.retype("model.layers.1.self_attn.k_norm.weight", DType::U8);
  const std::string m2 = load_error(v, tiny_config(false));
  EXPECT_THAT(m2, HasSubstr("model.layers.1.self_attn.k_norm.weight"));
  EXPECT_THAT(m2, HasSubstr("U8"));
  Checkpoint e(false);
  e.retype("model.layers.1.mlp.experts.down_proj", DType::I8);
  EXPECT_THAT(load_error(e, tiny_config(false)),
              HasSubstr("model.layers.1.mlp.experts.down_proj: dtype I8"));
}

TEST(BindBad, ConfigDisagreesWithWeights) {
  Checkpoint ck(false);
  ModelConfig c = tiny_config(false);
  c.moe_width = 5;
  EXPECT_THAT(
      load_error(ck, c),
      HasSubstr("model.layers.1.mlp.experts.gate_up_proj: expected [4, 10, 8], got [4, 8, 8]"));
  ModelConfig v = tiny_config(false);
  v.vocab_size = 64;
  EXPECT_THAT(load_error(ck, v),
              HasSubstr("model.embed_tokens.weight: expected [64, 8], got [32, 8]"));
  ModelConfig l = tiny_config(false);
  l.n_layers = 3;
  l.layers.push_back(l.layers[1]);
  EXPECT_THAT(load_error(ck, l), HasSubstr("missing tensor 'model.layers.2."));
}

}  // namespace
}  // namespace inkling
