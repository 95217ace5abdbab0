// Quantized checkpoints end to end (fixtures from tools/make_quant_fixtures.py): teacher-forced
// logits and 64 greedy tokens against transformers on the dequantized weights, dequantized rows
// bit-exact against Python's, the storage each layout binds to, and that every quantized view
// points into the mapped checkpoint (nothing was dequantized into a copy).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

#include "../common/batched_rows.h"
#include "../common/fixtures.h"
#include "inkling/engine.h"
#include "inkling/sampler.h"
#include "model/model.h"
#include "model/moe.h"
#include "ops/formats.h"
#include "ops/quant.h"
#include "ops/quant_q4_int8_gemm.h"

namespace inkling {
namespace {

using testing::fixture_dir;
using testing::json_ids;
using testing::read_json;

// quant_mlx{2,3,5,6,8}: the mlx4 layout at MLX's other widths (3 with attention, embedding and
// head quantized too); see tools/make_quant_fixtures.py.
const std::vector<std::string> kFixtures = {"quant_mlx4", "quant_mlxvlm", "quant_nvfp4",
                                            "quant_mlx2", "quant_mlx3",   "quant_mlx5",
                                            "quant_mlx6", "quant_mlx8"};

class QuantParity : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = fixture_dir(GetParam());
    model_ = dir_ + "/model";
    if (!std::filesystem::exists(model_ + "/config.json")) GTEST_SKIP() << "no " << model_;
    prompt_ = json_ids(read_json(dir_ + "/ref/prompt.json"), "prompt_ids");
    ASSERT_FALSE(prompt_.empty());
  }
  std::shared_ptr<Engine> engine(Numerics n = Numerics::kExact) {
    auto e = Engine::load(model_, testing::parity_options(2, 256, n));
    EXPECT_TRUE(e.ok()) << e.status().message();
    return e.ok() ? e.value() : nullptr;
  }
  std::string dir_, model_;
  std::vector<int32_t> prompt_;
};

TEST_P(QuantParity, TeacherForcedLogits) {
  auto eng = engine();
  ASSERT_TRUE(eng);
  const auto r = testing::compare_logits(*eng, prompt_, dir_ + "/ref/logits.npy");
  ASSERT_EQ(r.error, "");
  std::printf("[quant parity] %s: max|diff| %.3g, max|logit| %.3g, ratio %.3g\n",
              GetParam().c_str(), r.max_diff, r.max_ref, r.max_diff / r.max_ref);
  EXPECT_LE(r.max_diff, 1e-4f * r.max_ref);
}

// Fast numerics (int8 x against the codes, bf16 x against bf16 weights). These fixtures have no
// transformers bf16 run recorded (ref/bf16_run.json needs the HF model of the dequantized weights,
// which they do not keep): the bar is a guard against broken products only (0.5 of max |logit|;
// transformers bf16 moved the bf16 fixture's logits by 0.30, its random routers flipping). The
// quality bar that matters is the trained demo model's (bench/numerics_ab, docs/performance.md).
TEST_P(QuantParity, TeacherForcedLogitsFast) {
  auto eng = engine(Numerics::kFast);
  ASSERT_TRUE(eng);
  const auto r = testing::compare_logits(*eng, prompt_, dir_ + "/ref/logits.npy");
  ASSERT_EQ(r.error, "");
  std::printf("[quant parity fast] %s: max|diff| %.3g, max|logit| %.3g, ratio %.3g\n",
              GetParam().c_str(), r.max_diff, r.max_ref, r.max_diff / r.max_ref);
  EXPECT_LE(r.max_diff, testing::fast_parity_bar(dir_, 0.5) * r.max_ref);
}

TEST_P(QuantParity, Greedy64TokensExact) {
  auto eng = engine();
  ASSERT_TRUE(eng);
  const auto want = json_ids(read_json(dir_ + "/ref/greedy.json"), "ids");
  ASSERT_EQ(want.size(), 64u);
  const auto got = testing::greedy_ids(*eng, prompt_, want.size());
  std::printf("[quant parity] %s: greedy %zu/%zu tokens match\n", GetParam().c_str(),
              testing::matching_prefix(got, want), want.size());
  EXPECT_EQ(got, want);
}

