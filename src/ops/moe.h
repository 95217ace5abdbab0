// MoE routing (the `route` step): sigmoid scores plus a correction bias choose the top-k routed
// experts; the weights are a softmax of log-sigmoids over the k chosen raw logits plus the S
// shared-expert logits, times route_scale * global_scale. Bias selects, it never weighs.
#pragma once

#include <cstdint>

namespace inkling {

struct RouteParams {
  int n_routed = 0;        // E
  int n_shared = 0;        // S (router rows E..E+S-1)
  int top_k = 0;           // k
  float route_scale = 1;   // route_scale
  float global_scale = 1;  // router global_scale
  // Inkling 2: the weights are the k chosen sigmoid scores over their sum (+ 1e-20), times
  // route_scale (no shared experts, no log-sigmoid softmax).
  bool sum_normalize = false;
};

// logits: [E+S]; bias: [E]. Writes idx[k] (ascending expert id), weight[k] (matching idx)
// and gamma[S] (shared-expert weights).
void route(const float* logits, const float* bias, const RouteParams& p, int32_t* idx,
           float* weight, float* gamma);

}  // namespace inkling
