// inkling2_trunk(): the visit schedule (ModelConfig::schedule) over per-token block states; one
// decoder layer is attention inputs -> attention -> post conv -> block bookkeeping -> MoE input
// -> MoE -> post conv. Everything is f32 (the reference's float32 run); products go through
// ops/matmul in the engine's numerics mode.
#include "model/inkling2/forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/moe.h"
#include "ops/activations.h"
#include "ops/attention.h"
#include "ops/conv.h"
#include "ops/formats.h"
#include "ops/matmul.h"
#include "ops/norm.h"

namespace inkling {

namespace {

// Message gates that share a hand-out at decode (a loop visit's q, k and v gates).
constexpr int kGateGroup = 3;

// Buffers of one call of T rows, carved from Scratch::v2 (grown on first use only).
struct Arena {
  int64_t T = 0, H = 0;
  float *partial = nullptr, *saved = nullptr, *blocks = nullptr, *prev = nullptr;
  float *xq = nullptr, *xk = nullptr, *xv = nullptr, *y = nullptr, *msg = nullptr;
  float *gcat = nullptr, *glow = nullptr, *src = nullptr;
  float *q = nullptr, *k = nullptr, *v = nullptr, *r = nullptr, *sink = nullptr;
  float *gate = nullptr, *att = nullptr, *dyn = nullptr;
  float* block(int i) const { return blocks + int64_t(i) * T * H; }
};

Arena carve(const ModelConfig& c, int64_t T, std::vector<float>& buf) {
  int64_t qw = 0, kvw = 0, rw = 0, nh = 0, dw = 0;
  for (const LayerSpec& l : c.layers) {
    qw = std::max<int64_t>(qw, int64_t(l.n_heads) * l.head_dim);
    kvw = std::max<int64_t>(kvw, int64_t(l.n_kv_heads) * l.head_dim);
    rw = std::max<int64_t>(rw, int64_t(l.n_heads) * c.d_rel);
    nh = std::max<int64_t>(nh, l.n_heads);
    dw = std::max<int64_t>(dw, int64_t(l.n_kv_heads) * c.conv_k);
  }
  const int64_t H = c.hidden, nb = c.n_layers / c.v2.block + 2;
  // Message-gate buffers: a decode group's (message_gates), one gate's in prefill, none unlooped.
  const int64_t gates = c.v2.loop_passes > 1 ? (T <= kFewMaxTokens ? kGateGroup : 1) : 0;
  Arena a;
  a.T = T, a.H = H;
  struct Part {
    float** p;
    int64_t n;
  };
  const Part parts[] = {{&a.partial, T * H},
                        {&a.saved, T * H},
                        {&a.blocks, nb * T * H},
                        {&a.prev, (nb + 1) * T * H},
                        {&a.xq, T * H},
                        {&a.xk, T * H},
                        {&a.xv, T * H},
                        {&a.y, T * H},
                        {&a.msg, 4 * T * H},
                        {&a.gcat, gates * T * 2 * H},
                        {&a.glow, gates * T * c.v2.loop_rank},
                        {&a.src, (nb + 1) * H},
                        {&a.q, T * qw},
                        {&a.k, T * kvw},
                        {&a.v, T * kvw},
                        {&a.r, T * rw},
                        {&a.sink, T * nh},
                        {&a.gate, T * qw},
                        {&a.att, T * qw},
                        {&a.dyn, 2 * T * dw}};
  int64_t total = 0;
  for (const Part& p : parts) total += p.n;
  if (buf.size() < size_t(total)) buf.resize(size_t(total));
  int64_t off = 0;
  for (const Part& p : parts) *p.p = buf.data() + off, off += p.n;
  return a;
}

// Block attention residual (spec 3.2) for every row: sources = n_blk rows of `blocks` (row t of
// source b at blocks + (b T + t) H) and `partial`, each RMS-normalised (eps 1e-6); out[j] row t =
// sum_s softmax_s(query_j . src_s / sqrt(H)) src_s, for the nq queries [nq, H].
void attn_res(const float* query, int nq, const float* blocks, int n_blk, const float* partial,
              const Arena& A, float* const* out) {
  const int64_t T = A.T, H = A.H, n = n_blk + 1;
  const float scale = float(1.0 / std::sqrt(double(H)));
  float* src = A.src;
  thread_local std::vector<float> p;
  p.resize(size_t(n));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t b = 0; b < n; ++b)
      std::memcpy(src + b * H, b < n_blk ? blocks + (b * T + t) * H : partial + t * H,
                  size_t(H) * sizeof(float));
    rms_norm_rows(src, nullptr, n, H, 1e-6, src);
    for (int j = 0; j < nq; ++j) {
      const float* qj = query + j * H;
      float mx = -INFINITY;
      for (int64_t b = 0; b < n; ++b) {
        float d = 0;
        for (int64_t h = 0; h < H; ++h) d += qj[h] * src[b * H + h];
        p[size_t(b)] = d * scale;
        mx = std::max(mx, p[size_t(b)]);
      }
      float sum = 0;
      for (float& v : p) sum += (v = std::exp(v - mx));
      float* o = out[j] + t * H;
      std::fill(o, o + H, 0.f);
      for (int64_t b = 0; b < n; ++b) {
        const float w = p[size_t(b)] / sum;
        for (int64_t h = 0; h < H; ++h) o[h] += w * src[b * H + h];
      }
    }
  }
}

