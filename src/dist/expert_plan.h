// Expert parallelism without MPI: which rank owns which routed expert, what each rank holds
// (the plan `inspect --expert-parallel N` prints) and a model folder's fingerprint, which every
// rank compares before it serves experts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "inkling/engine.h"
#include "inkling/status.h"

namespace inkling::dist {

// Expert e of every MoE layer lives on rank e mod n_ranks: each rank owns E/n (+1) experts of
// every layer, so a layer's work splits evenly whatever the routing.
inline int expert_owner(int e, int n_ranks) {
  return e % n_ranks;
}

// What one rank maps and touches. Rank 0 runs everything but the routed experts of the other
// ranks (attention, routers, shared experts, dense MLPs, embed, head, MTP, KV caches, sampling);
// the others hold only their routed experts.
struct RankPlan {
  int rank = 0;
  int experts_per_layer_min = 0, experts_per_layer_max = 0;  // owned routed experts per layer
  uint64_t expert_bytes = 0;                                 // their stored bytes, all layers
  uint64_t replicated_bytes = 0;  // non-expert weights this rank holds (rank 0 only)
  uint64_t total() const { return expert_bytes + replicated_bytes; }
};

// Per rank for n_ranks ranks, from the loaded model's storage table. Every expert of a layer
// has the same format and size, so a rank's expert bytes are its share of the routed total.
std::vector<RankPlan> plan_ranks(const ModelInfo& info, int n_ranks);

// Bytes per token exchanged per MoE layer (f32 rows out and f32 expert outputs back) at n_ranks,
// for the documentation and `inspect`: rows sent to at most min(k, n-1) owners, k * (n-1)/n of
// the outputs come back on average.
struct ExchangeCost {
  double bytes_out = 0, bytes_back = 0, messages = 0;  // per token per MoE layer, expected
};
ExchangeCost exchange_cost(int hidden, int n_routed, int top_k, int n_ranks);

// FNV-1a over config.json's bytes and every tensor's name, dtype and shape: equal folders give
// equal fingerprints; another model, another quantization or a missing shard gives another.
Result<uint64_t> model_fingerprint(const std::string& model_dir);

}  // namespace inkling::dist
