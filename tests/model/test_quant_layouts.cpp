// Quantized layouts: sanitize() of the mlx-community, mlx-vlm and ModelOpt NVFP4 quant_names
// (sidecars follow their weights, fused w13 codes and block scales split into strided views,
// idempotence), the quantization config parser (defaults, per-module overrides, qkvr fallback,
// exclude lists), and bad quantized inputs that must fail with one clear message naming the tensor.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <set>

#include "../common/fixtures.h"
#include "base/safetensors.h"
#include "model/config.h"
#include "model/layouts.h"
#include "model/quant_config.h"
#include "model/weights.h"

namespace inkling {
namespace {

using ::testing::HasSubstr;

class QuantSynth {
 public:
  const TensorRef& add(const std::string& name, const std::vector<int64_t>& shape,
                       DType dt = DType::F32) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    auto& b = bufs_.emplace_back(size_t(n) * dtype_size(dt));
    for (size_t i = 0; i < b.size(); ++i) b[i] = uint8_t(i * 7 + bufs_.size());
    TensorInfo info;
    info.name = name;
    info.dtype = dt;
    info.shape = shape;
    info.data = b.data();
    info.nbytes = b.size();
    return map_[name] = ref_from_info(info);
  }
  const TensorMap& map() const { return map_; }

 private:
  std::deque<std::vector<uint8_t>> bufs_;
  TensorMap map_;
};

TensorMap sanitize_checked(const TensorMap& in, SanitizeReport* rep = nullptr) {
  auto r = sanitize(in, rep);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  auto again = sanitize(r.value(), nullptr);  // idempotent
  EXPECT_TRUE(again.ok());
  if (again.ok()) {
    EXPECT_EQ(again->size(), r->size());
    for (const auto& [n, t] : r.value()) {
      EXPECT_TRUE(again->count(n)) << n;
      if (!again->count(n)) continue;
      EXPECT_EQ(again->at(n).data, t.data) << n;
      EXPECT_EQ(again->at(n).shape, t.shape) << n;
      EXPECT_EQ(again->at(n).strides, t.strides) << n;
    }
  }
  return r.value();
}

std::set<std::string> quant_names(const TensorMap& m) {
  std::set<std::string> s;
  for (const auto& [n, r] : m) s.insert(n);
  return s;
}

TEST(QuantLayouts, MlxCommunityNaming) {
  QuantSynth s;
  const std::string q = "model.llm.layers.3.";
  for (const char* m : {"gate_proj", "up_proj", "down_proj"}) {
    for (const std::string blk : {"mlp.experts.", "mlp.shared_experts."}) {
      s.add(q + blk + m + ".weight", {4, 8, 8}, DType::U32);
      s.add(q + blk + m + ".scales", {4, 8, 1}, DType::BF16);
      s.add(q + blk + m + ".biases", {4, 8, 1}, DType::BF16);
    }
    s.add("model.llm.layers.0.mlp." + std::string(m) + ".weight", {8, 8}, DType::U32);
    s.add("model.llm.layers.0.mlp." + std::string(m) + ".scales", {8, 1}, DType::BF16);
    s.add("model.llm.layers.0.mlp." + std::string(m) + ".biases", {8, 1}, DType::BF16);
  }
  s.add("model.llm.layers.0.mlp.global_scale", {1});
  s.add(q + "mlp.gate.weight", {6, 64}, DType::BF16);
  s.add(q + "mlp.gate.bias", {4});
  s.add(q + "mlp.gate.global_scale", {1});
  s.add(q + "attn.wq_du.weight", {8, 64}, DType::BF16);
  s.add(q + "attn.k_sconv.weight", {16, 4, 1}, DType::BF16);
  s.add("model.audio.encoder.weight", {4, 8}, DType::U32);
  s.add("model.audio.encoder.scales", {4, 1}, DType::BF16);
  s.add("model.audio.encoder.biases", {4, 1}, DType::BF16);
  SanitizeReport rep;
  const TensorMap out = sanitize_checked(s.map(), &rep);
  EXPECT_EQ(rep.layout, "original (model.llm.*)");
  EXPECT_EQ(rep.dropped.size(), 3u);
  const std::string p = "model.layers.3.";
  for (const char* m : {"gate_proj", "up_proj", "down_proj"})
    for (const std::string blk : {"mlp.experts.", "mlp.shared_experts."}) {
      EXPECT_EQ(out.at(p + blk + m).dtype, DType::U32);
      EXPECT_EQ(out.at(p + blk + m + ".scales").origin, q + blk + m + ".scales");
      EXPECT_EQ(out.at(p + blk + m + ".biases").dtype, DType::BF16);
      EXPECT_EQ(sidecar_name(p + blk + m, Sidecar::kScales), p + blk + m + ".scales");
    }
  EXPECT_TRUE(out.count("model.layers.0.mlp.down_proj.weight"));
  EXPECT_TRUE(out.count("model.layers.0.mlp.down_proj.scales"));
  EXPECT_TRUE(out.count("model.layers.0.mlp.global_scale"));
  EXPECT_TRUE(out.count(p + "mlp.gate.global_scale"));
  EXPECT_TRUE(out.count(p + "mlp.gate.e_score_correction_bias"));
  EXPECT_EQ(out.at(p + "self_attn.k_sconv.conv1d.weight").shape, (std::vector<int64_t>{16, 4}));
  EXPECT_EQ(sidecar_name("x.q_proj.weight", Sidecar::kBiases), "x.q_proj.biases");
}

TEST(QuantLayouts, MlxVlmNaming) {
  QuantSynth s;
  const std::string v = "language_model.model.layers.1.";
  for (const char* st : {".weight", ".scales", ".biases"}) {
    const DType dt = std::string(st) == ".weight" ? DType::U32 : DType::F16;
    s.add(v + "self_attn.qkvr_proj" + st, {40, std::string(st) == ".weight" ? 8 : 2}, dt);
    s.add(v + "mlp.switch_mlp.gate_proj" + st, {4, 8, std::string(st) == ".weight" ? 8 : 2}, dt);
    s.add(v + "mlp.shared_experts.down_proj" + st, {64, std::string(st) == ".weight" ? 2 : 1}, dt);
    s.add("language_model.model.embed_tokens" + std::string(st), {32, 8}, dt);
    s.add("language_model.lm_head" + std::string(st), {32, 8}, dt);
  }
  s.add(v + "mlp.gate_weight", {6, 64});
  s.add(v + "mlp.e_score_correction_bias", {4});
  s.add(v + "mlp.global_scale", {1});  // the router's (MoE layer)
  s.add(v + "mlp.switch_mlp.gate_scale", {4});
  s.add(v + "mlp.switch_mlp.out_scale", {4});
  s.add(v + "self_attn.rel_proj", {4, 12});
  s.add(v + "self_attn.v_sconv.conv.weight", {16, 4, 1});
  s.add(v + "mlp_sconv.conv.weight", {64, 4, 1});
  s.add("language_model.model.layers.0.mlp.global_scale", {1});  // dense layer: stays
  s.add("language_model.model.embed_norm.weight", {64});
  s.add("vision_tower.blocks.0.weight", {2});
  SanitizeReport rep;
  const TensorMap out = sanitize_checked(s.map(), &rep);
  EXPECT_EQ(rep.layout, "mlx-vlm (language_model.model.*)");
  const std::string p = "model.layers.1.";
  const std::set<std::string> want = {p + "self_attn.qkvr_proj.weight",
                                      p + "self_attn.qkvr_proj.scales",
                                      p + "self_attn.qkvr_proj.biases",
                                      p + "mlp.experts.gate_proj",
                                      p + "mlp.experts.gate_proj.scales",
                                      p + "mlp.experts.gate_proj.biases",
                                      p + "mlp.shared_experts.down_proj",
                                      p + "mlp.shared_experts.down_proj.scales",
                                      p + "mlp.shared_experts.down_proj.biases",
                                      "model.embed_tokens.weight",
                                      "model.embed_tokens.scales",
                                      "model.embed_tokens.biases",
                                      "lm_head.weight",
                                      "lm_head.scales",
                                      "lm_head.biases",
                                      p + "mlp.gate.weight",
                                      p + "mlp.gate.e_score_correction_bias",
                                      p + "mlp.gate.global_scale",
                                      p + "mlp.experts.gate_scale",
                                      p + "mlp.experts.out_scale",
                                      p + "self_attn.rel_logits_proj.proj",
                                      p + "self_attn.v_sconv.conv1d.weight",
                                      p + "mlp_sconv.conv1d.weight",
                                      "model.layers.0.mlp.global_scale",
                                      "model.embed_norm.weight"};
  EXPECT_EQ(quant_names(out), want);
  EXPECT_EQ(out.at(p + "mlp_sconv.conv1d.weight").shape, (std::vector<int64_t>{64, 4}));
}

TEST(QuantLayouts, ModelOptNvfp4SplitsCodesAndBlockScales) {
  QuantSynth s;
  const std::string q = "model.llm.layers.2.mlp.experts.";
  const int64_t E = 3, I = 4, H = 32;
  const TensorRef& w13 = s.add(q + "w13_weight", {E, 2 * I, H / 2}, DType::U8);
  const TensorRef& sc = s.add(q + "w13_weight.scale", {E, 2 * I, H / 16}, DType::F8_E4M3);
  const TensorRef& s2 = s.add(q + "w13_weight.scale2", {E});
  s.add(q + "w13_weight.input_amax", {1}, DType::BF16);
  s.add(q + "w13_weight.original_shape", {3}, DType::I64);
  s.add(q + "w2_weight", {E, H, I / 2 + 6}, DType::U8);
  s.add(q + "w2_weight.scale", {E, H, 1}, DType::F8_E4M3);
  s.add(q + "w2_weight.scale2", {E});
  SanitizeReport rep;
  const TensorMap out = sanitize_checked(s.map(), &rep);
  const std::string p = "model.layers.2.mlp.experts.";
  EXPECT_EQ(
      quant_names(out),
      (std::set<std::string>{p + "gate_proj", p + "gate_proj.scales", p + "gate_proj.scale2",
                             p + "up_proj", p + "up_proj.scales", p + "up_proj.scale2",
                             p + "down_proj", p + "down_proj.scales", p + "down_proj.scale2"}));
  EXPECT_EQ(rep.dropped.size(), 2u);
  // Row 2j of w13 is gate row j, row 2j+1 up row j: for the codes and the block scales alike.
  for (const char* half : {"gate_proj", "up_proj"}) {
    const int64_t off = std::string(half) == "up_proj";
    const TensorRef& c = out.at(p + half);
    EXPECT_EQ(c.shape, (std::vector<int64_t>{E, I, H / 2}));
    EXPECT_EQ(c.strides, (std::vector<int64_t>{2 * I * H / 2, 2 * H / 2, 1}));
    EXPECT_EQ(c.data, w13.data + off * H / 2);
    const TensorRef& b = out.at(p + half + std::string(".scales"));
    EXPECT_EQ(b.strides, (std::vector<int64_t>{2 * I * H / 16, 2 * H / 16, 1}));
    EXPECT_EQ(b.data, sc.data + off * H / 16);
    EXPECT_EQ(out.at(p + half + std::string(".scale2")).data, s2.data);
  }
}

TEST(QuantConfigParse, MlxDefaultsOverridesAndQkvrFallback) {
  const std::string cfg = R"({"quantization": {"group_size": 32, "bits": 4, "mode": "affine",
      "recipe": "x", "a.lm_head": {"bits": 8, "group_size": 64}, "a.l.0.o_proj": false,
      "a.l.2.self_attn.q_proj": {"bits": 8}}})";
  auto q = parse_quant_config(cfg, "", "dir");
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->mode, QuantMode::kAffine);
  const ModuleQuant h = q->lookup("a.lm_head");
  EXPECT_TRUE(h.stated && h.quantized);
  EXPECT_EQ(h.bits, 8);
  EXPECT_EQ(h.group, 64);
  const ModuleQuant o = q->lookup("a.l.0.o_proj");
  EXPECT_TRUE(o.stated);
  EXPECT_FALSE(o.quantized);
  const ModuleQuant f = q->lookup("a.l.2.self_attn.qkvr_proj");
  EXPECT_TRUE(f.stated && f.quantized);
  EXPECT_EQ(f.bits, 8);
  EXPECT_EQ(f.group, 32);
  const ModuleQuant d = q->lookup("a.l.1.mlp.down_proj");
  EXPECT_FALSE(d.stated);
  EXPECT_EQ(d.bits, 4);
  // quantization_config and text_config spellings; no dict at all.
  EXPECT_EQ(
      parse_quant_config(R"({"text_config": {"quantization_config": {"bits": 8}}})", "", "d")->bits,
      8);
  EXPECT_FALSE(parse_quant_config("{}", "", "d")->present());
  auto bad = parse_quant_config(R"({"quantization_config": {"quant_method": "gptq"}})", "", "d");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("gptq"));
  EXPECT_FALSE(parse_quant_config(R"({"quantization": {"bits": "four"}})", "", "d").ok());
}

