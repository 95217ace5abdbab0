// auto_units(), choose_options() (a multiple-choice knapsack by dynamic programming) and
// apply_choice().
#include "quantize/auto_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

namespace inkling::quant {

std::vector<AutoUnit> auto_units(const Plan& plan) {
  std::vector<AutoUnit> units;
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < plan.items.size(); ++i) {
    const Module* m = std::get_if<Module>(&plan.items[i]);
    if (!m || !m->spec.quantized || m->group == Group::kMtp) continue;
    const bool layered = m->group != Group::kEmbed && m->group != Group::kHead && m->layer >= 0;
    const std::string key =
        std::string(group_key(m->group)) + (layered ? "." + std::to_string(m->layer) : "");
    auto [it, fresh] = at.emplace(key, units.size());
    if (fresh) units.push_back({key, m->group, layered ? m->layer : -1, {}});
    units[it->second].items.push_back(i);
  }
  return units;
}

uint64_t unit_bytes(const Plan& plan, const AutoUnit& u, const QuantSpec& spec) {
  uint64_t n = 0;
  for (size_t i : u.items) {
    Module m = std::get<Module>(plan.items[i]);
    m.spec = spec;
    n += module_bytes(m, m.float_dtype);
  }
  return n;
}

namespace {

std::string gib(uint64_t b) {
  char s[64];
  const bool big = b >= (1ull << 30);
  std::snprintf(s, sizeof s, "%.3f %s (%llu bytes)",
                double(b) / double(big ? 1ull << 30 : 1ull << 20), big ? "GiB" : "MiB",
                static_cast<unsigned long long>(b));
  return s;
}

}  // namespace

Result<AutoChoice> choose_options(const std::vector<std::vector<AutoOption>>& options,
                                  uint64_t budget, int64_t resolution) {
  uint64_t smallest = 0;
  for (const auto& opts : options) {
    uint64_t m = std::numeric_limits<uint64_t>::max();
    for (const AutoOption& o : opts) m = std::min(m, o.bytes);
    smallest += m;
  }
  if (smallest > budget)
    return Status::error("the budget leaves " + gib(budget) +
                         " for the weights; the smallest plan of these widths needs " +
                         gib(smallest));
  // The DP runs over the bytes above the smallest plan, in steps of `step` bytes with each
  // option's extra rounded up, so the smallest plan always fits and every choice on the grid
  // fits exactly.
  const size_t U = options.size();
  std::vector<uint64_t> least(U);
  for (size_t u = 0; u < U; ++u) {
    least[u] = options[u][0].bytes;
    for (const AutoOption& o : options[u]) least[u] = std::min(least[u], o.bytes);
  }
  const uint64_t room = budget - smallest;
  const uint64_t step = std::max<uint64_t>(
      1, (room + uint64_t(resolution) - 1) / uint64_t(std::max<int64_t>(resolution, 1)));
  const size_t cap = size_t(room / step);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  auto steps = [&](size_t u, size_t k) {
    return (options[u][k].bytes - least[u] + step - 1) / step;
  };
  // best[c]: least cost of the units so far within c steps; pick[u][c]: unit u's option there.
  std::vector<double> best(cap + 1, 0.0), next(cap + 1);
  std::vector<std::vector<uint8_t>> pick(U, std::vector<uint8_t>(cap + 1, 0));
  for (size_t u = 0; u < U; ++u) {
    std::fill(next.begin(), next.end(), kInf);
    for (size_t k = 0; k < options[u].size(); ++k) {
      const uint64_t w = steps(u, k);
      if (w > cap) continue;
      const double cost = options[u][k].cost;
      for (size_t c = size_t(w); c <= cap; ++c) {
        const double v = best[c - size_t(w)] + cost;
        if (v < next[c]) next[c] = v, pick[u][c] = uint8_t(k);
      }
    }
    best.swap(next);
  }
  AutoChoice ch;
  ch.pick.assign(U, 0);
  size_t c = cap;
  for (size_t u = U; u-- > 0;) {
    ch.pick[u] = pick[u][c];
    c -= size_t(steps(u, ch.pick[u]));
  }
  auto total = [&](AutoChoice& x) {
    x.bytes = 0, x.cost = 0;
    for (size_t u = 0; u < U; ++u)
      x.bytes += options[u][x.pick[u]].bytes, x.cost += options[u][x.pick[u]].cost;
  };
  total(ch);
  // The rounding left up to U steps unused: spend them on the single changes that save the
  // most cost per byte while they fit.
  for (;;) {
    size_t bu = U, bk = 0;
    double gain_per_byte = 0;
    for (size_t u = 0; u < U; ++u) {
      const AutoOption& now = options[u][ch.pick[u]];
      for (size_t k = 0; k < options[u].size(); ++k) {
        const AutoOption& o = options[u][k];
        if (o.cost >= now.cost || ch.bytes - now.bytes + o.bytes > budget) continue;
        const double g =
            (now.cost - o.cost) /
            double(std::max<uint64_t>(1, o.bytes > now.bytes ? o.bytes - now.bytes : 1));
        if (g > gain_per_byte) gain_per_byte = g, bu = u, bk = k;
      }
    }
    if (bu == U) break;
    ch.pick[bu] = bk;
    total(ch);
  }
  // Never worse than one option index for every unit (uniform widths) where that fits.
  for (size_t k = 0;; ++k) {
    bool all = true;
    AutoChoice same;
    same.pick.assign(U, k);
    for (size_t u = 0; u < U; ++u) all &= k < options[u].size();
    if (!all) break;
    total(same);
    if (same.bytes <= budget && same.cost < ch.cost) ch = same;
  }
  return ch;
}

void apply_choice(Plan& plan, const std::vector<AutoUnit>& units,
                  const std::vector<std::vector<AutoOption>>& options, const AutoChoice& choice) {
  std::map<std::string, double> params;  // spec -> parameters
  std::map<std::string, QuantSpec> specs;
  for (size_t u = 0; u < units.size(); ++u) {
    const QuantSpec& spec = options[u][choice.pick[u]].spec;
    for (size_t i : units[u].items) {
      Module& m = std::get<Module>(plan.items[i]);
      m.spec = spec;
      if (spec.quantized) {
        params[spec.str()] += double(m.total_rows()) * double(m.cols);
        specs[spec.str()] = spec;
      }
    }
  }
  double most = -1;
  for (const auto& [name, n] : params)
    if (n > most) most = n, plan.main = specs[name];
}

}  // namespace inkling::quant
