// forward_layer(): one decoder layer, reading like the block diagram; the attention, dense MLP
// and short-conv branches are helpers. The MoE branch is model/moe.cpp.
#include "model/layer.h"

#include <algorithm>

#include "model/model.h"
#include "model/moe.h"
#include "ops/attention.h"
#include "ops/conv.h"
#include "ops/matmul.h"
#include "ops/norm.h"

namespace inkling {

namespace {

// Records a conv's state and its n input rows of width C (ConvTrace) before the conv runs.
void trace_conv(std::vector<float>* out, const std::vector<float>& state, const float* u, int64_t n,
                int64_t C) {
  out->resize(state.size() + size_t(n * C));
  std::copy(state.begin(), state.end(), out->begin());
  std::copy_n(u, n * C, out->begin() + ptrdiff_t(state.size()));
}

// Attention branch: a [T, H] (normed rows of all segments) -> out [T, H]. Updates each
// segment's KV cache and k/v conv states.
void attention_block(const ModelConfig& c, const LayerSpec& spec, const AttentionWeights& w,
                     const float* a, std::span<const LayerSegment> segs, int64_t T, Scratch& s,
                     float* out, ThreadPool* pool, const Tap& tap) {
  const int64_t H = c.hidden, nh = spec.n_heads, nkv = spec.n_kv_heads, hd = spec.head_dim;
  const int64_t qw = nh * hd, kvw = nkv * hd, rw = nh * c.d_rel;
  const MatmulJob jobs[4] = {{a, T, H, &w.q, s.q.data(), qw},
                             {a, T, H, &w.k, s.k.data(), kvw},
                             {a, T, H, &w.v, s.v.data(), kvw},
                             {a, T, H, &w.r, s.r.data(), rw}};
  matmul_each(jobs, 4, pool);  // one hand-out to the pool at decode
  tap("q_proj", s.q.data(), {T, qw});
  tap("k_proj", s.k.data(), {T, kvw});
  tap("v_proj", s.v.data(), {T, kvw});
  tap("r_proj", s.r.data(), {T, rw});

  // Short convs on the flat k and v vectors (each segment with its own state), before the head
  // split and k_norm.
  int64_t off = 0;
  for (const LayerSegment& g : segs) {
    float* k = s.k.data() + off * kvw;
    float* v = s.v.data() + off * kvw;
    if (g.trace) {
      trace_conv(&g.trace->k, g.cache->conv_k, k, g.n, kvw);
      trace_conv(&g.trace->v, g.cache->conv_v, v, g.n, kvw);
    }
    short_conv(k, g.n, kvw, w.k_conv.data(), c.conv_k, g.cache->conv_k.data(), k);
    short_conv(v, g.n, kvw, w.v_conv.data(), c.conv_k, g.cache->conv_v.data(), v);
    off += g.n;
  }
  tap("k_sconv", s.k.data(), {T, kvw});
  tap("v_sconv", s.v.data(), {T, kvw});
  rms_norm_rows(s.q.data(), w.q_norm.data(), T * nh, hd, c.rms_eps, s.q.data());
  rms_norm_rows(s.k.data(), w.k_norm.data(), T * nkv, hd, c.rms_eps, s.k.data());
  tap("q_norm", s.q.data(), {T, nh, hd});
  tap("k_norm", s.k.data(), {T, nkv, hd});

  AttentionShape shape;
  shape.n_heads = spec.n_heads;
  shape.n_kv_heads = spec.n_kv_heads;
  shape.head_dim = spec.head_dim;
  shape.d_rel = c.d_rel;
  shape.rel_extent = spec.rel_extent;
  shape.window = spec.sliding ? spec.rel_extent : 0;  // sliding: R == W (an MTP depth: its extent)
  shape.log_floor = (!spec.sliding && c.log_floor) ? *c.log_floor : 0.0;
  shape.log_alpha = c.log_alpha;
  off = 0;
  for (const LayerSegment& g : segs) {
    LayerCache& cache = *g.cache;
    const float* k = s.k.data() + off * kvw;
    const float* v = s.v.data() + off * kvw;
    const KvView kv = cache.reserve(g.pos + g.n);
    for (int64_t t = 0; t < g.n; ++t) cache.put(g.pos + t, k + t * kvw, v + t * kvw);
    attention(s.q.data() + off * qw, s.r.data() + off * rw, g.n, g.pos, kv, w.rel_proj.data(),
              shape, s.att.data() + off * qw, pool);
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
void branch_conv(const std::vector<float>& weight, int64_t K, bool mlp,
                 std::span<const LayerSegment> segs, int64_t H, float* br) {
  int64_t off = 0;
  for (const LayerSegment& g : segs) {
    std::vector<float>& state = mlp ? g.cache->conv_mlp : g.cache->conv_attn;
    float* st = state.data();
    if (g.trace) trace_conv(mlp ? &g.trace->mlp : &g.trace->attn, state, br + off * H, g.n, H);
    short_conv(br + off * H, g.n, H, weight.data(), K, st, br + off * H);
    off += g.n;
  }
}

}  // namespace

void forward_layer(const ModelConfig& c, const LayerSpec& spec, const LayerWeights& w, float* x,
                   std::span<const LayerSegment> segs, Scratch& s, ThreadPool* pool,
                   const Tap& tap) {
  int64_t T = 0;
  for (const LayerSegment& g : segs) T += g.n;
  const int64_t H = c.hidden, n = T * H;
  float* br = s.br.data();

  rms_norm_rows(x, w.attn_norm.data(), T, H, c.rms_eps, s.a.data());
  tap("input_layernorm", s.a.data(), {T, H});
  attention_block(c, spec, w.attn, s.a.data(), segs, T, s, br, pool, tap.sub("self_attn."));
  if (tap) tap.sub("self_attn")("", br, {T, H});
  branch_conv(w.attn_conv, c.conv_k, /*mlp=*/false, segs, H, br);
  tap("attn_sconv", br, {T, H});
  for (int64_t i = 0; i < n; ++i) x[i] += br[i];

  rms_norm_rows(x, w.mlp_norm.data(), T, H, c.rms_eps, s.a.data());
  tap("post_attention_layernorm", s.a.data(), {T, H});
  if (spec.dense)
    dense_block(c, w, s.a.data(), T, s, br, pool);
  else
    moe_block(c, w.moe, s.a.data(), T, s, br, pool, tap);
  tap("mlp", br, {T, H});
  branch_conv(w.mlp_conv, c.conv_k, /*mlp=*/true, segs, H, br);
  tap("mlp_sconv", br, {T, H});
  for (int64_t i = 0; i < n; ++i) x[i] += br[i];
}

}  // namespace inkling