TEST(QuantConfigParse, ModelOptExcludeList) {
  const std::string hq = R"({"quantization": {"quant_algo": "NVFP4", "group_size": 16,
      "exclude_modules": ["model.llm.layers.2.mlp.experts", "model.llm.layers.*.attn", "lm_head"]}})";
  auto q = parse_quant_config("{}", hq, "dir");
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->mode, QuantMode::kNvfp4);
  EXPECT_TRUE(q->lookup("model.llm.layers.2.mlp.experts").stated);
  EXPECT_FALSE(q->lookup("model.llm.layers.3.mlp.experts").stated);
  EXPECT_TRUE(q->lookup("model.llm.layers.7.attn.wq_du").stated);  // glob, then child module
  EXPECT_FALSE(q->lookup("model.llm.layers.7.attn.wq_du").quantized);
  EXPECT_FALSE(q->lookup("model.llm.layers.22.mlp.experts").stated);
  auto fp8 = parse_quant_config("{}", R"({"quantization": {"quant_algo": "FP8"}})", "dir");
  ASSERT_FALSE(fp8.ok());
  EXPECT_THAT(fp8.status().message(), HasSubstr("hf_quant_config.json"));
}

// Inkling 2's releases: MXFP8 (Small) and NVFP4 + MXFP8 (Mini); the companions decide per matrix.
TEST(QuantConfigParse, Mxfp8AndMixedPrecision) {
  auto small = parse_quant_config(
      R"({"quantization_config": {"quant_method": "mxfp8", "modules_to_not_convert": ["lm_head"]}})",
      "", "d");
  ASSERT_TRUE(small.ok()) << small.status().message();
  EXPECT_EQ(small->mode, QuantMode::kMxfp8);
  EXPECT_TRUE(small->lookup("lm_head").stated);
  EXPECT_FALSE(small->lookup("lm_head").quantized);
  EXPECT_FALSE(small->lookup("model.layers.0.mlp.experts").stated);
  EXPECT_EQ(
      parse_quant_config(R"({"quantization_config": {"quant_method": "fp8"}})", "", "d")->mode,
      QuantMode::kMxfp8);
  auto mini =
      parse_quant_config("{}", R"({"quantization": {"quant_algo": "MIXED_PRECISION"}})", "d");
  ASSERT_TRUE(mini.ok()) << mini.status().message();
  EXPECT_EQ(mini->mode, QuantMode::kMixed);
  EXPECT_STREQ(quant_mode_name(mini->mode), "mixed");
  EXPECT_EQ(parse_quant_config("{}", R"({"quantization": {"quant_algo": "MXFP8"}})", "d")->mode,
            QuantMode::kMxfp8);
}