// One message gate's streams (spec 4.2): out = (1 - tanh(F g)) h + tanh(G g) m with
// g = down(rms(h) ++ rms(m)).
struct GateIo {
  const Inkling2Gate* gate;
  const float* h;
  const float* m;
  float* out;
};

// The gates of `io` (at most kGateGroup, above): at decode together (a visit's q, k and v gates
// share each hand-out to the pool), in prefill one after another in the arena's first gate buffers.
// Every h of a group is normed before any output is written and the mixes run in order, so an
// out may alias its own h or the h of an earlier gate: the same bits either way.
void message_gates(const ModelConfig& c, std::span<const GateIo> io, const Arena& A,
                   ThreadPool* pool) {
  const int64_t T = A.T, H = A.H, R = c.v2.loop_rank;
  if (T > kFewMaxTokens && io.size() > 1) {
    for (const GateIo& g : io) message_gates(c, {&g, 1}, A, pool);
    return;
  }
  MatmulJob down[kGateGroup], fg[2 * kGateGroup];
  for (size_t i = 0; i < io.size(); ++i) {
    float* gc = A.gcat + int64_t(i) * T * 2 * H;  // rms(h) ++ rms(m), then F g ++ G g
    float* gl = A.glow + int64_t(i) * T * R;
    for (int64_t t = 0; t < T; ++t) {
      rms_norm_rows(io[i].h + t * H, nullptr, 1, H, c.rms_eps, gc + t * 2 * H);
      rms_norm_rows(io[i].m + t * H, nullptr, 1, H, c.rms_eps, gc + t * 2 * H + H);
    }
    down[i] = {gc, T, 2 * H, &io[i].gate->down, gl, R};
    fg[2 * i] = {gl, T, R, &io[i].gate->forget, gc, 2 * H};
    fg[2 * i + 1] = {gl, T, R, &io[i].gate->gain, gc + H, 2 * H};
  }
  matmul_each(down, io.size(), pool);
  matmul_each(fg, 2 * io.size(), pool);
  for (size_t i = 0; i < io.size(); ++i) {
    const float* gc = A.gcat + int64_t(i) * T * 2 * H;
    for (int64_t t = 0; t < T; ++t)  // row by row, so the tail of a row is the same at any T
      tanh_gate_mix(gc + t * 2 * H, gc + t * 2 * H + H, io[i].h + t * H, io[i].m + t * H, H,
                    io[i].out + t * H);
  }
}