// "layers.2.routed.3.gate", "embed", "layers.2.shared.1.down", "layers.1.q" -> the bound view.
const MatView* find_view(const Weights& w, const std::string& what) {
  if (what == "embed") return &w.embed;
  if (what == "lm_head") return &w.lm_head;
  std::vector<std::string> p;
  std::stringstream ss(what);
  for (std::string part; std::getline(ss, part, '.');) p.push_back(part);
  if (p.size() < 3 || p[0] != "layers") return nullptr;
  const LayerWeights& L = w.layers.at(size_t(std::stoi(p[1])));
  auto pick = [](const SwiGluWeights& s, const std::string& m) -> const MatView* {
    return m == "gate" ? &s.gate : m == "up" ? &s.up : m == "down" ? &s.down : nullptr;
  };
  if (p[2] == "dense" && p.size() == 4) return pick(L.dense, p[3]);
  if (p[2] == "routed" && p.size() == 5)
    return pick(L.moe.routed.at(size_t(std::stoi(p[3]))), p[4]);
  if (p[2] == "shared" && p.size() == 5)
    return pick(L.moe.shared.at(size_t(std::stoi(p[3]))), p[4]);
  const AttentionWeights& a = L.attn;
  if (p[2] == "q") return &a.q;
  if (p[2] == "k") return &a.k;
  if (p[2] == "v") return &a.v;
  if (p[2] == "r") return &a.r;
  if (p[2] == "o") return &a.o;
  return nullptr;
}

TEST_P(QuantParity, DequantizedRowsBitExactAgainstPython) {
  auto m = Model::load(model_);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const auto manifest = read_json(dir_ + "/ref/dequant.json");
  ASSERT_TRUE(manifest.is_array() && !manifest.empty());
  int checked = 0;
  for (const auto& item : manifest) {
    const std::string what = item["what"];
    const MatView* v = find_view((*m)->weights, what);
    ASSERT_NE(v, nullptr) << what;
    auto ref = read_npy_f32(dir_ + "/ref/" + item["file"].get<std::string>());
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    const auto rows = item["rows"];
    ASSERT_EQ(ref->shape, (std::vector<int64_t>{int64_t(rows.size()), v->cols})) << what;
    std::vector<float> got(size_t(v->cols));
    for (size_t i = 0; i < rows.size(); ++i) {
      dequant_row(*v, rows[i].get<int64_t>(), got.data());
      ASSERT_EQ(std::memcmp(got.data(), ref->data.data() + i * size_t(v->cols), got.size() * 4), 0)
          << what << " row " << rows[i];
      ++checked;
    }
  }
  std::printf("[quant parity] %s: %d dequantized rows bit-exact\n", GetParam().c_str(), checked);
}

// Every quantized view's codes, scales and biases lie inside the checkpoint's mapped tensors.
TEST_P(QuantParity, QuantizedViewsPointIntoTheMapping) {
  auto m = Model::load(model_);
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::vector<std::pair<const uint8_t*, const uint8_t*>> spans;
  for (const auto& [name, t] : (*m)->store.all()) spans.emplace_back(t->data, t->data + t->nbytes);
  auto mapped = [&](const uint8_t* p) {
    for (const auto& [b, e] : spans)
      if (p >= b && p < e) return true;
    return false;
  };
  std::vector<const MatView*> all = {&(*m)->weights.embed, &(*m)->weights.lm_head};
  for (const LayerWeights& L : (*m)->weights.layers) {
    for (const MatView* v : {&L.attn.q, &L.attn.k, &L.attn.v, &L.attn.r, &L.attn.o})
      all.push_back(v);
    for (const SwiGluWeights* s : {&L.dense})
      for (const MatView* v : {&s->gate, &s->up, &s->down}) all.push_back(v);
    all.push_back(&L.moe.router);
    for (const auto* group : {&L.moe.routed, &L.moe.shared})
      for (const SwiGluWeights& s : *group)
        for (const MatView* v : {&s.gate, &s.up, &s.down}) all.push_back(v);
  }
  int quantized = 0, dense = 0;
  for (const MatView* v : all) {
    if (!v->data) continue;  // e.g. dense weights of a MoE layer
    EXPECT_TRUE(mapped(v->data));
    if (v->format == WeightFormat::kDense) {
      ++dense;
      continue;
    }
    ++quantized;
    EXPECT_TRUE(mapped(v->scales));
    if (v->biases) {
      EXPECT_TRUE(mapped(v->biases));
    }
  }
  std::printf("[quant parity] %s: %d quantized and %d dense views, all into the mapping\n",
              GetParam().c_str(), quantized, dense);
  EXPECT_GT(quantized, 0);
  for (const auto& [label, s] : (*m)->weights.storage)
    std::printf("[quant parity] %s:   %-16s %3lld tensors %8llu bytes\n", GetParam().c_str(),
                label.c_str(), (long long)s.tensors, (unsigned long long)s.bytes);
}