// Loads a committed quantized fixture as canonical tensors, lets the test break one, binds.
class BadQuant : public ::testing::Test {
 protected:
  bool load(const std::string& fixture) {
    dir_ = testing::fixture_dir(fixture) + "/model";
    if (!std::filesystem::exists(dir_ + "/config.json")) return false;
    auto c = load_config(dir_);
    auto q = load_quant_config(dir_);
    auto st = TensorStore::open_dir(dir_);
    EXPECT_TRUE(c.ok() && q.ok() && st.ok());
    config_ = c.value();
    quant_ = q.value();
    store_ = std::move(st).value();
    auto m = sanitize(refs_from_store(store_), nullptr);
    EXPECT_TRUE(m.ok());
    map_ = m.value();
    return true;
  }
  std::string bind_error() {
    auto w = bind_weights(config_, map_, quant_);
    EXPECT_FALSE(w.ok());
    return w.ok() ? "" : w.status().message();
  }
  std::string dir_;
  ModelConfig config_;
  QuantConfig quant_;
  TensorStore store_;
  TensorMap map_;
};

TEST_F(BadQuant, FixturesBindCleanly) {
  for (const char* f : {"quant_mlx4", "quant_mlxvlm", "quant_nvfp4"}) {
    if (!load(f)) GTEST_SKIP();
    auto w = bind_weights(config_, map_, quant_);
    ASSERT_TRUE(w.ok()) << f << ": " << w.status().message();
    EXPECT_TRUE(w->unused.empty()) << f << ": " << w->unused.front();
  }
}

