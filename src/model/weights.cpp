// bind_weights(): looks up each canonical tensor, decides its storage (dense, MLX affine, NVFP4)
// from the sidecars, the shapes and the quantization config, checks dtype and shape against the
// config, erroring with the checkpoint's own name and shapes, then builds the views.
#include "model/weights.h"

#include "model/binder.h"
#include "model/weight_residency.h"
#include "model/weight_tiles.h"

namespace inkling {

namespace {
// Applies mlx-vlm's per-expert gate_scale / out_scale vectors ([E]; all ones except for NVFP4
// sources) by folding them into the experts' scale2: gate output * gate_scale, down output *
// out_scale. Only NVFP4 views carry a scale2, so other formats must have all-ones vectors.
void fold_expert_scales(Binder& b, const std::string& p, int64_t E, MoeWeights& m) {
  for (const char* which : {"mlp.experts.gate_scale", "mlp.experts.out_scale"}) {
    if (!b.has(p + which)) continue;
    const std::vector<float> v = b.vec(p + which, {E});
    for (size_t e = 0; e < v.size() && e < m.routed.size(); ++e) {
      if (v[e] == 1.f) continue;
      MatView& w = std::string(which).find("gate_scale") != std::string::npos ? m.routed[e].gate
                                                                              : m.routed[e].down;
      if (w.format != WeightFormat::kNvfp4)
        return b.fail("[load] " + p + which + ": per-expert scales other than 1 are only" +
                      " supported for NVFP4 experts");
      w.scale2 *= v[e];
    }
  }
}

// One decoder layer's weights under the canonical prefix `p` ("model.layers.3.").
LayerWeights bind_layer(Binder& b, const ModelConfig& c, const LayerSpec& s, const std::string& p) {
  const int64_t H = c.hidden, K = c.conv_k;
  LayerWeights L;
  const int64_t nh = s.n_heads, nkv = s.n_kv_heads, hd = s.head_dim;
  L.attn_norm = b.vec(p + "input_layernorm.weight", {H});
  L.mlp_norm = b.vec(p + "post_attention_layernorm.weight", {H});
  L.attn_conv = b.vec(p + "attn_sconv.conv1d.weight", {H, K});
  L.mlp_conv = b.vec(p + "mlp_sconv.conv1d.weight", {H, K});
  AttentionWeights& a = L.attn;
  const std::string qkvr = p + "self_attn.qkvr_proj.weight";
  if (!b.has(p + "self_attn.q_proj.weight") && b.has(qkvr)) {
    // mlx-vlm's fused projection: rows q, k, v, r stacked in that order.
    const int64_t rq = nh * hd, rk = nkv * hd, rr = nh * c.d_rel;
    const MatView f = b.mat(qkvr, rq + 2 * rk + rr, H);
    if (!b.status().ok()) return L;
    a.q = f.slice_rows(0, rq);
    a.k = f.slice_rows(rq, rk);
    a.v = f.slice_rows(rq + rk, rk);
    a.r = f.slice_rows(rq + 2 * rk, rr);
  } else {
    a.q = b.mat(p + "self_attn.q_proj.weight", nh * hd, H);
    a.k = b.mat(p + "self_attn.k_proj.weight", nkv * hd, H);
    a.v = b.mat(p + "self_attn.v_proj.weight", nkv * hd, H);
    a.r = b.mat(p + "self_attn.r_proj.weight", nh * c.d_rel, H);
  }
  a.o = b.mat(p + "self_attn.o_proj.weight", H, nh * hd);
  a.q_norm = b.vec(p + "self_attn.q_norm.weight", {hd});
  a.k_norm = b.vec(p + "self_attn.k_norm.weight", {hd});
  a.k_conv = b.vec(p + "self_attn.k_sconv.conv1d.weight", {nkv * hd, K});
  a.v_conv = b.vec(p + "self_attn.v_sconv.conv1d.weight", {nkv * hd, K});
  a.rel_proj = b.vec(p + "self_attn.rel_logits_proj.proj", {c.d_rel, s.rel_extent});
  if (s.dense) {
    const int64_t W = c.dense_width;
    L.dense = {b.mat(p + "mlp.gate_proj.weight", W, H), b.mat(p + "mlp.up_proj.weight", W, H),
               b.mat(p + "mlp.down_proj.weight", H, W)};
    L.dense_scale = b.scalar(p + "mlp.global_scale");
  } else {
    const int64_t E = c.n_routed, S = c.n_shared, I = c.moe_width;
    MoeWeights& m = L.moe;
    m.router = b.mat(p + "mlp.gate.weight", E + S, H);
    m.router_bias = b.vec(p + "mlp.gate.e_score_correction_bias", {E});
    m.router_scale = b.scalar(p + "mlp.gate.global_scale");
    auto g = b.matrices(p + "mlp.experts.gate_proj", E, I, H);
    auto u = b.matrices(p + "mlp.experts.up_proj", E, I, H);
    auto d = b.matrices(p + "mlp.experts.down_proj", E, H, I);
    for (size_t e = 0; e < g.size() && e < u.size() && e < d.size(); ++e)
      m.routed.push_back({g[e], u[e], d[e]});
    fold_expert_scales(b, p, E, m);
    if (S > 0) {
      auto sg = b.shared(p + "mlp.shared_experts.gate_proj", S, I, H, false);
      auto su = b.shared(p + "mlp.shared_experts.up_proj", S, I, H, false);
      auto sd = b.shared(p + "mlp.shared_experts.down_proj", S, H, I, true);
      for (size_t e = 0; e < sg.size() && e < su.size() && e < sd.size(); ++e)
        m.shared.push_back({sg[e], su[e], sd[e]});
    }
  }
  return L;
}

// The MTP depths (model/layouts.h: sanitize_mtp names them "mtp.<d>."). Bound only when the
// checkpoint has depth 0's input_proj: a config may declare depths whose tensors were dropped.
void bind_mtp(Binder& b, const ModelConfig& c, Weights* w) {
  if (c.mtp.depths.empty() || !b.has("mtp.0.input_proj.weight")) return;
  const int64_t H = c.hidden;
  for (size_t d = 0; d < c.mtp.depths.size() && b.status().ok(); ++d) {
    const std::string p = "mtp." + std::to_string(d) + ".";
    for (const char* own : {"embed_norm.weight", "hidden_norm.weight", "input_proj.weight"})
      if (!b.has(p + own))
        return b.fail("[load] missing tensor 'model.mtp.layers." + std::to_string(d) + "." + own +
                      "' (mtp_config declares " + std::to_string(c.mtp.depths.size()) + " depths)");
    MtpDepthWeights m;
    m.embed_norm = b.vec(p + "embed_norm.weight", {H});
    m.hidden_norm = b.vec(p + "hidden_norm.weight", {H});
    m.input_proj = b.mat(p + "input_proj.weight", H, 2 * H);
    m.block = bind_layer(b, c, c.mtp.depths[d], p);
    w->mtp.push_back(std::move(m));
  }
}

}  // namespace

Result<Weights> bind_weights(const ModelConfig& c, const TensorMap& tensors) {
  return bind_weights(c, tensors, QuantConfig{});
}

Result<Weights> bind_weights(const ModelConfig& c, const TensorMap& tensors,
                             const QuantConfig& quant) {
  Binder b(tensors, quant);
  Weights w;
  const int64_t H = c.hidden, V = c.vocab_size;
  w.embed = b.mat("model.embed_tokens.weight", V, H);
  w.lm_head = b.mat("lm_head.weight", V, H);
  w.embed_norm = b.vec("model.embed_norm.weight", {H});
  w.final_norm = b.vec("model.norm.weight", {H});
  for (int i = 0; i < c.n_layers && b.status().ok(); ++i)
    w.layers.push_back(
        bind_layer(b, c, c.layers[size_t(i)], "model.layers." + std::to_string(i) + "."));
  bind_mtp(b, c, &w);
  INK_RETURN_IF_ERROR(finish_binding(b, &w));
  return w;
}

Status finish_binding(const Binder& b, Weights* w) {
  if (!b.status().ok()) return b.status();
  // Every matrix gets its kernels from the format registry now, once.
  std::string unbound;
  for_each_matrix(*w, [&](const char*, const std::string& name, MatView& v) {
    if (unbound.empty() && !bind_kernels(v))
      unbound = "[load] " + name + ": no kernel runs storage " + format_label(v) + " with " +
                std::to_string(v.cols) + " columns";
  });
  if (!unbound.empty()) return Status::error(unbound);
  w->unused = b.unused();
  w->storage = b.storage();
  return Status::success();
}

void bind_numerics(Weights& w, Numerics n) {
  prepare_weight_tiles(w, n);
  w.resident_bytes = populate_weight_pages(w);
  // bind_weights bound every view once already, so every rebind succeeds (the choice of a set
  // depends on the format, its parameters and the columns, as at that first bind). In fast
  // numerics the routed experts take the coarse grade, every other matrix the fine one
  // (ops/formats.h KernelMode); the routers stay exact.
  for_each_matrix(w, [&](const char* group, const std::string&, MatView& v) {
    const bool routed = std::string_view(group) == "routed experts";
    bind_kernels(v, n == Numerics::kExact ? KernelMode::kExact
                    : routed              ? KernelMode::kFast
                                          : KernelMode::kFastFine);
  });
  auto exact_router = [](LayerWeights& l) {
    if (l.moe.router.data) bind_kernels(l.moe.router, KernelMode::kExact);
  };
  for (LayerWeights& l : w.layers) exact_router(l);
  for (Inkling2Layer& l : w.v2.layers)
    if (l.moe.router.data) bind_kernels(l.moe.router, KernelMode::kExact);
  for (MtpDepthWeights& d : w.mtp) exact_router(d.block);
}

}  // namespace inkling