// Fast numerics on an AVX512-VNNI CPU: the 4-bit matrices get load-time tiles (every one but the
// embedding, which is only looked up), bound for every token count, and a session stepped in a
// batch of 20 (a piece of 16 rows and one of 4) gets bitwise the logits it gets decoded alone.
TEST(QuantTiles, FastEngineTilesTheMatricesAndKeepsBatchedRowsBitwise) {
  const std::string dir = fixture_dir("quant_mlx4") + "/model";
  if (!std::filesystem::exists(dir + "/config.json")) GTEST_SKIP() << "no " << dir;
  auto m = Model::load(dir);
  ASSERT_TRUE(m.ok()) << m.status().message();
  Weights& w = (*m)->weights;
  bind_numerics(w, Numerics::kExact);
  EXPECT_EQ(w.tile_bytes, 0u);
  bind_numerics(w, Numerics::kFast);
  if (!q4_int8_tiles_enabled()) GTEST_SKIP() << "no AVX512-VNNI int8 gemm";
  EXPECT_GT(w.tile_bytes, 0u);
  int tiled = 0, q4 = 0;
  for_each_matrix(w, [&](const char* group, const std::string& name, const MatView& v) {
    if (v.format != WeightFormat::kAffine || v.bits != 4 || std::string(group) == "router") return;
    ++q4;
    if (std::string(group) == "embed") {
      EXPECT_EQ(v.tiles, nullptr) << name;
      return;
    }
    ASSERT_NE(v.tiles, nullptr) << name;
    ++tiled;
    EXPECT_EQ(v.kernels->for_tokens(1).rows, v.kernels->for_tokens(17).rows) << name;
  });
  std::printf("[quant tiles] %d of %d 4-bit matrices tiled, %.2f MB\n", tiled, q4,
              double(w.tile_bytes) / 1e6);
  EXPECT_GT(tiled, 0);
  bind_numerics(w, Numerics::kExact);  // exact drops them again
  EXPECT_EQ(w.tile_bytes, 0u);
  EXPECT_EQ(w.lm_head.tiles, nullptr);

  auto e = Engine::load(dir, testing::parity_options(2, 64, Numerics::kFast));
  ASSERT_TRUE(e.ok()) << e.status().message();
  const auto prompt =
      json_ids(read_json(fixture_dir("quant_mlx4") + "/ref/prompt.json"), "prompt_ids");
  testing::expect_batched_rows_bitwise_alone(*e.value(), prompt, 20, 2);
}

