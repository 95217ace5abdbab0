// plan_ranks(), exchange_cost() and model_fingerprint() (see expert_plan.h).
#include "dist/expert_plan.h"

#include <algorithm>
#include <cmath>

#include "base/mapped_file.h"
#include "base/safetensors.h"

namespace inkling::dist {

std::vector<RankPlan> plan_ranks(const ModelInfo& info, int n_ranks) {
  uint64_t routed = 0, other = 0;
  for (const ModelInfo::Storage& s : info.storage)
    (s.group == "routed experts" ? routed : other) += s.bytes;
  other += info.copied_bytes;
  std::vector<RankPlan> plan(size_t(std::max(n_ranks, 1)));
  const int E = info.n_routed;
  for (int r = 0; r < int(plan.size()); ++r) {
    RankPlan& p = plan[size_t(r)];
    p.rank = r;
    int owned = 0;
    for (int e = 0; e < E; ++e) owned += expert_owner(e, int(plan.size())) == r;
    p.experts_per_layer_min = p.experts_per_layer_max = owned;
    p.expert_bytes = E > 0 ? uint64_t(double(routed) * owned / E) : 0;
    p.replicated_bytes = r == 0 ? other : 0;
  }
  return plan;
}

ExchangeCost exchange_cost(int hidden, int n_routed, int top_k, int n_ranks) {
  ExchangeCost c;
  if (n_ranks < 2 || n_routed <= 0) return c;
  const double remote = double(n_ranks - 1) / n_ranks;  // share of slots owned elsewhere
  // Expected number of other ranks that own at least one of a token's k experts (uniform).
  const double per_rank_miss = std::pow(1.0 - 1.0 / n_ranks, top_k);
  const double owners = (n_ranks - 1) * (1.0 - per_rank_miss);
  c.bytes_out = owners * (hidden * 4.0 + top_k * 4.0 + 16.0);
  c.bytes_back = top_k * remote * hidden * 4.0;
  c.messages = 2 * owners;
  return c;
}

Result<uint64_t> model_fingerprint(const std::string& dir) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const std::string& s) {
    for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;  // separator
  };
  auto cfg = read_text_file(dir + "/config.json");
  if (!cfg.ok()) return cfg.status().with_context("[expert-parallel] ");
  mix(cfg.value());
  auto store = TensorStore::open_dir(dir);
  if (!store.ok()) return store.status().with_context("[expert-parallel] ");
  for (const auto& [name, t] : store->all()) {
    mix(name);
    mix(dtype_name(t->dtype));
    mix(t->shape_str());
  }
  return h;
}

}  // namespace inkling::dist
