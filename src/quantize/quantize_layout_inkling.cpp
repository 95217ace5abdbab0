// layout_inkling(): the mlx-vlm tensor list of an Inkling v1 config in file order (layer by
// layer, as the sources are laid out), with no specs yet; the MTP depths when asked.
#include "quantize/quantize_layout.h"

namespace inkling::quant {

std::vector<PlanItem> layout_inkling(const ModelConfig& c, bool mtp) {
  LayoutBuilder out;
  const int64_t H = c.hidden, V = c.vocab_size, K = c.conv_k;
  int& layer = out.layer;
  auto mod = [&](const std::string& path, Group g, Role role, int64_t n, int64_t rows, int64_t cols,
                 int64_t split = 0) -> Module& {
    return out.mod(path, g, role, n, rows, cols, split);
  };
  auto small = [&](const std::string& name, const std::string& source, std::vector<int64_t> shape,
                   bool f32 = false) { out.small(name, source, std::move(shape), f32); };
  const std::string L = "language_model.model.";
  mod(L + "embed_tokens", Group::kEmbed, Role::kEmbed, 0, V, H);
  small(L + "embed_norm.weight", "model.embed_norm.weight", {H});
  for (int i = 0; i < c.n_layers; ++i) {
    layer = i;
    const LayerSpec& s = c.layers[size_t(i)];
    const std::string P = L + "layers." + std::to_string(i) + ".";
    const std::string p = "model.layers." + std::to_string(i) + ".";
    const int64_t nh = s.n_heads, nkv = s.n_kv_heads, hd = s.head_dim;
    small(P + "input_layernorm.weight", p + "input_layernorm.weight", {H});
    mod(P + "self_attn.qkvr_proj", Group::kAttention, Role::kQkvr, 0,
        nh * hd + 2 * nkv * hd + nh * c.d_rel, H);
    small(P + "self_attn.q_norm.weight", p + "self_attn.q_norm.weight", {hd});
    small(P + "self_attn.k_norm.weight", p + "self_attn.k_norm.weight", {hd});
    small(P + "self_attn.k_sconv.conv.weight", p + "self_attn.k_sconv.conv1d.weight",
          {nkv * hd, K, 1});
    small(P + "self_attn.v_sconv.conv.weight", p + "self_attn.v_sconv.conv1d.weight",
          {nkv * hd, K, 1});
    small(P + "self_attn.rel_proj", p + "self_attn.rel_logits_proj.proj", {c.d_rel, s.rel_extent});
    mod(P + "self_attn.o_proj", Group::kAttention, Role::kO, 0, H, nh * hd);
    small(P + "attn_sconv.conv.weight", p + "attn_sconv.conv1d.weight", {H, K, 1});
    small(P + "post_attention_layernorm.weight", p + "post_attention_layernorm.weight", {H});
    if (s.dense) {
      const int64_t W = c.dense_width;
      mod(P + "mlp.gate_proj", Group::kDense, Role::kDenseGate, 0, W, H);
      mod(P + "mlp.up_proj", Group::kDense, Role::kDenseUp, 0, W, H);
      mod(P + "mlp.down_proj", Group::kDense, Role::kDenseDown, 0, H, W);
      small(P + "mlp.global_scale", p + "mlp.global_scale", {1});
    } else {
      const int64_t E = c.n_routed, S = c.n_shared, I = c.moe_width;
      mod(P + "mlp.gate_weight", Group::kRouter, Role::kRouter, 0, E + S, H).bare = true;
      small(P + "mlp.e_score_correction_bias", p + "mlp.gate.e_score_correction_bias", {E}, true);
      small(P + "mlp.global_scale", p + "mlp.gate.global_scale", {1}, true);
      mod(P + "mlp.switch_mlp.gate_proj", Group::kExperts, Role::kExpertGate, E, I, H);
      mod(P + "mlp.switch_mlp.up_proj", Group::kExperts, Role::kExpertUp, E, I, H);
      mod(P + "mlp.switch_mlp.down_proj", Group::kExperts, Role::kExpertDown, E, H, I);
      small(P + "mlp.switch_mlp.gate_scale", "", {E}, true);
      small(P + "mlp.switch_mlp.out_scale", "", {E}, true);
      if (S > 0) {
        mod(P + "mlp.shared_experts.gate_proj", Group::kShared, Role::kSharedGate, 0, S * I, H);
        mod(P + "mlp.shared_experts.up_proj", Group::kShared, Role::kSharedUp, 0, S * I, H);
        mod(P + "mlp.shared_experts.down_proj", Group::kShared, Role::kSharedDown, 0, H, S * I, I);
      }
    }
    small(P + "mlp_sconv.conv.weight", p + "mlp_sconv.conv1d.weight", {H, K, 1});
  }
  layer = -1;
  small(L + "norm.weight", "model.norm.weight", {H});
  mod("language_model.lm_head", Group::kHead, Role::kHead, 0, V, H);
  if (!mtp) return std::move(out.items);
  // The MTP depths keep the release's names (mlx-vlm drops every key containing ".mtp", so there
  // is no MLX convention to follow): model.mtp.layers.<d>.{embed_norm, hidden_norm, input_proj}
  // and .transformer_block.<the trunk layer's original names>, conv weights [C, 1, K]. Sources
  // are the canonical names sanitize_mtp() gives them ("mtp.<d>.").
  for (size_t d = 0; d < c.mtp.depths.size(); ++d) {
    const LayerSpec& s = c.mtp.depths[d];
    const std::string D = "model.mtp.layers." + std::to_string(d) + ".";
    const std::string P = D + "transformer_block.";
    const std::string p = "mtp." + std::to_string(d) + ".";
    const int64_t nh = s.n_heads, nkv = s.n_kv_heads, hd = s.head_dim, W = c.dense_width;
    auto depth_mod = [&](const std::string& path, Role role, int64_t rows, int64_t cols) {
      mod(path, Group::kMtp, role, 0, rows, cols).depth = int(d);
    };
    small(D + "embed_norm.weight", p + "embed_norm.weight", {H});
    small(D + "hidden_norm.weight", p + "hidden_norm.weight", {H});
    depth_mod(D + "input_proj", Role::kMtpInput, H, 2 * H);
    small(P + "attn_norm.weight", p + "input_layernorm.weight", {H});
    depth_mod(P + "attn.wq_du", Role::kMtpQ, nh * hd, H);
    depth_mod(P + "attn.wk_dv", Role::kMtpK, nkv * hd, H);
    depth_mod(P + "attn.wv_dv", Role::kMtpV, nkv * hd, H);
    depth_mod(P + "attn.wr_du", Role::kMtpR, nh * c.d_rel, H);
    depth_mod(P + "attn.wo_ud", Role::kMtpO, H, nh * hd);
    small(P + "attn.q_norm.weight", p + "self_attn.q_norm.weight", {hd});
    small(P + "attn.k_norm.weight", p + "self_attn.k_norm.weight", {hd});
    small(P + "attn.k_sconv.weight", p + "self_attn.k_sconv.conv1d.weight", {nkv * hd, 1, K});
    small(P + "attn.v_sconv.weight", p + "self_attn.v_sconv.conv1d.weight", {nkv * hd, 1, K});
    small(P + "attn.rel_logits_proj.proj", p + "self_attn.rel_logits_proj.proj",
          {c.d_rel, s.rel_extent});
    small(P + "attn_sconv.weight", p + "attn_sconv.conv1d.weight", {H, 1, K});
    small(P + "mlp_norm.weight", p + "post_attention_layernorm.weight", {H});
    depth_mod(P + "mlp.w13_dn", Role::kMtpGateUp, 2 * W, H);
    depth_mod(P + "mlp.w2_md", Role::kMtpDown, H, W);
    small(P + "mlp.global_scale", p + "mlp.global_scale", {1});
    small(P + "mlp_sconv.weight", p + "mlp_sconv.conv1d.weight", {H, 1, K});
  }
  return std::move(out.items);
}

}  // namespace inkling::quant