// Static short conv with Inkling 2's output scale: (conv(u) + u) / sqrt(K + 1), per segment.
void post_conv(const ModelConfig& c, const std::vector<float>& w,
               std::span<const LayerSegment> segs, bool mlp, int64_t C, float* u) {
  const float div = float(std::sqrt(double(c.conv_k + 1)));
  int64_t off = 0;
  for (const LayerSegment& g : segs) {
    float* st = (mlp ? g.cache->conv_mlp : g.cache->conv_attn).data();
    short_conv(u + off * C, g.n, C, w.data(), c.conv_k, st, u + off * C);
    off += g.n;
  }
  const int64_t T = off;
  for (int64_t i = 0; i < T * C; ++i) u[i] /= div;
}

// Attention (spec 3.3-3.5) of the normed streams xq, xk, xv [T, H] -> A.y [T, H].
void attention_block(const ModelConfig& c, const Inkling2Layer& L, const LayerSpec& spec,
                     const float* xq, const float* xk, const float* xv,
                     std::span<const LayerSegment> segs, const Arena& A, ThreadPool* pool) {
  const int64_t T = A.T, H = A.H, nh = spec.n_heads, nkv = spec.n_kv_heads, hd = spec.head_dim;
  const int64_t qw = nh * hd, kvw = nkv * hd, rw = nh * c.d_rel, K = c.conv_k;
  // Every product of the normed streams at once (one hand-out to the pool at decode); the output
  // gate's too.
  const int64_t dw = nkv * K;
  const MatmulJob jobs[8] = {
      {xq, T, H, &L.q, A.q, qw},       {xk, T, H, &L.k, A.k, kvw},
      {xv, T, H, &L.v, A.v, kvw},      {xq, T, H, &L.r, A.r, rw},
      {xq, T, H, &L.sink, A.sink, nh}, {xq, T, H, &L.gate, A.gate, qw},
      {xk, T, H, &L.k_dyn, A.dyn, dw}, {xv, T, H, &L.v_dyn, A.dyn + T * dw, dw}};
  matmul_each(jobs, spec.sliding ? 6 : 8, pool);
  l2_clip_rows(A.q, L.q_scale.data(), nh, T * nh, hd, float(c.v2.qk_clip), A.q);
  // K/V short convs per segment (their states are the cache's conv_k / conv_v).
  for (int which = 0; which < 2; ++which) {
    float* u = which == 0 ? A.k : A.v;
    const std::vector<float>& w = which == 0 ? L.k_conv : L.v_conv;
    const float* dyn = A.dyn + which * T * dw;
    int64_t off = 0;
    for (const LayerSegment& g : segs) {
      float* st = (which == 0 ? g.cache->conv_k : g.cache->conv_v).data();
      if (spec.sliding)
        short_conv(u + off * kvw, g.n, kvw, w.data(), K, st, u + off * kvw);
      else
        dynamic_short_conv(u + off * kvw, g.n, kvw, w.data(), dyn + off * dw, hd, K, st,
                           u + off * kvw);
      off += g.n;
    }
    const float div = float(std::sqrt(double(spec.sliding ? K + 1 : 2 * K + 1)));
    for (int64_t i = 0; i < T * kvw; ++i) u[i] /= div;
  }
  l2_clip_rows(A.k, nullptr, 1, T * nkv, hd, float(c.v2.qk_clip), A.k);
  rms_norm_rows(A.v, nullptr, T * nkv, hd, c.rms_eps, A.v);
  l2_clip_rows(A.r, L.r_scale.data(), nh, T * nh, c.d_rel, float(c.v2.rel_clip), A.r);

  AttentionShape shape;
  shape.n_heads = int(nh);
  shape.n_kv_heads = int(nkv);
  shape.head_dim = int(hd);
  shape.d_rel = c.d_rel;
  shape.rel_extent = spec.rel_extent;
  shape.window = spec.sliding ? c.window : 0;
  // Full layers scale the clipped q and relative states by tau: the kernel's log temperature.
  shape.log_floor = spec.sliding ? 0.0 : c.log_floor.value_or(0.0);
  shape.log_alpha = c.log_alpha;
  shape.scale = float(1.0 / std::sqrt(double(hd)));
  int64_t off = 0;
  for (const LayerSegment& g : segs) {
    LayerCache& cache = *g.cache;
    const KvView kv = cache.reserve(g.pos + g.n);
    for (int64_t t = 0; t < g.n; ++t)
      cache.put(g.pos + t, A.k + (off + t) * kvw, A.v + (off + t) * kvw);
    shape.sinks = A.sink + off * nh;
    attention(A.q + off * qw, A.r + off * rw, g.n, g.pos, kv, L.rel_proj.data(), shape,
              A.att + off * qw, pool);
    off += g.n;
  }
  for (int64_t t = 0; t < T; ++t)  // row by row: the same bits at any T
    sigmoid_gate(A.att + t * qw, A.gate + t * qw, qw);
  matmul(A.att, T, qw, L.o, A.y, H, pool);
}

