// Inkling 2's weights per physical layer (spec/inkling2.md section 7): what its forward reads
// beyond the embedding, head and final norm that model/weights.h's Weights holds for every
// family. Large matrices are views into the mapped checkpoint; small vectors are f32 copies.
#pragma once

#include <string>
#include <vector>

#include "model/moe_weights.h"
#include "ops/weight_view.h"

namespace inkling {

// A message gate of the looped core (passes >= 2): (1 - tanh(F g)) h + tanh(G g) m with
// g = down(concat(rms(h), rms(m))).
struct Inkling2Gate {
  MatView down;    // [rank, 2H] down_proj
  MatView forget;  // [H, rank] forget_gate_proj (F)
  MatView gain;    // [H, rank] message_gate_proj (G)
};

struct Inkling2Layer {
  bool sliding = true;
  // Block attention-residual queries (f32): the attention input's ([1 or 3, H]; empty on layer 0)
  // and the MoE input's ([H]).
  std::vector<float> attn_query, mlp_query;
  // Sliding layers: input_layernorm; full layers: q/k/v_input_layernorm. [H] each.
  std::vector<float> in_norm, q_norm, k_norm, v_norm, mlp_norm;
  std::vector<float> attn_conv, mlp_conv;  // [H, K] post-attention / post-MoE static convs
  MatView q, k, v, r, sink, gate, o;       // [nH hd, H], [nKV hd, H] x2, [nH d_rel, H], [nH, H],
                                           // [nH hd, H], [H, nH hd]
  std::vector<float> q_scale, r_scale;     // [nH, hd], [nH, d_rel] scaled-L2-clip scales
  std::vector<float> rel_proj;             // [d_rel, R]
  // Sliding: static K/V convs [nKV hd, K] (tap K-1 = current token). Full: dynamic convs, static
  // taps [K, nKV hd] (row 0 = current token) plus per-token taps k_dyn / v_dyn [nKV K, H].
  std::vector<float> k_conv, v_conv;
  MatView k_dyn, v_dyn;
  MoeWeights moe;
  Inkling2Gate gates[4];  // loop layers: q, k, v, mlp message gates
};

struct Inkling2Weights {
  std::vector<Inkling2Layer> layers;
  std::vector<float> final_query;    // [H] final attention residual
  std::vector<float> message_query;  // [core layers, 4, H]: q, k, v, mlp (looped models)
};

// Calls one(group, name, view) for every bound matrix of w, as for_each_matrix does.
template <typename W, typename F>
void for_each_inkling2_matrix(W& w, F&& one) {
  for (size_t i = 0; i < w.layers.size(); ++i) {
    auto& l = w.layers[i];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    for (auto [name, v] : {std::pair<const char*, decltype(&l.q)>{"self_attn.q_proj", &l.q},
                           {"self_attn.k_proj", &l.k},
                           {"self_attn.v_proj", &l.v},
                           {"self_attn.relative_position_bias", &l.r},
                           {"self_attn.sink_proj", &l.sink},
                           {"self_attn.o_proj.gate_proj", &l.gate},
                           {"self_attn.o_proj", &l.o},
                           {"self_attn.k_proj.sconv.weight_proj", &l.k_dyn},
                           {"self_attn.v_proj.sconv.weight_proj", &l.v_dyn}})
      one("attention", p + name + ".weight", *v);
    static const char* kGates[4] = {"q", "k", "v", "mlp"};
    for (int g = 0; g < 4; ++g) {
      const std::string gp = p + kGates[g] + "_message_gate.";
      one("message gates", gp + "down_proj.weight", l.gates[g].down);
      one("message gates", gp + "forget_gate_proj.weight", l.gates[g].forget);
      one("message gates", gp + "message_gate_proj.weight", l.gates[g].gain);
    }
    one("router", p + "mlp.gate.weight", l.moe.router);
    for (size_t e = 0; e < l.moe.routed.size(); ++e) {
      const std::string ep = p + "mlp.experts." + std::to_string(e) + ".";
      one("routed experts", ep + "gate_proj", l.moe.routed[e].gate);
      one("routed experts", ep + "up_proj", l.moe.routed[e].up);
      one("routed experts", ep + "down_proj", l.moe.routed[e].down);
    }
  }
}

}  // namespace inkling
