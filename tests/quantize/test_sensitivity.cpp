// The `auto` recipe's costs (quantize/sensitivity.h) on the tiny original-layout fixture: a
// unit's measured KL equals the KL of a model written with that unit alone quantized and run by
// the engine (the swap into the running model is exactly what the writer writes and the loader
// binds), fewer bits cost more, the measurement is deterministic and leaves the model as it was,
// and the table round-trips through its file with another model's or group size's refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "inkling/engine.h"
#include "inkling/quantize.h"
#include "quantize/quantize_sources.h"
#include "quantize/sensitivity.h"

namespace inkling::quant {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kSensModel = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/full/og";

std::string sens_tmp(const std::string& name) {
  const fs::path p =
      fs::temp_directory_path() / ("inkling_sens_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  return p.string();
}

std::vector<int32_t> sens_ids(int64_t n, int64_t vocab) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  uint32_t x = 12345;
  for (auto& id : ids) x = x * 1664525u + 1013904223u, id = int32_t((x >> 8) % uint32_t(vocab));
  return ids;
}

// Mean KL(p || q) over every position of every window, both models run by the engine (fast).
double engine_kl(const std::string& p_dir, const std::string& q_dir,
                 const std::vector<int32_t>& ids, int64_t window) {
  EngineOptions eo;
  eo.numerics = Numerics::kFast;
  eo.n_threads = 2;
  auto p = Engine::load(p_dir, eo), q = Engine::load(q_dir, eo);
  EXPECT_TRUE(p.ok() && q.ok());
  const int64_t V = p.value()->info().unpadded_vocab;
  double sum = 0;
  int64_t n = 0;
  for (size_t at = 0; at + size_t(window) <= ids.size(); at += size_t(window)) {
    std::span<const int32_t> w(ids.data() + at, size_t(window));
    auto lp = p.value()->new_session()->prefill_all_logits(w);
    auto lq = q.value()->new_session()->prefill_all_logits(w);
    EXPECT_TRUE(lp.ok() && lq.ok());
    for (int64_t i = 0; i < window; ++i) {
      const float* a = lp->data() + i * V;
      const float* b = lq->data() + i * V;
      double ma = a[0], mb = b[0], sa = 0, sb = 0;
      for (int64_t v = 0; v < V; ++v)
        ma = std::max(ma, double(a[v])), mb = std::max(mb, double(b[v]));
      for (int64_t v = 0; v < V; ++v) sa += std::exp(a[v] - ma), sb += std::exp(b[v] - mb);
      const double la = ma + std::log(sa), lb = mb + std::log(sb);
      for (int64_t v = 0; v < V; ++v) sum += std::exp(a[v] - la) * ((a[v] - la) - (b[v] - lb));
      ++n;
    }
  }
  return sum / double(n);
}

class Sensitivity : public ::testing::Test {
 protected:
  void SetUp() override {
    auto src = Source::open(kSensModel);
    ASSERT_TRUE(src.ok()) << src.status().message();
    src_ = std::move(src).value();
    PlanOptions po;
    po.recipe = find_recipe("auto");
    po.bits = 4, po.group = 32;
    auto plan = make_plan(src_->config, po);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    plan_ = std::move(plan).value();
    units_ = auto_units(plan_);
    // q4/g128: wider than the fixture's rows of 64, so no unit takes it.
    opts_.specs = {QuantSpec::affine(2, 32), QuantSpec::affine(8, 32), QuantSpec::affine(4, 128)};
    opts_.window = 48;
    opts_.max_tokens = 96;
    opts_.threads = 2;
    opts_.ids = sens_ids(96, src_->config.unpadded_vocab);
  }
  std::unique_ptr<Source> src_;
  Plan plan_;
  std::vector<AutoUnit> units_;
  SensitivityOptions opts_;
};

TEST_F(Sensitivity, MeasuredCostIsTheWrittenModelsKl) {
  ASSERT_GE(units_.size(), 5u);
  auto t = measure_sensitivity(*src_, plan_, units_, opts_);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->rows.size(), units_.size());
  EXPECT_EQ(t->tokens, 96);
  EXPECT_EQ(t->windows, 2);
  for (size_t u = 0; u < units_.size(); ++u) {
    const auto& r = t->rows[u];
    EXPECT_GT(r.kl[0], r.kl[1]) << r.unit << ": 2 bits cost more than 8";
    EXPECT_GE(r.kl[1], 0) << r.unit;
    EXPECT_FALSE(unit_takes(plan_, units_[u], opts_.specs[2])) << r.unit;
    EXPECT_TRUE(std::isnan(r.kl[2])) << r.unit << ": a spec its shapes do not take";
  }
  // The same again: deterministic, and the first run put every view back.
  auto again = measure_sensitivity(*src_, plan_, units_, opts_);
  ASSERT_TRUE(again.ok());
  for (size_t u = 0; u < units_.size(); ++u)
    for (size_t k = 0; k < 2; ++k) EXPECT_EQ(t->rows[u].kl[k], again->rows[u].kl[k]);