// One layer visit. msgs: [4][T, H] (q, k, v, mlp messages) in later loop passes, else null.
void layer_visit(const ModelConfig& c, const Inkling2Layer& L, const LayerSpec& spec, int li,
                 const float* msgs, std::span<const LayerSegment> segs, Arena& A, int* n_blk,
                 Scratch& s, ThreadPool* pool, const Tap& tap) {
  const int64_t T = A.T, H = A.H, n = T * H;
  const bool boundary = li % c.v2.block == 0;
  const float *qin = A.partial, *kin = A.partial, *vin = A.partial;
  if (!L.attn_query.empty()) {
    if (spec.sliding) {
      float* outs[1] = {A.xq};
      attn_res(L.attn_query.data(), 1, A.blocks, *n_blk, A.partial, A, outs);
      qin = kin = vin = A.xq;
    } else {
      float* outs[3] = {A.xq, A.xk, A.xv};
      attn_res(L.attn_query.data(), 3, A.blocks, *n_blk, A.partial, A, outs);
      qin = A.xq, kin = A.xk, vin = A.xv;
    }
  }
  const float *xq = nullptr, *xk = nullptr, *xv = nullptr;
  if (msgs) {  // the gates give each stream its own input (k and v first: q may alias them)
    const GateIo io[3] = {{&L.gates[1], kin, msgs + 1 * n, A.xk},
                          {&L.gates[2], vin, msgs + 2 * n, A.xv},
                          {&L.gates[0], qin, msgs + 0 * n, A.xq}};
    message_gates(c, io, A, pool);
    qin = A.xq, kin = A.xk, vin = A.xv;
  }
  if (spec.sliding) {
    rms_norm_rows(qin, L.in_norm.data(), T, H, c.rms_eps, A.xq);
    xq = xk = xv = A.xq;
    if (msgs) {
      rms_norm_rows(kin, L.in_norm.data(), T, H, c.rms_eps, A.xk);
      rms_norm_rows(vin, L.in_norm.data(), T, H, c.rms_eps, A.xv);
      xk = A.xk, xv = A.xv;
    }
  } else {  // v and k before q: q's input may be the partial that xq must not overwrite first
    rms_norm_rows(vin, L.v_norm.data(), T, H, c.rms_eps, A.xv);
    rms_norm_rows(kin, L.k_norm.data(), T, H, c.rms_eps, A.xk);
    rms_norm_rows(qin, L.q_norm.data(), T, H, c.rms_eps, A.xq);
    xq = A.xq, xk = A.xk, xv = A.xv;
  }
  attention_block(c, L, spec, xq, xk, xv, segs, A, pool);
  tap("self_attn", A.y, {T, H});
  post_conv(c, L.attn_conv, segs, /*mlp=*/false, H, A.y);
  if (boundary) {
    std::memcpy(A.block((*n_blk)++), A.partial, size_t(n) * sizeof(float));
    std::memcpy(A.partial, A.y, size_t(n) * sizeof(float));
  } else {
    for (int64_t i = 0; i < n; ++i) A.partial[i] += A.y[i];
  }
  float* outs[1] = {A.xq};
  attn_res(L.mlp_query.data(), 1, A.blocks, *n_blk, A.partial, A, outs);
  if (msgs) {
    const GateIo io{&L.gates[3], A.xq, msgs + 3 * n, A.xq};
    message_gates(c, {&io, 1}, A, pool);
  }
  rms_norm_rows(A.xq, L.mlp_norm.data(), T, H, c.rms_eps, s.a.data());
  moe_block(c, L.moe, s.a.data(), T, s, A.y, pool, tap);
  tap("mlp", A.y, {T, H});
  post_conv(c, L.mlp_conv, segs, /*mlp=*/true, H, A.y);
  for (int64_t i = 0; i < n; ++i) A.partial[i] += A.y[i];
}

}  // namespace

