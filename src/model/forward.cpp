// The forward pass: embed -> embed_norm -> layers -> norm -> /mup -> lm_head. One
// forward_layer() reads like the block diagram; attention and MLP branches are helpers.
#include <algorithm>
#include <cmath>

#include "model/model.h"
#include "model/moe.h"
#include "ops/attention.h"
#include "ops/conv.h"
#include "ops/norm.h"
#include "ops/quant.h"

namespace inkling {

namespace {

// Every scratch buffer and its element count, in one place: make() resizes them, footprint()
// only adds them up. `f(vector, n)` is called once per buffer.
template <typename F>
void scratch_layout(Scratch& s, const ModelConfig& c, int64_t chunk, F&& f) {
  int64_t qw = 0, kvw = 0, rw = 0;
  for (const LayerSpec& l : c.layers) {
    qw = std::max<int64_t>(qw, int64_t(l.n_heads) * l.head_dim);
    kvw = std::max<int64_t>(kvw, int64_t(l.n_kv_heads) * l.head_dim);
    rw = std::max<int64_t>(rw, int64_t(l.n_heads) * c.d_rel);
  }
  const int64_t H = c.hidden, mw = std::max(c.dense_width, c.moe_width), I = c.moe_width;
  auto rows = [&](auto& v, int64_t width) { f(v, size_t(chunk * width)); };
  rows(s.x, H), rows(s.a, H), rows(s.br, H), rows(s.y, H);
  rows(s.q, qw), rows(s.att, qw), rows(s.k, kvw), rows(s.v, kvw), rows(s.r, rw);
  rows(s.gu, 2 * mw);
  rows(s.moe_in, H), rows(s.moe_out, H), rows(s.moe_gu, 2 * I);
  rows(s.router_logits, c.n_routed + c.n_shared);
  rows(s.route_idx, c.top_k), rows(s.route_w, c.top_k), rows(s.expert_tokens, c.top_k);
  rows(s.route_gamma, std::max(c.n_shared, 1));
}

}  // namespace

Scratch Scratch::make(const ModelConfig& c, int64_t chunk) {
  Scratch s;
  s.chunk = chunk;
  scratch_layout(s, c, chunk, [](auto& v, size_t n) { v.resize(n); });
  return s;
}

size_t Scratch::footprint(const ModelConfig& c, int64_t chunk) {
  Scratch s;  // stays empty
  size_t bytes = 0;
  scratch_layout(s, c, chunk, [&](auto& v, size_t n) { bytes += n * sizeof(v[0]); });
  return bytes;
}

namespace {

// Attention branch: a [T, H] (normed rows of all segments) -> out [T, H]. Updates each
// segment's KV cache and k/v conv states for this layer.
void attention_block(const ModelConfig& c, int layer, const AttentionWeights& w, const float* a,
                     const Segment* segs, size_t n_segs, int64_t T, Scratch& s, float* out,
                     ThreadPool* pool) {
  const LayerSpec& spec = c.layers[size_t(layer)];
  const int64_t H = c.hidden, nh = spec.n_heads, nkv = spec.n_kv_heads, hd = spec.head_dim;
  const int64_t qw = nh * hd, kvw = nkv * hd, rw = nh * c.d_rel;
  matmul(a, T, H, w.q, s.q.data(), qw, pool);
  matmul(a, T, H, w.k, s.k.data(), kvw, pool);
  matmul(a, T, H, w.v, s.v.data(), kvw, pool);
  matmul(a, T, H, w.r, s.r.data(), rw, pool);
  rms_norm_rows(s.q.data(), w.q_norm.data(), T * nh, hd, c.rms_eps, s.q.data());

  AttentionShape shape;
  shape.n_heads = spec.n_heads;
  shape.n_kv_heads = spec.n_kv_heads;
  shape.head_dim = spec.head_dim;
  shape.d_rel = c.d_rel;
  shape.rel_extent = spec.rel_extent;
  shape.window = spec.sliding ? c.window : 0;
  shape.log_floor = (!spec.sliding && c.log_floor) ? *c.log_floor : 0.0;
  shape.log_alpha = c.log_alpha;
  int64_t off = 0;
  for (size_t i = 0; i < n_segs; ++i) {
    const Segment& g = segs[i];
    LayerCache& cache = g.state->layers[size_t(layer)];
    float* k = s.k.data() + off * kvw;
    float* v = s.v.data() + off * kvw;
    // Short convs on the flat k and v vectors, before the head split and k_norm.
    short_conv(k, g.n, kvw, w.k_conv.data(), c.conv_k, cache.conv_k.data(), k);
    short_conv(v, g.n, kvw, w.v_conv.data(), c.conv_k, cache.conv_v.data(), v);
    rms_norm_rows(k, w.k_norm.data(), g.n * nkv, hd, c.rms_eps, k);
    const int64_t pos0 = g.state->pos;
    const KvView kv = cache.reserve(pos0 + g.n);
    for (int64_t t = 0; t < g.n; ++t) {
      std::copy_n(k + t * kvw, kvw, cache.k_row(pos0 + t));
      std::copy_n(v + t * kvw, kvw, cache.v_row(pos0 + t));
    }
    attention(s.q.data() + off * qw, s.r.data() + off * rw, g.n, pos0, kv, w.rel_proj.data(), shape,
              s.att.data() + off * qw, pool);
    off += g.n;
  }
  matmul(s.att.data(), T, qw, w.o, out, H, pool);
}

void dense_block(const ModelConfig& c, const LayerWeights& w, const float* m, int64_t T, Scratch& s,
                 float* out, ThreadPool* pool) {
  const int64_t H = c.hidden, W = c.dense_width;
  swiglu(w.dense, m, T, H, W, s.gu.data(), nullptr, 0, out, pool);
  for (int64_t i = 0; i < T * H; ++i) out[i] *= w.dense_scale;
}

// Branch output br [T, H] -> br + conv(br) per segment, with that segment's conv state.
void branch_conv(const std::vector<float>& weight, int64_t K, int layer, bool mlp,
                 const Segment* segs, size_t n_segs, int64_t H, float* br) {
  int64_t off = 0;
  for (size_t i = 0; i < n_segs; ++i) {
    LayerCache& cache = segs[i].state->layers[size_t(layer)];
    float* st = mlp ? cache.conv_mlp.data() : cache.conv_attn.data();
    short_conv(br + off * H, segs[i].n, H, weight.data(), K, st, br + off * H);
    off += segs[i].n;
  }
}

// One decoder layer on x [T, H] in place:
//   x += SC_attn(Attention(RMSNorm(x)));  x += SC_mlp(MLP_or_MoE(RMSNorm(x)))
void forward_layer(const Model& m, int layer, float* x, const Segment* segs, size_t n_segs,
                   int64_t T, Scratch& s, ThreadPool* pool) {
  const ModelConfig& c = m.config;
  const LayerWeights& w = m.weights.layers[size_t(layer)];
  const int64_t H = c.hidden, n = T * H;
  float* br = s.br.data();

  rms_norm_rows(x, w.attn_norm.data(), T, H, c.rms_eps, s.a.data());
  attention_block(c, layer, w.attn, s.a.data(), segs, n_segs, T, s, br, pool);
  branch_conv(w.attn_conv, c.conv_k, layer, /*mlp=*/false, segs, n_segs, H, br);
  for (int64_t i = 0; i < n; ++i) x[i] += br[i];

  rms_norm_rows(x, w.mlp_norm.data(), T, H, c.rms_eps, s.a.data());
  if (c.layers[size_t(layer)].dense)
    dense_block(c, w, s.a.data(), T, s, br, pool);
  else
    moe_block(c, w.moe, s.a.data(), T, s, br, pool);
  branch_conv(w.mlp_conv, c.conv_k, layer, /*mlp=*/true, segs, n_segs, H, br);
  for (int64_t i = 0; i < n; ++i) x[i] += br[i];
}

}  // namespace

void forward_batch(const Model& m, const Segment* segs, size_t n_segs, Scratch& s,
                   ThreadPool* pool) {
  const ModelConfig& c = m.config;
  const Weights& w = m.weights;
  const int64_t H = c.hidden, V = c.unpadded_vocab;
  int64_t T = 0;
  for (size_t i = 0; i < n_segs; ++i) T += segs[i].n;
  INK_CHECK(T > 0 && T <= s.chunk);
  float* x = s.x.data();
  int64_t off = 0;
  for (size_t i = 0; i < n_segs; ++i)
    for (int64_t t = 0; t < segs[i].n; ++t, ++off)
      dequant_row(w.embed, segs[i].tokens[t], x + off * H);  // any storage format
  rms_norm_rows(x, w.embed_norm.data(), T, H, c.rms_eps, x);
  for (int l = 0; l < c.n_layers; ++l) forward_layer(m, l, x, segs, n_segs, T, s, pool);
  for (size_t i = 0; i < n_segs; ++i) segs[i].state->pos += segs[i].n;

  // Rows that need logits: final norm, divide by the muP multiplier (a true division, as
  // transformers does), then the head over the unpadded vocabulary only, in one matmul.
  float* h = s.a.data();
  int64_t rows = 0;
  off = 0;
  for (size_t i = 0; i < n_segs; ++i) {
    const Segment& g = segs[i];
    if (g.logits) {
      const int64_t first = g.all_positions ? 0 : g.n - 1;
      std::copy_n(x + (off + first) * H, (g.n - first) * H, h + rows * H);
      rows += g.n - first;
    }
    off += g.n;
  }
  if (rows == 0) return;
  rms_norm_rows(h, w.final_norm.data(), rows, H, c.rms_eps, h);
  const float mup = float(c.mup_divisor);
  for (int64_t i = 0; i < rows * H; ++i) h[i] /= mup;
  const MatView head = w.lm_head.slice_rows(0, V);
  const bool direct = n_segs == 1;  // one segment: write straight into its output
  if (!direct && s.logits.size() < size_t(rows * V)) s.logits.resize(size_t(rows * V));
  float* dst = direct ? segs[0].logits : s.logits.data();
  matmul(h, rows, H, head, dst, V, pool);
  if (direct) return;
  int64_t r = 0;
  for (size_t i = 0; i < n_segs; ++i) {
    const Segment& g = segs[i];
    if (!g.logits) continue;
    const int64_t n_rows = g.all_positions ? g.n : 1;
    std::copy_n(dst + r * V, n_rows * V, g.logits);
    r += n_rows;
  }
}

}  // namespace inkling
