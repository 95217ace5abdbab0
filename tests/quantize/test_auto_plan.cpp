// The `auto` recipe's planner (quantize/auto_plan.h) on synthetic costs: the dynamic programme
// against brute force on small instances, the budget never exceeded, one error naming the
// smallest size when nothing fits, and plans from the real configs of Inkling-Small and Inkling 2
// Mini and Small (costs from the error model 4^-bits per parameter, scaled per group) that fit
// the budget of uniform 3-bit and cost less than it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "model/config.h"
#include "quantize/auto_plan.h"
#include "quantize/quantize_recipe.h"

namespace inkling::quant {
namespace {

using ::testing::HasSubstr;

double brute_force(const std::vector<std::vector<AutoOption>>& options, uint64_t budget,
                   size_t u = 0, uint64_t bytes = 0, double cost = 0) {
  if (bytes > budget) return INFINITY;
  if (u == options.size()) return cost;
  double best = INFINITY;
  for (const AutoOption& o : options[u])
    best = std::min(best, brute_force(options, budget, u + 1, bytes + o.bytes, cost + o.cost));
  return best;
}

TEST(AutoPlan, DynamicProgrammeFindsTheBruteForceOptimum) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t U = 1 + rng() % 5;
    std::vector<std::vector<AutoOption>> options(U);
    uint64_t lo = 0, hi = 0;
    for (auto& opts : options) {
      const size_t K = 1 + rng() % 4;
      uint64_t mn = UINT64_MAX, mx = 0;
      for (size_t k = 0; k < K; ++k) {
        AutoOption o;
        o.bytes = 1 + rng() % 500;
        o.cost = double(rng() % 1000) / 100.0;
        mn = std::min(mn, o.bytes), mx = std::max(mx, o.bytes);
        opts.push_back(o);
      }
      lo += mn, hi += mx;
    }
    for (uint64_t budget : {lo, (lo + hi) / 2, hi, lo + (hi - lo) / 5}) {
      auto ch = choose_options(options, budget);  // budget < resolution: steps of one byte
      ASSERT_TRUE(ch.ok()) << ch.status().message();
      EXPECT_LE(ch->bytes, budget);
      EXPECT_NEAR(ch->cost, brute_force(options, budget), 1e-9) << "trial " << trial;
      uint64_t bytes = 0;
      double cost = 0;
      for (size_t u = 0; u < U; ++u)
        bytes += options[u][ch->pick[u]].bytes, cost += options[u][ch->pick[u]].cost;
      EXPECT_EQ(bytes, ch->bytes);
      EXPECT_DOUBLE_EQ(cost, ch->cost);
    }
  }
}

TEST(AutoPlan, CoarseStepsNeverExceedTheBudget) {
  std::mt19937 rng(11);
  std::vector<std::vector<AutoOption>> options(40);
  uint64_t lo = 0;
  for (auto& opts : options) {
    uint64_t mn = UINT64_MAX;
    for (int b = 2; b <= 8; ++b) {
      const uint64_t bytes = uint64_t(b) * (1'000'000'000ull + rng() % 1'000'000'007ull);
      opts.push_back({QuantSpec::affine(b, 64), bytes, std::ldexp(1.0 + rng() % 5, -2 * b)});
      mn = std::min(mn, bytes);
    }
    lo += mn;
  }
  for (double f : {1.0, 1.3, 2.0, 3.7}) {
    const uint64_t budget = uint64_t(double(lo) * f);
    auto ch = choose_options(options, budget, 1000);
    ASSERT_TRUE(ch.ok()) << ch.status().message();
    EXPECT_LE(ch->bytes, budget);
    // A bigger budget never costs more.
    auto more = choose_options(options, budget + budget / 10, 1000);
    ASSERT_TRUE(more.ok());
    EXPECT_LE(more->cost, ch->cost);
  }
}

TEST(AutoPlan, NothingFitsIsOneErrorWithTheSmallestSize) {
  std::vector<std::vector<AutoOption>> options = {
      {{QuantSpec::affine(2, 64), 1000, 1.0}, {QuantSpec::affine(4, 64), 2000, 0.1}},
      {{QuantSpec::affine(2, 64), 500, 1.0}, {QuantSpec{}, 4000, 0.0}}};
  auto ch = choose_options(options, 1499);
  ASSERT_FALSE(ch.ok());
  EXPECT_THAT(ch.status().message(), HasSubstr("1500 bytes"));
  ch = choose_options(options, 1500);
  ASSERT_TRUE(ch.ok());
  EXPECT_EQ(ch->bytes, 1500u);
  ch = choose_options(options, 6000);
  ASSERT_TRUE(ch.ok());
  EXPECT_EQ(ch->pick, (std::vector<size_t>{1, 1}));
  EXPECT_DOUBLE_EQ(ch->cost, 0.1);
}

