// The forward pass: embed -> embed_norm -> layers -> norm -> /mup -> lm_head. One
// forward_layer() reads like the block diagram; attention and MLP branches are helpers.
#include <algorithm>
#include <cmath>

#include "model/model.h"
#include "model/moe.h"
#include "ops/attention.h"
#include "ops/conv.h"
#include "ops/norm.h"

namespace inkling {

Scratch Scratch::make(const ModelConfig& c, int64_t chunk) {
  Scratch s;
  s.chunk = chunk;
  int64_t qw = 0, kvw = 0, rw = 0;
  for (const LayerSpec& l : c.layers) {
    qw = std::max<int64_t>(qw, int64_t(l.n_heads) * l.head_dim);
    kvw = std::max<int64_t>(kvw, int64_t(l.n_kv_heads) * l.head_dim);
    rw = std::max<int64_t>(rw, int64_t(l.n_heads) * c.d_rel);
  }
  const int64_t H = c.hidden, mw = std::max(c.dense_width, c.moe_width);
  auto sz = [&](int64_t w) { return std::vector<float>(size_t(chunk * w)); };
  s.x = sz(H), s.a = sz(H), s.br = sz(H), s.y = sz(H);
  s.q = sz(qw), s.att = sz(qw), s.k = sz(kvw), s.v = sz(kvw), s.r = sz(rw);
  s.g = sz(mw), s.u = sz(mw), s.h = sz(mw);
  s.moe_in = sz(H), s.moe_out = sz(H), s.moe_g = sz(c.moe_width), s.moe_u = sz(c.moe_width);
  s.router_logits.resize(size_t(chunk * (c.n_routed + c.n_shared)));
  s.route_idx.resize(size_t(chunk * c.top_k));
  s.route_w.resize(size_t(chunk * c.top_k));
  s.route_gamma.resize(size_t(chunk * std::max(c.n_shared, 1)));
  s.expert_tokens.resize(size_t(chunk * c.top_k));
  s.logits_row.resize(size_t(c.unpadded_vocab));
  return s;
}

namespace {

// Attention branch: a [T, H] (normed) -> out [T, H]. Updates the layer's KV cache and k/v convs.
void attention_block(const ModelConfig& c, const LayerSpec& spec, const AttentionWeights& w,
                     const float* a, int64_t T, int64_t pos0, LayerCache& cache, Scratch& s,
                     float* out, ThreadPool* pool) {
  const int64_t H = c.hidden, nh = spec.n_heads, nkv = spec.n_kv_heads, hd = spec.head_dim;
  const int64_t qw = nh * hd, kvw = nkv * hd, rw = nh * c.d_rel;
  matmul(a, T, H, w.q, s.q.data(), qw, pool);
  matmul(a, T, H, w.k, s.k.data(), kvw, pool);
  matmul(a, T, H, w.v, s.v.data(), kvw, pool);
  matmul(a, T, H, w.r, s.r.data(), rw, pool);
  // Short convs on the flat k and v vectors, before the head split and k_norm.
  short_conv(s.k.data(), T, kvw, w.k_conv.data(), c.conv_k, cache.conv_k.data(), s.k.data());
  short_conv(s.v.data(), T, kvw, w.v_conv.data(), c.conv_k, cache.conv_v.data(), s.v.data());
  rms_norm_rows(s.q.data(), w.q_norm.data(), T * nh, hd, c.rms_eps, s.q.data());
  rms_norm_rows(s.k.data(), w.k_norm.data(), T * nkv, hd, c.rms_eps, s.k.data());

  const KvView kv = cache.reserve(pos0 + T);
  for (int64_t i = 0; i < T; ++i) {
    std::copy_n(s.k.data() + i * kvw, kvw, cache.k_row(pos0 + i));
    std::copy_n(s.v.data() + i * kvw, kvw, cache.v_row(pos0 + i));
  }
  AttentionShape shape;
  shape.n_heads = spec.n_heads;
  shape.n_kv_heads = spec.n_kv_heads;
  shape.head_dim = spec.head_dim;
  shape.d_rel = c.d_rel;
  shape.rel_extent = spec.rel_extent;
  shape.window = spec.sliding ? c.window : 0;
  shape.log_floor = (!spec.sliding && c.log_floor) ? *c.log_floor : 0.0;
  shape.log_alpha = c.log_alpha;
  attention(s.q.data(), s.r.data(), T, pos0, kv, w.rel_proj.data(), shape, s.att.data(), pool);
  matmul(s.att.data(), T, qw, w.o, out, H, pool);
}

void dense_block(const ModelConfig& c, const LayerWeights& w, const float* m, int64_t T, Scratch& s,
                 float* out, ThreadPool* pool) {
  const int64_t H = c.hidden, W = c.dense_width;
  swiglu(w.dense, m, T, H, W, s.g.data(), s.u.data(), nullptr, 0, out, pool);
  for (int64_t i = 0; i < T * H; ++i) out[i] *= w.dense_scale;
}

// One decoder layer on x [T, H] in place:
//   x += SC_attn(Attention(RMSNorm(x)));  x += SC_mlp(MLP_or_MoE(RMSNorm(x)))
void forward_layer(const Model& m, int layer, float* x, int64_t T, int64_t pos0, LayerCache& cache,
                   Scratch& s, ThreadPool* pool) {
  const ModelConfig& c = m.config;
  const LayerSpec& spec = c.layers[size_t(layer)];
  const LayerWeights& w = m.weights.layers[size_t(layer)];
  const int64_t H = c.hidden, n = T * H;

  rms_norm_rows(x, w.attn_norm.data(), T, H, c.rms_eps, s.a.data());
  attention_block(c, spec, w.attn, s.a.data(), T, pos0, cache, s, s.br.data(), pool);
  short_conv(s.br.data(), T, H, w.attn_conv.data(), c.conv_k, cache.conv_attn.data(), s.br.data());
  for (int64_t i = 0; i < n; ++i) x[i] += s.br[size_t(i)];

  rms_norm_rows(x, w.mlp_norm.data(), T, H, c.rms_eps, s.a.data());
  if (spec.dense)
    dense_block(c, w, s.a.data(), T, s, s.br.data(), pool);
  else
    moe_block(c, w.moe, s.a.data(), T, s, s.br.data(), pool);
  short_conv(s.br.data(), T, H, w.mlp_conv.data(), c.conv_k, cache.conv_mlp.data(), s.br.data());
  for (int64_t i = 0; i < n; ++i) x[i] += s.br[size_t(i)];
}

}  // namespace

void forward_chunk(const Model& m, const int32_t* tokens, int64_t T, SequenceState& state,
                   Scratch& s, float* logits, bool all_positions, ThreadPool* pool) {
  const ModelConfig& c = m.config;
  const Weights& w = m.weights;
  const int64_t H = c.hidden;
  float* x = s.x.data();
  for (int64_t i = 0; i < T; ++i) row_to_f32(w.embed.row(tokens[i]), w.embed.dtype, H, x + i * H);
  rms_norm_rows(x, w.embed_norm.data(), T, H, c.rms_eps, x);
  for (int l = 0; l < c.n_layers; ++l)
    forward_layer(m, l, x, T, state.pos, state.layers[size_t(l)], s, pool);
  state.pos += T;
  if (!logits) return;

  // Final norm, divide by the muP multiplier (a true division, as transformers does), then the
  // head over the unpadded vocabulary only.
  const int64_t first = all_positions ? 0 : T - 1, rows = T - first;
  float* h = s.a.data();
  rms_norm_rows(x + first * H, w.final_norm.data(), rows, H, c.rms_eps, h);
  const float mup = float(c.mup_divisor);
  for (int64_t i = 0; i < rows * H; ++i) h[i] /= mup;
  const MatView head = w.lm_head.slice_rows(0, c.unpadded_vocab);
  matmul(h, rows, H, head, logits, c.unpadded_vocab, pool);
}

}  // namespace inkling
