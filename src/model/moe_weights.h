// The weights of a SwiGLU block and of an MoE branch (router, routed and shared experts): what
// every model family's MoE layers bind and model/moe.cpp runs.
#pragma once

#include <vector>

#include "ops/weight_view.h"

namespace inkling {

class ExpertExecutor;

struct SwiGluWeights {
  MatView gate, up, down;  // [W, H], [W, H], [H, W]
  // Inkling 2's softcapped SwiGLU: (g_cap tanh(g / g_cap)) sigmoid(g) (u_cap tanh(u / u_cap));
  // 0 = Inkling's plain silu(g) u.
  float gate_cap = 0, up_cap = 0;
};

struct MoeWeights {
  MatView router;                     // [E+S, H]: routed rows, then the shared "sink" rows
  std::vector<float> router_bias;     // [E] e_score_correction_bias (selection only)
  float router_scale = 1;             // router global_scale
  std::vector<SwiGluWeights> routed;  // E experts, width I
  std::vector<SwiGluWeights> shared;  // S experts, width I
  // Where the routed experts run: null = here; else an expert-parallel executor (src/dist), set
  // by Engine::load from EngineOptions, with `layer` the trunk layer index it sends along.
  ExpertExecutor* executor = nullptr;
  int layer = -1;
};

}  // namespace inkling