TEST_F(BadQuant, ScalesWithTheWrongShape) {
  if (!load("quant_mlx4")) GTEST_SKIP();
  TensorRef& s = map_.at("model.layers.2.mlp.experts.down_proj.scales");
  s.shape.back() = 3;  // [E, H, 3] where group 64 of the config gives [E, H, 1]
  s.origin_shape = s.shape;
  const std::string m = bind_error();
  EXPECT_THAT(m, HasSubstr("model.llm.layers.2.mlp.experts.down_proj.scales: expected [8, 128, 1], "
                           "got [8, 128, 3]"));
}

TEST_F(BadQuant, CodesOfTheWrongDtype) {
  if (!load("quant_mlx4")) GTEST_SKIP();
  map_.at("model.layers.1.mlp.experts.gate_proj").dtype = DType::I32;
  const std::string m = bind_error();
  EXPECT_THAT(m, HasSubstr("model.llm.layers.1.mlp.experts.gate_proj.weight"));
  EXPECT_THAT(m, HasSubstr("got I32"));
}

TEST_F(BadQuant, MissingScale2) {
  if (!load("quant_nvfp4")) GTEST_SKIP();
  ASSERT_EQ(map_.erase("model.layers.3.mlp.experts.down_proj.scale2"), 1u);
  EXPECT_THAT(bind_error(), HasSubstr("model.llm.layers.3.mlp.experts.w2_weight.scale2: missing"));
}

