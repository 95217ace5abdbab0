// layout_inkling2(): the tensors of an Inkling 2 config (Mini or Small) in file order, under
// transformers' names: every Linear a module (quantizable), the routed experts stacked per layer
// as mlx-lm's SwitchGLU holds them, and the small parameters (norms, queries, convolutions,
// clip scales, message gates) copied as stored.
#include "quantize/quantize_layout.h"

namespace inkling::quant {

std::vector<PlanItem> layout_inkling2(const ModelConfig& c) {
  LayoutBuilder out;
  const int64_t H = c.hidden, V = c.vocab_size, K = c.conv_k;
  const int64_t E = c.n_routed, I = c.moe_width;
  out.mod("model.embed_tokens", Group::kEmbed, Role::kEmbed, 0, V, H);
  out.small("model.embed_tokens.embed_norm.weight", "model.embed_norm.weight", {H});
  for (int i = 0; i < c.n_layers; ++i) {
    out.layer = i;
    const LayerSpec& s = c.layers[size_t(i)];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    const std::string a = p + "self_attn.";
    const int64_t nh = s.n_heads, nkv = s.n_kv_heads, hd = s.head_dim;
    auto copy = [&](const std::string& name, std::vector<int64_t> shape) {
      out.small(name, name, std::move(shape));
    };
    auto attn = [&](const std::string& name, Role role, int64_t rows, int64_t cols) {
      out.mod(a + name, Group::kAttention, role, 0, rows, cols);
    };
    if (i > 0)
      copy(p + "attention_input.query",
           s.sliding ? std::vector<int64_t>{H} : std::vector<int64_t>{3, H});
    copy(p + "mlp_input.query", {H});
    if (s.sliding) {
      copy(p + "input_layernorm.weight", {H});
    } else {
      for (const char* n : {"q", "k", "v"}) copy(p + n + "_input_layernorm.weight", {H});
    }
    copy(p + "post_attention_layernorm.weight", {H});
    attn("q_proj.linear", Role::kQ, nh * hd, H);
    copy(a + "q_proj.norm.scale", {nh, hd});
    attn("k_proj.linear", Role::kK, nkv * hd, H);
    attn("v_proj.linear", Role::kV, nkv * hd, H);
    if (s.sliding) {
      for (const char* n : {"k_proj", "v_proj"})
        copy(a + n + ".sconv.conv1d.weight", {nkv * hd, 1, K});
    } else {
      for (const char* n : {"k_proj", "v_proj"})
        copy(a + n + ".sconv.static_weight", {K, nkv * hd});
      attn("k_proj.sconv.weight_proj", Role::kKDyn, nkv * K, H);
      attn("v_proj.sconv.weight_proj", Role::kVDyn, nkv * K, H);
    }
    attn("relative_position_bias.linear", Role::kR, nh * c.d_rel, H);
    copy(a + "relative_position_bias.norm.scale", {nh, c.d_rel});
    copy(a + "relative_position_bias.proj", {c.d_rel, s.rel_extent});
    attn("sink_proj", Role::kSink, nh, H);
    attn("o_proj.gate_proj", Role::kOGate, nh * hd, H);
    attn("o_proj.linear", Role::kO, H, nh * hd);
    copy(p + "post_attention_convolution.conv1d.weight", {H, 1, K});
    out.mod(p + "mlp.gate", Group::kRouter, Role::kRouter, 0, E, H);
    out.small(p + "mlp.gate.e_score_correction_bias", p + "mlp.gate.e_score_correction_bias", {E},
              true);
    out.mod(p + "mlp.switch_mlp.gate_proj", Group::kExperts, Role::kExpertGate, E, I, H);
    out.mod(p + "mlp.switch_mlp.up_proj", Group::kExperts, Role::kExpertUp, E, I, H);
    out.mod(p + "mlp.switch_mlp.down_proj", Group::kExperts, Role::kExpertDown, E, H, I);
    copy(p + "post_mlp_convolution.conv1d.weight", {H, 1, K});
    // The loop controllers' message gates are small (rank x 2H) and steer every later pass:
    // copied as stored.
    if (c.v2.looped() && c.v2.loop_passes > 1 && i >= c.v2.loop_start && i < c.v2.loop_end) {
      const int64_t R = c.v2.loop_rank;
      for (const char* g : {"q", "k", "v", "mlp"}) {
        const std::string gp = p + g + "_message_gate.";
        copy(gp + "down_proj.weight", {R, 2 * H});
        copy(gp + "forget_gate_proj.weight", {H, R});
        copy(gp + "message_gate_proj.weight", {H, R});
      }
    }
  }
  out.layer = -1;
  out.small("model.norm.weight", "model.norm.weight", {H});
  out.small("model.final_input.query", "model.final_input.query", {H});
  if (c.v2.looped() && c.v2.loop_passes > 1)
    out.small("model.message_input.query", "model.message_input.query",
              {c.v2.loop_end - c.v2.loop_start, 4, H});
  out.mod("lm_head", Group::kHead, Role::kHead, 0, c.unpadded_vocab > 0 ? c.unpadded_vocab : V, H);
  return std::move(out.items);
}

}  // namespace inkling::quant
