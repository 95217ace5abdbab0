// The canonical weights as a struct of named views, bound once at load from the sanitized
// tensor map with every shape checked against the config. Large matrices are views into the
// mapped checkpoint in their stored format (f32/bf16/f16, MLX affine, NVFP4: never dequantized
// copies); small vectors (norms, convs, biases) are f32 copies.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "inkling/numerics.h"
#include "model/config.h"
#include "model/inkling2/weights.h"
#include "model/layouts.h"
#include "model/moe_weights.h"
#include "model/quant_config.h"
#include "ops/weight_view.h"

namespace inkling {

struct AttentionWeights {
  MatView q, k, v, r, o;        // [nH*hd, H], [nKV*hd, H] x2, [nH*d_rel, H], [H, nH*hd]
  std::vector<float> q_norm;    // [hd]
  std::vector<float> k_norm;    // [hd]
  std::vector<float> k_conv;    // [nKV*hd, K]
  std::vector<float> v_conv;    // [nKV*hd, K]
  std::vector<float> rel_proj;  // [d_rel, R]
};

struct LayerWeights {
  std::vector<float> attn_norm, mlp_norm;  // [H]
  std::vector<float> attn_conv, mlp_conv;  // [H, K]
  AttentionWeights attn;
  SwiGluWeights dense;    // dense layers
  float dense_scale = 1;  // dense mlp.global_scale
  MoeWeights moe;         // MoE layers
};

// One MTP draft depth (spec/inkling-mtp.md): its own norms, the 2H -> H input projection and an
// ordinary decoder layer with a dense MLP. It shares the trunk's embed, embed_norm and lm_head.
struct MtpDepthWeights {
  std::vector<float> embed_norm, hidden_norm;  // [H]
  MatView input_proj;                          // [H, 2H]
  LayerWeights block;
};

struct Weights {
  MatView embed;                  // [V, H]
  MatView lm_head;                // [V, H]
  std::vector<float> embed_norm;  // [H]
  std::vector<float> final_norm;  // [H]
  std::vector<LayerWeights> layers;
  std::vector<MtpDepthWeights> mtp;  // empty when the checkpoint has no MTP tensors
  Inkling2Weights v2;                // family kInkling2: its layers (`layers` stays empty)
  std::vector<std::string> unused;   // canonical tensors nothing bound
  // Storage of the bound matrices by format ("BF16", "affine q4/g64", "nvfp4"): checkpoint
  // tensors (codes + sidecars counted once) and their bytes in the mapping.
  struct Storage {
    int64_t tensors = 0;
    uint64_t bytes = 0;
  };
  std::map<std::string, Storage> storage;
  // Load-time tiles of the matrices whose fast kernels take them (model/weight_tiles.h): one
  // allocation the views' `tiles` point into; null in exact numerics.
  std::shared_ptr<uint8_t> tile_arena;
  uint64_t tile_bytes = 0;
  // Mapped checkpoint bytes whose page tables bind_numerics() made at load
  // (model/weight_residency.h; 0: skipped).
  uint64_t resident_bytes = 0;

  // The MoE branch of physical layer `l` in either family (Inkling: null for a dense layer or a
  // layer out of range; Inkling 2: every layer, each visit of a looped layer shares it).
  MoeWeights* moe_at(int l) {
    if (l < 0) return nullptr;
    if (!v2.layers.empty())
      return size_t(l) < v2.layers.size() ? &v2.layers[size_t(l)].moe : nullptr;
    if (size_t(l) >= layers.size() || layers[size_t(l)].moe.routed.empty()) return nullptr;
    return &layers[size_t(l)].moe;
  }
  const MoeWeights* moe_at(int l) const { return const_cast<Weights*>(this)->moe_at(l); }
  int n_layers() const { return int(v2.layers.empty() ? layers.size() : v2.layers.size()); }
};

// Calls f(group, name, view) for every matrix of w (Weights or const Weights), in a fixed order:
// `group` is the module group inspect and bench report ("embed", "lm_head", "attention",
// "dense mlp", "router", "routed experts", "shared experts", "mtp" for every MTP depth matrix),
// `name` the canonical tensor name (experts: "model.layers.3.mlp.experts.17.gate_proj"). Unbound
// views (data null) are skipped.
template <typename W, typename F>
void for_each_matrix(W& w, F&& f) {
  auto one = [&](const char* group, const std::string& name, auto& v) {
    if (v.data) f(group, name, v);
  };
  auto glu = [&](const char* group, const std::string& p, auto& g) {
    one(group, p + "gate_proj", g.gate), one(group, p + "up_proj", g.up);
    one(group, p + "down_proj", g.down);
  };
  one("embed", "model.embed_tokens.weight", w.embed);
  one("lm_head", "lm_head.weight", w.lm_head);
  auto layer = [&](const std::string& p, auto& l, bool mtp) {
    auto g = [&](const char* group) { return mtp ? "mtp" : group; };
    one(g("attention"), p + "self_attn.q_proj.weight", l.attn.q);
    one(g("attention"), p + "self_attn.k_proj.weight", l.attn.k);
    one(g("attention"), p + "self_attn.v_proj.weight", l.attn.v);
    one(g("attention"), p + "self_attn.r_proj.weight", l.attn.r);
    one(g("attention"), p + "self_attn.o_proj.weight", l.attn.o);
    glu(g("dense mlp"), p + "mlp.", l.dense);
    one(g("router"), p + "mlp.gate.weight", l.moe.router);
    for (size_t e = 0; e < l.moe.routed.size(); ++e)
      glu(g("routed experts"), p + "mlp.experts." + std::to_string(e) + ".", l.moe.routed[e]);
    for (size_t e = 0; e < l.moe.shared.size(); ++e)
      glu(g("shared experts"), p + "mlp.shared_experts." + std::to_string(e) + ".",
          l.moe.shared[e]);
  };
  for (size_t i = 0; i < w.layers.size(); ++i)
    layer("model.layers." + std::to_string(i) + ".", w.layers[i], false);
  for_each_inkling2_matrix(w.v2, one);
  // MTP depths: one group "mtp" (canonical names "mtp.<d>.", model/layouts.h).
  for (size_t d = 0; d < w.mtp.size(); ++d) {
    const std::string p = "mtp." + std::to_string(d) + ".";
    one("mtp", p + "input_proj.weight", w.mtp[d].input_proj);
    layer(p, w.mtp[d].block, true);
  }
}

// `quant` says what config.json / hf_quant_config.json state about quantization; the sidecar
// tensors (scales, biases, scale2) and shapes decide the rest (see docs/quantization.md).
Result<Weights> bind_weights(const ModelConfig& c, const TensorMap& tensors,
                             const QuantConfig& quant);
Result<Weights> bind_weights(const ModelConfig& c, const TensorMap& tensors);

// Binds every matrix's kernels again for numerics mode `n` (include/inkling/numerics.h). The
// routers stay exact in both modes (their logits pick the experts: DESIGN rule 12).
void bind_numerics(Weights& w, Numerics n);

}  // namespace inkling