void inkling2_trunk(const Model& m, const Segment* segs, size_t n_segs, float* x, Scratch& s,
                    ThreadPool* pool, const Tap& tap) {
  const ModelConfig& c = m.config;
  const Inkling2Weights& w = m.weights.v2;
  int64_t T = 0;
  for (size_t i = 0; i < n_segs; ++i) T += segs[i].n;
  Arena A = carve(c, T, s.v2);
  const int64_t H = c.hidden, n = T * H;
  std::memcpy(A.partial, x, size_t(n) * sizeof(float));
  int n_blk = 0, saved_blk = 0, n_prev = 0;
  if (s.layer_segs.size() < n_segs) s.layer_segs.resize(n_segs);
  const std::span<LayerSegment> ls(s.layer_segs.data(), n_segs);
  const int core = c.v2.loop_start;
  int visit = 0;
  for (const ModelConfig::Visit& v : c.schedule()) {
    if (v.pass >= 1 && v.layer == core) {
      if (v.pass == 1) {  // the prelude's output: every pass restarts from it
        std::memcpy(A.saved, A.partial, size_t(n) * sizeof(float));
        saved_blk = n_blk;
      } else {  // the previous pass's sources (minus the prelude's and its first push)
        n_prev = n_blk - saved_blk - 1;
        std::memcpy(A.prev, A.block(saved_blk + 1), size_t(n_prev * n) * sizeof(float));
        std::memcpy(A.prev + n_prev * n, A.partial, size_t(n) * sizeof(float));
        std::memcpy(A.partial, A.saved, size_t(n) * sizeof(float));
        n_blk = saved_blk;
      }
    }
    const float* msgs = nullptr;
    if (v.pass >= 2) {
      float* outs[4] = {A.msg, A.msg + n, A.msg + 2 * n, A.msg + 3 * n};
      attn_res(w.message_query.data() + size_t(v.layer - core) * 4 * size_t(H), 4, A.prev, n_prev,
               A.prev + n_prev * n, A, outs);
      msgs = A.msg;
    }
    for (size_t i = 0; i < n_segs; ++i)
      ls[i] = {&segs[i].state->layers[size_t(v.slot)], segs[i].state->pos, segs[i].n, nullptr};
    const Tap lt = tap ? tap.sub("visits." + std::to_string(visit) + ".") : Tap{};
    layer_visit(c, w.layers[size_t(v.layer)], c.layers[size_t(v.layer)], v.layer, msgs, ls, A,
                &n_blk, s, pool, lt);
    ++visit;
  }
  float* outs[1] = {x};
  attn_res(w.final_query.data(), 1, A.blocks, n_blk, A.partial, A, outs);
}

}  // namespace inkling