TEST_F(BadQuant, ConfiguredGroupDoesNotDivideTheRow) {
  if (!load("quant_mlxvlm")) GTEST_SKIP();
  quant_.overrides["language_model.model.layers.1.self_attn.o_proj"] =
      QuantConfig::Override{QuantMode::kAffine, 4, 48};
  const std::string dense = bind_error();
  EXPECT_THAT(dense, HasSubstr("language_model.model.layers.1.self_attn.o_proj.weight: override"));
  EXPECT_THAT(dense, HasSubstr("says this module is quantized, but it is a F16 tensor"));
  quant_.overrides.erase("language_model.model.layers.1.self_attn.o_proj");
  quant_.overrides["language_model.model.layers.3.self_attn.o_proj"] =
      QuantConfig::Override{QuantMode::kAffine, 4, 48};
  const std::string m = bind_error();
  EXPECT_THAT(m, HasSubstr("language_model.model.layers.3.self_attn.o_proj.weight"));
  EXPECT_THAT(m, HasSubstr("group size 48 does not divide the row length 128"));
}

TEST_F(BadQuant, ConfigBitsDisagreeWithShapes) {
  if (!load("quant_mlxvlm")) GTEST_SKIP();
  quant_.overrides["language_model.lm_head"] = QuantConfig::Override{QuantMode::kAffine, 4, 64};
  const std::string m = bind_error();
  EXPECT_THAT(m, HasSubstr("language_model.lm_head.weight: expected [384, 16], got [384, 32]"));
}

}  // namespace
}  // namespace inkling