  // Units of several kinds, each written alone at 2 bits and run by the engine.
  for (const char* kind : {"embed", "head", "attention.1", "experts.", "dense."}) {
    const AutoUnit* unit = nullptr;
    for (const AutoUnit& u : units_)
      if (u.key.rfind(kind, 0) == 0) unit = unit ? unit : &u;
    ASSERT_NE(unit, nullptr) << kind;
    QuantizeOptions qo;
    qo.recipe = "uniform";
    qo.bits = 2;
    qo.group_size = 32;
    qo.overrides = {"embed=off", "head=off",    "attention=off",
                    "dense=off", "experts=off", "shared=off"};
    for (size_t i : unit->items)
      qo.overrides.push_back(std::get<Module>(plan_.items[i]).path + "=2");
    const std::string dst = sens_tmp(unit->key);
    auto w = quantize_model(kSensModel, dst, qo);
    ASSERT_TRUE(w.ok()) << w.status().message();
    int quantized = 0;
    for (const auto& m : w->modules) quantized += m.storage != "float";
    EXPECT_EQ(quantized, int(unit->items.size())) << unit->key;
    const double written = engine_kl(kSensModel, dst, opts_.ids, opts_.window);
    const double measured = t->find(unit->key)->kl[0];
    EXPECT_NEAR(measured, written, 1e-6 + 1e-4 * written) << unit->key;
    EXPECT_GT(written, 0) << unit->key;
    fs::remove_all(dst);
  }
}

TEST_F(Sensitivity, TableRoundTripsAndAnotherModelsIsRefused) {
  opts_.specs = {QuantSpec::affine(3, 32), QuantSpec::affine(4, 128)};
  opts_.max_tokens = 48;
  auto t = measure_sensitivity(*src_, plan_, units_, opts_);
  ASSERT_TRUE(t.ok()) << t.status().message();
  const std::string path = sens_tmp("table.json");
  ASSERT_TRUE(save_sensitivity(t.value(), path).ok());
  auto back = load_sensitivity(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->specs, t->specs);
  ASSERT_EQ(back->rows.size(), t->rows.size());
  for (size_t i = 0; i < t->rows.size(); ++i) {
    EXPECT_EQ(back->rows[i].unit, t->rows[i].unit);
    EXPECT_EQ(back->rows[i].kl[0], t->rows[i].kl[0]);  // JSON numbers round-trip doubles
    EXPECT_TRUE(std::isnan(back->rows[i].kl[1]));      // null: not taken
  }
  EXPECT_TRUE(check_sensitivity(back.value(), units_, path).ok());
  SensitivityTable other = back.value();
  other.rows[1].unit = "experts.99";
  auto s = check_sensitivity(other, units_, path);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr(t->rows[1].unit));
  std::vector<AutoUnit> more = units_;
  more.push_back({"experts.77", Group::kExperts, 77, {}});
  s = check_sensitivity(back.value(), more, path);
  EXPECT_THAT(s.message(), HasSubstr("experts.77"));
  // Damaged files: one error naming the file.
  for (const char* text : {"", "[1,2]", R"({"format": "x"})",
                           R"({"format": "inkling-sensitivity", "model_type": "inkling",
                               "specs": ["q3/g32"], "kl_nats_per_token": {"embed": [-1]}})",
                           R"({"format": "inkling-sensitivity", "model_type": "inkling",
                               "specs": ["q3/g48"], "kl_nats_per_token": {"embed": [0.1]}})",
                           R"({"format": "inkling-sensitivity", "model_type": "inkling",
                               "specs": ["q3/g32", "q4/g64"], "kl_nats_per_token": {"embed": [0.1]}})"}) {
    std::ofstream(path) << text;
    auto r = load_sensitivity(path);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_THAT(r.status().message(), HasSubstr(path)) << text;
  }
  fs::remove(path);
}

}  // namespace
}  // namespace inkling::quant

namespace inkling::quant {
namespace {

// Every unit of the Inkling 2 layouts (original and transformers names, looped core, MXFP8
// experts) finds its matrices in the running model and gets a finite cost.
TEST(SensitivityInkling2, EveryUnitIsMeasured) {
  for (const char* rel : {"inkling2_mxfp8/hf", "inkling2_mxfp8/tf", "inkling2_loop_q/hf",
                          "inkling2_loop_mlx/hf", "inkling2_loop_mlx/mlx"}) {
    const std::string dir = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/" + rel;
    auto src = Source::open(dir);
    ASSERT_TRUE(src.ok()) << rel << ": " << src.status().message();
    PlanOptions po;
    po.recipe = find_recipe("auto");
    po.bits = 4, po.group = 32;
    auto plan = make_plan(src.value()->config, po);
    ASSERT_TRUE(plan.ok()) << rel << ": " << plan.status().message();
    const std::vector<AutoUnit> units = auto_units(*plan);
    ASSERT_FALSE(units.empty()) << rel;
    SensitivityOptions o;
    o.specs = {QuantSpec::affine(2, 32)};
    o.window = 32;
    o.max_tokens = 32;
    o.threads = 2;
    o.ids = sens_ids(32, src.value()->config.unpadded_vocab);
    auto t = measure_sensitivity(*src.value(), *plan, units, o);
    ASSERT_TRUE(t.ok()) << rel << ": " << t.status().message();
    for (const auto& r : t->rows) {
      EXPECT_TRUE(std::isfinite(r.kl[0])) << rel << " " << r.unit;
      EXPECT_GE(r.kl[0], 0) << rel << " " << r.unit;
    }
    // The head (its view padded past the rows written) costs what the written model does, where
    // the rest of the written model is the source exactly (MXFP8 experts are exact in bf16; NVFP4
    // and MLX affine ones are not).
    if (std::string(rel).rfind("inkling2_mxfp8", 0) != 0) continue;
    QuantizeOptions qo;
    qo.bits = 2;
    qo.group_size = 32;
    qo.modules = "head";
    const std::string dst = sens_tmp("v2head");
    auto w = quantize_model(dir, dst, qo);
    ASSERT_TRUE(w.ok()) << rel << ": " << w.status().message();
    const double written = engine_kl(dir, dst, o.ids, o.window);
    EXPECT_NEAR(t->find("head")->kl[0], written, 1e-6 + 1e-4 * written) << rel;
    fs::remove_all(dst);
  }
}

}  // namespace
}  // namespace inkling::quant
