// bind_inkling2(): one layer at a time in the order of spec/inkling2.md section 7.1; the looped
// core's message queries are merged here from the original layout's two tensors when needed.
#include "model/inkling2/bind.h"

#include <algorithm>

#include "model/binder.h"

namespace inkling {

namespace {

Inkling2Layer bind_layer(Binder& b, const ModelConfig& c, int i, bool loop_layer) {
  const LayerSpec& s = c.layers[size_t(i)];
  const int64_t H = c.hidden, K = c.conv_k, nh = s.n_heads, nkv = s.n_kv_heads, hd = s.head_dim;
  const std::string p = "model.layers." + std::to_string(i) + ".";
  Inkling2Layer L;
  L.sliding = s.sliding;
  if (i > 0)
    L.attn_query = s.sliding ? b.vec(p + "attention_input.query", {H})
                             : b.vec(p + "attention_input.query", {3, H});
  L.mlp_query = b.vec(p + "mlp_input.query", {H});
  if (s.sliding) {
    L.in_norm = b.vec(p + "input_layernorm.weight", {H});
  } else {
    L.q_norm = b.vec(p + "q_input_layernorm.weight", {H});
    L.k_norm = b.vec(p + "k_input_layernorm.weight", {H});
    L.v_norm = b.vec(p + "v_input_layernorm.weight", {H});
  }
  L.mlp_norm = b.vec(p + "post_attention_layernorm.weight", {H});
  L.attn_conv = b.vec(p + "post_attention_convolution.conv1d.weight", {H, K});
  L.mlp_conv = b.vec(p + "post_mlp_convolution.conv1d.weight", {H, K});
  const std::string a = p + "self_attn.";
  L.q = b.mat(a + "q_proj.linear.weight", nh * hd, H);
  L.q_scale = b.vec(a + "q_proj.norm.scale", {nh, hd});
  L.k = b.mat(a + "k_proj.linear.weight", nkv * hd, H);
  L.v = b.mat(a + "v_proj.linear.weight", nkv * hd, H);
  if (s.sliding) {
    L.k_conv = b.vec(a + "k_proj.sconv.conv1d.weight", {nkv * hd, K});
    L.v_conv = b.vec(a + "v_proj.sconv.conv1d.weight", {nkv * hd, K});
  } else {
    L.k_conv = b.vec(a + "k_proj.sconv.static_weight", {K, nkv * hd});
    L.v_conv = b.vec(a + "v_proj.sconv.static_weight", {K, nkv * hd});
    L.k_dyn = b.mat(a + "k_proj.sconv.weight_proj.weight", nkv * K, H);
    L.v_dyn = b.mat(a + "v_proj.sconv.weight_proj.weight", nkv * K, H);
  }
  L.r = b.mat(a + "relative_position_bias.linear.weight", nh * c.d_rel, H);
  L.r_scale = b.vec(a + "relative_position_bias.norm.scale", {nh, c.d_rel});
  L.rel_proj = b.vec(a + "relative_position_bias.proj", {c.d_rel, s.rel_extent});
  L.sink = b.mat(a + "sink_proj.weight", nh, H);
  L.gate = b.mat(a + "o_proj.gate_proj.weight", nh * hd, H);
  L.o = b.mat(a + "o_proj.linear.weight", H, nh * hd);
  const int64_t E = c.n_routed, I = c.moe_width;
  MoeWeights& m = L.moe;
  m.router = b.mat(p + "mlp.gate.weight", E, H);
  m.router_bias = b.vec(p + "mlp.gate.e_score_correction_bias", {E});
  auto g = b.matrices(p + "mlp.experts.gate_proj", E, I, H);
  auto u = b.matrices(p + "mlp.experts.up_proj", E, I, H);
  auto d = b.matrices(p + "mlp.experts.down_proj", E, H, I);
  for (size_t e = 0; e < g.size() && e < u.size() && e < d.size(); ++e)
    m.routed.push_back({g[e], u[e], d[e], float(c.v2.gate_cap), float(c.v2.up_cap)});
  if (loop_layer && c.v2.loop_passes > 1) {
    static const char* kGates[4] = {"q", "k", "v", "mlp"};
    const int64_t R = c.v2.loop_rank;
    for (int k = 0; k < 4; ++k) {
      const std::string gp = p + kGates[k] + "_message_gate.";
      L.gates[k].down = b.mat(gp + "down_proj.weight", R, 2 * H);
      L.gates[k].forget = b.mat(gp + "forget_gate_proj.weight", H, R);
      L.gates[k].gain = b.mat(gp + "message_gate_proj.weight", H, R);
    }
  }
  return L;
}

// [core layers, 4, H] in (q, k, v, mlp) order: transformers' message_input.query, or the
// original's two [2 x core, H] tensors (rows 2j, 2j+1 = q, mlp and k, v of core layer j).
std::vector<float> message_queries(Binder& b, const ModelConfig& c) {
  const int64_t n = c.v2.loop_end - c.v2.loop_start, H = c.hidden;
  if (b.has("model.message_input.query")) return b.vec("model.message_input.query", {n, 4, H});
  const std::vector<float> qm = b.vec("model.message_input.og_queries", {2 * n, H});
  const std::vector<float> kv = b.vec("model.message_input.og_kv_queries", {2 * n, H});
  if (qm.empty() || kv.empty()) return {};
  std::vector<float> out(size_t(n * 4 * H));
  for (int64_t j = 0; j < n; ++j) {
    const float* rows[4] = {&qm[size_t(2 * j * H)], &kv[size_t(2 * j * H)],
                            &kv[size_t((2 * j + 1) * H)], &qm[size_t((2 * j + 1) * H)]};
    for (int q = 0; q < 4; ++q) std::copy_n(rows[q], H, out.begin() + (j * 4 + q) * H);
  }
  return out;
}

}  // namespace

Result<Weights> bind_inkling2(const ModelConfig& c, const TensorMap& tensors,
                              const QuantConfig& quant) {
  Binder b(tensors, quant);
  Weights w;
  const int64_t H = c.hidden, V = c.vocab_size;
  w.embed = b.mat("model.embed_tokens.weight", V, H);
  // The original unembedding keeps the padded rows; transformers' lm_head has the unpadded ones.
  const TensorRef* head = b.find("lm_head.weight");
  const int64_t head_rows =
      head && !head->shape.empty() && head->shape[0] == c.unpadded_vocab ? c.unpadded_vocab : V;
  w.lm_head = b.mat("lm_head.weight", head_rows, H);
  w.embed_norm = b.vec("model.embed_norm.weight", {H});
  w.final_norm = b.vec("model.norm.weight", {H});
  w.v2.final_query = b.vec("model.final_input.query", {H});
  for (int i = 0; i < c.n_layers && b.status().ok(); ++i)
    w.v2.layers.push_back(
        bind_layer(b, c, i, c.v2.looped() && i >= c.v2.loop_start && i < c.v2.loop_end));
  if (c.v2.looped() && c.v2.loop_passes > 1 && b.status().ok())
    w.v2.message_query = message_queries(b, c);
  INK_RETURN_IF_ERROR(finish_binding(b, &w));
  return w;
}

}  // namespace inkling