// Synthetic costs: parameters x 4^-bits (the MSE of rounding to 2^bits levels), with the
// embedding, head and attention 16x as sensitive per parameter as the experts (two bits).
double synthetic_cost(const Plan& plan, const AutoUnit& u, const QuantSpec& s) {
  if (!s.quantized) return 0;
  double params = 0;
  for (size_t i : u.items) {
    const Module& m = std::get<Module>(plan.items[i]);
    params += double(m.total_rows()) * double(m.cols);
  }
  const double w = u.group == Group::kExperts ? 1.0 : 16.0;
  return w * params * std::pow(4.0, -s.bits) * 1e-9;
}

void plan_real_config(const ModelConfig& c, const char* what) {
  PlanOptions po;
  po.recipe = find_recipe("auto");
  ASSERT_NE(po.recipe, nullptr);
  po.bits = 4, po.group = 64;
  auto plan = make_plan(c, po);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const std::vector<AutoUnit> units = auto_units(*plan);
  // Every quantized matrix but the MTP depths is in exactly one unit; routers in none.
  std::vector<int> seen(plan->items.size(), 0);
  for (const AutoUnit& u : units)
    for (size_t i : u.items) ++seen[i];
  for (size_t i = 0; i < plan->items.size(); ++i)
    if (const Module* m = std::get_if<Module>(&plan->items[i])) {
      const bool in = m->spec.quantized && m->group != Group::kMtp;
      EXPECT_EQ(seen[i], in ? 1 : 0) << what << ": " << m->path;
      if (m->group == Group::kRouter) {
        EXPECT_EQ(seen[i], 0);
      }
    }
  EXPECT_GT(units.size(), size_t(c.n_layers)) << what;
  std::vector<std::vector<AutoOption>> options(units.size());
  uint64_t uniform3 = 0;
  double uniform3_cost = 0;
  for (size_t u = 0; u < units.size(); ++u) {
    for (int b : {2, 3, 4, 5, 6, 8}) {
      const QuantSpec s = QuantSpec::affine(b, 64);
      options[u].push_back({s, unit_bytes(*plan, units[u], s), synthetic_cost(*plan, units[u], s)});
      if (b == 3) uniform3 += options[u].back().bytes, uniform3_cost += options[u].back().cost;
    }
    options[u].push_back({QuantSpec{}, unit_bytes(*plan, units[u], {}), 0.0});
  }
  auto ch = choose_options(options, uniform3);
  ASSERT_TRUE(ch.ok()) << what << ": " << ch.status().message();
  EXPECT_LE(ch->bytes, uniform3) << what;
  EXPECT_GT(double(ch->bytes), 0.99 * double(uniform3)) << what << ": the budget is used";
  EXPECT_LT(ch->cost, 0.95 * uniform3_cost) << what;
  std::printf("%s: %zu units, auto %.4g vs uniform 3-bit %.4g\n", what, units.size(), ch->cost,
              uniform3_cost);
  // The more sensitive groups get more bits than the experts.
  int attn_bits = 0, expert_bits = 0, na = 0, ne = 0;
  for (size_t u = 0; u < units.size(); ++u) {
    const QuantSpec& s = options[u][ch->pick[u]].spec;
    const int bits = s.quantized ? s.bits : 16;
    if (units[u].group == Group::kAttention) attn_bits += bits, ++na;
    if (units[u].group == Group::kExperts) expert_bits += bits, ++ne;
  }
  ASSERT_GT(na, 0);
  ASSERT_GT(ne, 0);
  EXPECT_GT(double(attn_bits) / na, double(expert_bits) / ne) << what;
  Plan applied = *plan;
  apply_choice(applied, units, options, ch.value());
  uint64_t total = 0;
  for (const AutoUnit& u : units)
    for (size_t i : u.items) {
      const Module& m = std::get<Module>(applied.items[i]);
      total += module_bytes(m, m.float_dtype);
    }
  EXPECT_EQ(total, ch->bytes) << what;
}

TEST(AutoPlan, RealConfigsFitUniformThreeBitsBudgetAtLowerCost) {
  auto small =
      load_config(std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/quantize/inkling_small");
  ASSERT_TRUE(small.ok()) << small.status().message();
  plan_real_config(small.value(), "Inkling-Small");
  auto mini = parse_config(
      R"({"model_type": "inkling2_loop", "text_config": {"model_type": "inkling2_loop_text"}})",
      "mini");
  ASSERT_TRUE(mini.ok()) << mini.status().message();
  plan_real_config(mini.value(), "Inkling 2 Mini");
  auto small2 = parse_config(R"({"model_type": "inkling2"})", "small2");
  ASSERT_TRUE(small2.ok()) << small2.status().message();
  plan_real_config(small2.value(), "Inkling 2 Small");
}

}  // namespace
}  // namespace inkling::quant