// Every tiled view of a fast engine (4-bit affine and NVFP4) computes what the gemm's scalar twin
// computes from the codes as stored: the tiles hold the matrix they were made from.
TEST(QuantTiles, EveryTiledViewIsItsTwin) {
  if (!q4_int8_tiles_enabled()) GTEST_SKIP() << "no AVX512-VNNI int8 gemm";
  for (const char* fx : {"quant_mlx4", "quant_nvfp4"}) {
    const std::string dir = fixture_dir(fx) + "/model";
    if (!std::filesystem::exists(dir + "/config.json")) GTEST_SKIP() << "no " << dir;
    auto m = Model::load(dir);
    ASSERT_TRUE(m.ok()) << m.status().message();
    Weights& w = (*m)->weights;
    bind_numerics(w, Numerics::kFast);
    int tiled = 0;
    std::mt19937 rng(5);
    for_each_matrix(w, [&](const char*, const std::string& name, const MatView& v) {
      if (!v.tiles) return;
      ++tiled;
      for (int64_t n_tok : {int64_t(1), int64_t(3), int64_t(17)}) {
        std::vector<float> x(size_t(n_tok * v.cols));
        for (auto& e : x) e = std::normal_distribution<float>(0.f, 1.f)(rng);
        std::vector<float> got(size_t(n_tok * v.rows)), want(got.size());
        v.kernels->for_tokens(n_tok).rows(x.data(), n_tok, v.cols, v, 0, v.rows, got.data(),
                                          v.rows);
        MatView plain = v;
        plain.tiles = nullptr;
        q4_int8_gemm_rows_ref(x.data(), n_tok, v.cols, plain, 0, v.rows, want.data(), v.rows,
                              v.kernels->for_tokens(n_tok).rows == &q4_int8_gemm_fine_rows ? 2 : 1);
        ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0)
            << fx << " " << name << " tokens " << n_tok;
      }
    });
    std::printf("[quant tiles] %s: %d tiled views equal their twin\n", fx, tiled);
    EXPECT_GT(tiled, 0) << fx;
  }
}

// The original layout's fused w13 splits into interleaved halves (gate rows even, up rows odd),
// which never join while they have tiles: their SwiGLU runs two products into [gate | up] and
// must read them so (it once read them as interleaved pairs: NVFP4 experts with tiles gave
// another model).
TEST(QuantTiles, InterleavedHalvesWithTilesReadTheirOwnLayout) {
  if (!q4_int8_tiles_enabled()) GTEST_SKIP() << "no AVX512-VNNI int8 gemm";
  const std::string dir = fixture_dir("quant_nvfp4") + "/model";
  if (!std::filesystem::exists(dir + "/config.json")) GTEST_SKIP() << "no " << dir;
  auto m = Model::load(dir);
  ASSERT_TRUE(m.ok()) << m.status().message();
  Weights& w = (*m)->weights;
  bind_numerics(w, Numerics::kFast);
  int checked = 0;
  std::mt19937 rng(7);
  for (const LayerWeights& L : w.layers)
    for (const SwiGluWeights& e : L.moe.routed) {
      if (e.gate.format != WeightFormat::kNvfp4) continue;
      MatView whole;
      bool il = false;
      ASSERT_TRUE(join_halves(e.gate, e.up, &whole, &il));
      ASSERT_TRUE(il);
      ASSERT_NE(e.gate.tiles, nullptr);
      const int64_t H = e.gate.cols, W = e.gate.rows, T = 3;
      std::vector<float> x(size_t(T * H)), gu(size_t(T * 2 * W)), got(size_t(T * H)), want(got);
      for (auto& v : x) v = std::normal_distribution<float>(0.f, 1.f)(rng);
      swiglu(e, x.data(), T, H, W, gu.data(), nullptr, 0, got.data(), nullptr);
      SwiGluWeights plain = e;  // no tiles: the halves join, gu interleaved
      for (MatView* v : {&plain.gate, &plain.up, &plain.down}) {
        v->tiles = nullptr;
        ASSERT_TRUE(bind_kernels(*v, Numerics::kFast));
      }
      swiglu(plain, x.data(), T, H, W, gu.data(), nullptr, 0, want.data(), nullptr);
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-4f * (1.f + std::fabs(want[i]))) << i;
      ++checked;
    }
  EXPECT_GT(checked, 0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, QuantParity, ::testing::ValuesIn(kFixtures),
                         [](const auto& i) { return i.param; });

}  // namespace
}  // namespace inkling
