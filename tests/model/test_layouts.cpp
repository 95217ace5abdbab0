// sanitize(): every rename of the original layout, the gate/up de-interleave of fused w13
// tensors (read back through shape and strides), transformers' contiguous gate_up_proj halves,
// conv squeezes, multimodal prefixes, dropped towers, idempotence and name collisions. All on
// synthetic maps over small buffers this file owns.
#include "model/layouts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace inkling {
namespace {

using ::testing::HasSubstr;

// Owns the float buffers behind a synthetic TensorMap. Element i of tensor t holds
// 1000 * t + i, so every element is distinguishable.
class Synth {
 public:
  const TensorRef& add(const std::string& name, const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    const float base = 1000.f * float(bufs_.size());
    auto& b = bufs_.emplace_back(size_t(n));
    for (size_t i = 0; i < b.size(); ++i) b[i] = base + float(i);
    TensorInfo info;
    info.name = name;
    info.dtype = DType::F32;
    info.shape = shape;
    info.data = reinterpret_cast<const uint8_t*>(b.data());
    info.nbytes = b.size() * 4;
    return map_[name] = ref_from_info(info);
  }
  const TensorMap& map() const { return map_; }

 private:
  std::deque<std::vector<float>> bufs_;
  TensorMap map_;
};

// Element at a multi-index of a (possibly strided) F32 view.
float at(const TensorRef& r, const std::vector<int64_t>& idx) {
  EXPECT_EQ(idx.size(), r.shape.size());
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * r.strides[d];
  return load_as_f32(r.dtype, r.data, size_t(off));
}

TensorMap sanitize_ok(const TensorMap& in, SanitizeReport* rep = nullptr) {
  SanitizeReport local;
  auto r = sanitize(in, rep ? rep : &local);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r.value() : TensorMap{};
}

std::set<std::string> names(const TensorMap& m) {
  std::set<std::string> s;
  for (const auto& [n, r] : m) s.insert(n);
  return s;
}

TEST(Layouts, RefFromInfoIsContiguous) {
  Synth s;
  const TensorRef& r = s.add("x", {2, 3, 4});
  EXPECT_EQ(r.strides, (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(r.origin, "x");
  EXPECT_EQ(r.origin_shape, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(r.derivation, Derivation::kSame);
  EXPECT_EQ(at(r, {1, 2, 3}), 23.f);
  EXPECT_EQ(shape_str({2, 3}), "[2, 3]");
  EXPECT_EQ(shape_str({}), "[]");
}

// Original name -> canonical name for every plain rename (same bytes, same shape).
const std::vector<std::pair<std::string, std::string>> kOgRenames = {
    {"model.llm.embed.weight", "model.embed_tokens.weight"},
    {"model.llm.embed_norm.weight", "model.embed_norm.weight"},
    {"model.llm.norm.weight", "model.norm.weight"},
    {"model.llm.unembed.weight", "lm_head.weight"},
    {"model.llm.layers.3.attn_norm.weight", "model.layers.3.input_layernorm.weight"},
    {"model.llm.layers.3.mlp_norm.weight", "model.layers.3.post_attention_layernorm.weight"},
    {"model.llm.layers.3.attn.wq_du.weight", "model.layers.3.self_attn.q_proj.weight"},
    {"model.llm.layers.3.attn.wk_dv.weight", "model.layers.3.self_attn.k_proj.weight"},
    {"model.llm.layers.3.attn.wv_dv.weight", "model.layers.3.self_attn.v_proj.weight"},
    {"model.llm.layers.3.attn.wr_du.weight", "model.layers.3.self_attn.r_proj.weight"},
    {"model.llm.layers.3.attn.wo_ud.weight", "model.layers.3.self_attn.o_proj.weight"},
    {"model.llm.layers.3.attn.q_norm.weight", "model.layers.3.self_attn.q_norm.weight"},
    {"model.llm.layers.3.attn.k_norm.weight", "model.layers.3.self_attn.k_norm.weight"},
    {"model.llm.layers.3.attn.rel_logits_proj.proj",
     "model.layers.3.self_attn.rel_logits_proj.proj"},
    {"model.llm.layers.12.mlp.w2_md.weight", "model.layers.12.mlp.down_proj.weight"},
    {"model.llm.layers.12.mlp.global_scale", "model.layers.12.mlp.global_scale"},
    {"model.llm.layers.3.mlp.gate.weight", "model.layers.3.mlp.gate.weight"},
    {"model.llm.layers.3.mlp.gate.bias", "model.layers.3.mlp.gate.e_score_correction_bias"},
    {"model.llm.layers.3.mlp.gate.global_scale", "model.layers.3.mlp.gate.global_scale"},
    {"model.llm.layers.3.mlp.experts.w2_weight", "model.layers.3.mlp.experts.down_proj"},
    {"model.llm.layers.3.mlp.shared_experts.shared_w2_weight",
     "model.layers.3.mlp.shared_experts.down_proj"},
};

const std::vector<std::pair<std::string, std::string>> kOgConvRenames = {
    {"model.llm.layers.3.attn.k_sconv.weight", "model.layers.3.self_attn.k_sconv.conv1d.weight"},
    {"model.llm.layers.3.attn.v_sconv.weight", "model.layers.3.self_attn.v_sconv.conv1d.weight"},
    {"model.llm.layers.3.attn_sconv.weight", "model.layers.3.attn_sconv.conv1d.weight"},
    {"model.llm.layers.3.mlp_sconv.weight", "model.layers.3.mlp_sconv.conv1d.weight"},
};

TEST(Layouts, OriginalRenames) {
  Synth s;
  for (const auto& [og, hf] : kOgRenames) s.add(og, {3, 2});
  for (const auto& [og, hf] : kOgConvRenames) s.add(og, {4, 1, 3});
  SanitizeReport rep;
  const TensorMap out = sanitize_ok(s.map(), &rep);
  EXPECT_EQ(rep.layout, "original (model.llm.*)");
  EXPECT_TRUE(rep.dropped.empty());
  std::set<std::string> want;
  for (const auto& [og, hf] : kOgRenames) {
    want.insert(hf);
    ASSERT_TRUE(out.count(hf)) << og << " -> " << hf << " missing";
    const TensorRef& r = out.at(hf);
    EXPECT_EQ(r.data, s.map().at(og).data) << hf;
    EXPECT_EQ(r.shape, (std::vector<int64_t>{3, 2})) << hf;
    EXPECT_EQ(r.strides, (std::vector<int64_t>{2, 1})) << hf;
    EXPECT_EQ(r.origin, og);
    EXPECT_EQ(r.derivation, Derivation::kSame);
  }
  for (const auto& [og, hf] : kOgConvRenames) {
    want.insert(hf);
    ASSERT_TRUE(out.count(hf)) << og << " -> " << hf << " missing";
    const TensorRef& r = out.at(hf);
    EXPECT_EQ(r.shape, (std::vector<int64_t>{4, 3})) << hf;
    EXPECT_EQ(r.derivation, Derivation::kConvSqueeze);
    EXPECT_EQ(r.origin, og);
    EXPECT_EQ(r.origin_shape, (std::vector<int64_t>{4, 1, 3}));
  }
  EXPECT_EQ(names(out), want);
}

TEST(Layouts, DenseW13Deinterleaves) {
  Synth s;
  const int64_t I = 3, H = 4;
  const TensorRef& w13 = s.add("model.llm.layers.0.mlp.w13_dn.weight", {2 * I, H});
  const TensorMap out = sanitize_ok(s.map());
  ASSERT_EQ(names(out), (std::set<std::string>{"model.layers.0.mlp.gate_proj.weight",
                                               "model.layers.0.mlp.up_proj.weight"}));
  const TensorRef& g = out.at("model.layers.0.mlp.gate_proj.weight");
  const TensorRef& u = out.at("model.layers.0.mlp.up_proj.weight");
  for (const TensorRef* r : {&g, &u}) {
    EXPECT_EQ(r->shape, (std::vector<int64_t>{I, H}));
    EXPECT_EQ(r->strides.back(), 1) << "columns stay contiguous";
    EXPECT_EQ(r->origin, "model.llm.layers.0.mlp.w13_dn.weight");
    EXPECT_EQ(r->origin_shape, (std::vector<int64_t>{2 * I, H}));
    EXPECT_EQ(r->derivation, Derivation::kInterleavedHalf);
  }
  for (int64_t j = 0; j < I; ++j)
    for (int64_t c = 0; c < H; ++c) {
      EXPECT_EQ(at(g, {j, c}), at(w13, {2 * j, c})) << j << "," << c;
      EXPECT_EQ(at(u, {j, c}), at(w13, {2 * j + 1, c})) << j << "," << c;
    }
}

void check_stacked_interleave(const std::string& og_name, const std::string& gate,
                              const std::string& up) {
  Synth s;
  const int64_t E = 3, I = 2, H = 5;
  const TensorRef& w13 = s.add(og_name, {E, 2 * I, H});
  const TensorMap out = sanitize_ok(s.map());
  ASSERT_EQ(names(out), (std::set<std::string>{gate, up}));
  const TensorRef& g = out.at(gate);
  const TensorRef& u = out.at(up);
  EXPECT_EQ(g.shape, (std::vector<int64_t>{E, I, H}));
  EXPECT_EQ(u.shape, (std::vector<int64_t>{E, I, H}));
  EXPECT_EQ(g.strides.back(), 1);
  for (int64_t e = 0; e < E; ++e)
    for (int64_t j = 0; j < I; ++j)
      for (int64_t c = 0; c < H; ++c) {
        EXPECT_EQ(at(g, {e, j, c}), at(w13, {e, 2 * j, c}))
            << og_name << " " << e << "," << j << "," << c;
        EXPECT_EQ(at(u, {e, j, c}), at(w13, {e, 2 * j + 1, c}))
            << og_name << " " << e << "," << j << "," << c;
      }
}

TEST(Layouts, ExpertsW13DeinterleavesPerExpert) {
  check_stacked_interleave("model.llm.layers.1.mlp.experts.w13_weight",
                           "model.layers.1.mlp.experts.gate_proj",
                           "model.layers.1.mlp.experts.up_proj");
}

TEST(Layouts, SharedW13DeinterleavesPerExpert) {
  check_stacked_interleave("model.llm.layers.1.mlp.shared_experts.shared_w13_weight",
                           "model.layers.1.mlp.shared_experts.gate_proj",
                           "model.layers.1.mlp.shared_experts.up_proj");
}

TEST(Layouts, GateUpProjSplitsContiguousHalves) {
  for (const std::string prefix : {"model.layers.2.", "model.language_model.layers.2."}) {
    Synth s;
    const int64_t E = 2, I = 3, H = 4;
    const TensorRef& gu = s.add(prefix + "mlp.experts.gate_up_proj", {E, 2 * I, H});
    const TensorMap out = sanitize_ok(s.map());
    ASSERT_EQ(names(out), (std::set<std::string>{"model.layers.2.mlp.experts.gate_proj",
                                                 "model.layers.2.mlp.experts.up_proj"}));
    const TensorRef& g = out.at("model.layers.2.mlp.experts.gate_proj");
    const TensorRef& u = out.at("model.layers.2.mlp.experts.up_proj");
    EXPECT_EQ(g.shape, (std::vector<int64_t>{E, I, H}));
    EXPECT_EQ(u.shape, (std::vector<int64_t>{E, I, H}));
    EXPECT_EQ(g.derivation, Derivation::kContiguousHalf);
    for (int64_t e = 0; e < E; ++e)
      for (int64_t j = 0; j < I; ++j)
        for (int64_t c = 0; c < H; ++c) {
          EXPECT_EQ(at(g, {e, j, c}), at(gu, {e, j, c}));
          EXPECT_EQ(at(u, {e, j, c}), at(gu, {e, I + j, c}));
        }
  }
}

TEST(Layouts, FusedOddRowsIsAnError) {
  Synth s;
  s.add("model.llm.layers.0.mlp.w13_dn.weight", {5, 4});
  auto r = sanitize(s.map(), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("model.llm.layers.0.mlp.w13_dn.weight"));
  EXPECT_THAT(r.status().message(), HasSubstr("[5, 4]"));
  Synth v;
  v.add("model.layers.0.mlp.experts.gate_up_proj", {6});  // 1-D: no rows to split
  EXPECT_FALSE(sanitize(v.map(), nullptr).ok());
}

TEST(Layouts, ConvShapesBothBecomeCK) {
  const int64_t C = 4, K = 3;
  Synth s;
  const TensorRef& a = s.add("model.layers.0.attn_sconv.conv1d.weight", {C, 1, K});  // torch
  const TensorRef& b = s.add("model.layers.0.mlp_sconv.conv1d.weight", {C, K, 1});   // MLX
  const TensorRef& k =
      s.add("model.layers.0.self_attn.k_sconv.conv1d.weight", {C, K});  // already canonical
  const TensorMap out = sanitize_ok(s.map());
  const TensorRef& oa = out.at("model.layers.0.attn_sconv.conv1d.weight");
  const TensorRef& ob = out.at("model.layers.0.mlp_sconv.conv1d.weight");
  const TensorRef& ok = out.at("model.layers.0.self_attn.k_sconv.conv1d.weight");
  for (const TensorRef* r : {&oa, &ob, &ok}) {
    EXPECT_EQ(r->shape, (std::vector<int64_t>{C, K}));
    EXPECT_EQ(r->strides, (std::vector<int64_t>{K, 1}));
  }
  EXPECT_EQ(oa.data, a.data);
  EXPECT_EQ(ob.data, b.data);
  EXPECT_EQ(ok.data, k.data);
  EXPECT_EQ(oa.origin_shape, (std::vector<int64_t>{C, 1, K}));
  EXPECT_EQ(ob.origin_shape, (std::vector<int64_t>{C, K, 1}));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t j = 0; j < K; ++j) {
      EXPECT_EQ(at(oa, {c, j}), at(a, {c, 0, j}));
      EXPECT_EQ(at(ob, {c, j}), at(b, {c, j, 0}));
      // Identical element order: the same flat index in both inputs.
      EXPECT_EQ(at(oa, {c, j}) - at(oa, {0, 0}), at(ob, {c, j}) - at(ob, {0, 0}));
    }
}

TEST(Layouts, MultimodalPrefixAndEmbedNormSpellings) {
  Synth s;
  s.add("model.language_model.embed_tokens.weight", {4, 2});
  s.add("model.language_model.embed_tokens.embed_norm.weight", {2});
  s.add("model.language_model.norm.weight", {2});
  s.add("model.language_model.layers.0.self_attn.q_proj.weight", {2, 2});
  s.add("lm_head.weight", {4, 2});
  SanitizeReport rep;
  const TensorMap out = sanitize_ok(s.map(), &rep);
  EXPECT_THAT(rep.layout, HasSubstr("model.language_model"));
  EXPECT_EQ(names(out),
            (std::set<std::string>{"model.embed_tokens.weight", "model.embed_norm.weight",
                                   "model.norm.weight", "model.layers.0.self_attn.q_proj.weight",
                                   "lm_head.weight"}));
  EXPECT_EQ(out.at("model.embed_norm.weight").data,
            s.map().at("model.language_model.embed_tokens.embed_norm.weight").data);
  EXPECT_EQ(out.at("model.embed_norm.weight").origin,
            "model.language_model.embed_tokens.embed_norm.weight");

  Synth t;  // InklingForCausalLM with the newer embed-norm key.
  t.add("model.embed_tokens.embed_norm.weight", {2});
  t.add("model.embed_tokens.weight", {4, 2});
  SanitizeReport rep2;
  const TensorMap out2 = sanitize_ok(t.map(), &rep2);
  EXPECT_EQ(rep2.layout, "transformers (InklingForCausalLM)");
  EXPECT_EQ(names(out2),
            (std::set<std::string>{"model.embed_tokens.weight", "model.embed_norm.weight"}));
}

TEST(Layouts, DropsTowersMtpAndTrainingArgs) {
  Synth s;
  const std::vector<std::string> dropped = {
      "model.mtp.layers.0.attn.wq_du.weight",
      "model.visual.blocks.0.weight",
      "model.audio.encoder.weight",
      "training_args",
      "model.llm.training_args.bin",
      "model.vision_tower.x",
      "model.audio_tower.y",
  };
  for (const auto& n : dropped) s.add(n, {2});
  s.add("model.llm.norm.weight", {2});
  SanitizeReport rep;
  const TensorMap out = sanitize_ok(s.map(), &rep);
  EXPECT_EQ(names(out), (std::set<std::string>{"model.norm.weight"}));
  std::vector<std::string> got = rep.dropped, want = dropped;
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
}

// A map in each layout with one of every kind of tensor (fused, conv, renamed, plain).
void add_layout(Synth& s, const std::string& layout) {
  if (layout == "og") {
    s.add("model.llm.embed.weight", {6, 4});
    s.add("model.llm.embed_norm.weight", {4});
    s.add("model.llm.unembed.weight", {6, 4});
    s.add("model.llm.layers.0.attn.wq_du.weight", {4, 4});
    s.add("model.llm.layers.0.attn.k_sconv.weight", {4, 1, 3});
    s.add("model.llm.layers.0.mlp.w13_dn.weight", {6, 4});
    s.add("model.llm.layers.1.mlp.gate.bias", {2});
    s.add("model.llm.layers.1.mlp.experts.w13_weight", {2, 4, 4});
    s.add("model.llm.layers.1.mlp.shared_experts.shared_w13_weight", {1, 4, 4});
    s.add("model.mtp.something", {1});
  } else if (layout == "hf") {
    s.add("model.embed_tokens.weight", {6, 4});
    s.add("model.embed_norm.weight", {4});
    s.add("lm_head.weight", {6, 4});
    s.add("model.layers.0.self_attn.q_proj.weight", {4, 4});
    s.add("model.layers.0.self_attn.k_sconv.conv1d.weight", {4, 1, 3});
    s.add("model.layers.0.mlp.gate_proj.weight", {3, 4});
    s.add("model.layers.1.mlp.experts.gate_up_proj", {2, 4, 4});
    s.add("model.layers.1.mlp.shared_experts.gate_proj", {1, 2, 4});
  } else {  // multimodal transformers + MLX-style conv
    s.add("model.language_model.embed_tokens.weight", {6, 4});
    s.add("model.language_model.embed_tokens.embed_norm.weight", {4});
    s.add("lm_head.weight", {6, 4});
    s.add("model.language_model.layers.0.mlp_sconv.conv1d.weight", {4, 3, 1});
    s.add("model.language_model.layers.1.mlp.experts.gate_up_proj", {2, 4, 4});
    s.add("model.visual.patch_embed.weight", {2});
  }
}

TEST(Layouts, Idempotent) {
  for (const char* layout : {"og", "hf", "mm"}) {
    Synth s;
    add_layout(s, layout);
    const TensorMap once = sanitize_ok(s.map());
    SanitizeReport rep;
    const TensorMap twice = sanitize_ok(once, &rep);
    EXPECT_TRUE(rep.dropped.empty()) << layout;
    ASSERT_EQ(names(once), names(twice)) << layout;
    for (const auto& [n, r] : once) {
      const TensorRef& t = twice.at(n);
      EXPECT_EQ(t.shape, r.shape) << layout << " " << n;
      EXPECT_EQ(t.strides, r.strides) << layout << " " << n;
      EXPECT_EQ(t.data, r.data) << layout << " " << n;
      EXPECT_EQ(t.dtype, r.dtype) << layout << " " << n;
    }
  }
}

TEST(Layouts, SameCanonicalNameTwiceIsAnError) {
  const std::vector<std::pair<std::string, std::string>> clashes = {
      {"model.llm.layers.0.attn_norm.weight", "model.layers.0.input_layernorm.weight"},
      {"model.language_model.norm.weight", "model.norm.weight"},
      {"model.embed_tokens.embed_norm.weight", "model.embed_norm.weight"},
      {"model.llm.layers.0.mlp.experts.w13_weight", "model.layers.0.mlp.experts.gate_up_proj"},
      {"model.llm.layers.0.mlp.w13_dn.weight", "model.layers.0.mlp.up_proj.weight"},
  };
  for (const auto& [a, b] : clashes) {
    Synth s;
    s.add(a, {2, 2, 2});
    s.add(b, {2, 2, 2});
    auto r = sanitize(s.map(), nullptr);
    ASSERT_FALSE(r.ok()) << a << " + " << b;
    // The message names one of the two checkpoint tensors.
    const std::string& m = r.status().message();
    EXPECT_TRUE(m.find(a) != std::string::npos || m.find(b) != std::string::npos) << m;
  }
}

TEST(Layouts, UnknownTensorsPassThrough) {
  Synth s;
  s.add("model.layers.0.some_future_tensor", {2});
  s.add("model.llm.something_else", {2});
  const TensorMap out = sanitize_ok(s.map());
  EXPECT_EQ(out.size(), 2u);
}

}  // namespace
}  // namespace inkling
