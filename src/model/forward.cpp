// The forward pass: embed -> embed_norm -> layers (model/layer.cpp; Inkling 2: its trunk,
// model/inkling2/forward.cpp) -> norm -> /mup (Inkling) -> lm_head (-> softcap, Inkling 2),
// and the scratch buffers it runs in.
#include <algorithm>
#include <cmath>

#include "model/inkling2/forward.h"
#include "model/layer.h"
#include "model/model.h"
#include "ops/activations.h"
#include "ops/formats.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/quant.h"

namespace inkling {

namespace {

// Every scratch buffer and its element count, in one place: make() resizes them, footprint()
// only adds them up. `f(vector, n)` is called once per buffer.
template <typename F>
void scratch_layout(Scratch& s, const ModelConfig& c, int64_t chunk, F&& f) {
  int64_t qw = 0, kvw = 0, rw = 0;
  std::vector<LayerSpec> all = c.layers;  // the trunk's layers and the MTP depths
  all.insert(all.end(), c.mtp.depths.begin(), c.mtp.depths.end());
  for (const LayerSpec& l : all) {
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

void forward_batch(const Model& m, const Segment* segs, size_t n_segs, Scratch& s, ThreadPool* pool,
                   ActivationObserver* observer) {
  const ModelConfig& c = m.config;
  const Weights& w = m.weights;
  const int64_t H = c.hidden, V = c.unpadded_vocab;
  int64_t T = 0;
  for (size_t i = 0; i < n_segs; ++i) T += segs[i].n;
  INK_CHECK(T > 0 && T <= s.chunk);
  // A batch of decode / verify segments: every row gets the bits it gets alone (ops/matmul.h).
  bool small = n_segs > 1;
  for (size_t i = 0; i < n_segs; ++i) small = small && segs[i].n <= kFewMaxTokens;
  const RowInvariantScope row_invariant(small);
  const Tap tap{observer, ""};
  float* x = s.x.data();
  int64_t off = 0;
  for (size_t i = 0; i < n_segs; ++i)
    for (int64_t t = 0; t < segs[i].n; ++t, ++off)
      dequant_row(w.embed, segs[i].tokens[t], x + off * H);  // any storage format
  tap("embed", x, {T, H});
  rms_norm_rows(x, w.embed_norm.data(), T, H, c.rms_eps, x);
  off = 0;
  for (size_t i = 0; i < n_segs; off += segs[i].n, ++i)
    for (int64_t t = 0; segs[i].embeds && t < segs[i].n; ++t)
      if (segs[i].embeds[t]) std::copy_n(segs[i].embeds[t], H, x + (off + t) * H);
  tap("embed_norm", x, {T, H});
  if (s.layer_segs.size() < n_segs) s.layer_segs.resize(n_segs);
  const std::span<LayerSegment> ls(s.layer_segs.data(), n_segs);
  if (c.family == Family::kInkling2) inkling2_trunk(m, segs, n_segs, x, s, pool, tap);
  for (int l = 0; c.family == Family::kInkling && l < c.n_layers; ++l) {
    for (size_t i = 0; i < n_segs; ++i)
      ls[i] = {&segs[i].state->layers[size_t(l)], segs[i].state->pos, segs[i].n,
               segs[i].trace ? &segs[i].trace[l] : nullptr};
    const Tap layer_tap = tap ? Tap{observer, "layers." + std::to_string(l) + "."} : Tap{};
    forward_layer(c, c.layers[size_t(l)], w.layers[size_t(l)], x, ls, s, pool, layer_tap);
    if (layer_tap) tap(("layers." + std::to_string(l)).c_str(), x, {T, H});
  }
  for (size_t i = 0; i < n_segs; ++i) segs[i].state->pos += segs[i].n;

  // Rows that need an output: the final hidden state as is, then the final norm, then divided by
  // the muP multiplier (a true division, as transformers does) the head over the unpadded
  // vocabulary only, in one matmul.
  float* h = s.a.data();
  int64_t rows = 0;
  off = 0;
  for (size_t i = 0; i < n_segs; ++i) {
    const Segment& g = segs[i];
    const int64_t first = g.all_positions ? 0 : g.n - 1;
    if (g.hidden) std::copy_n(x + (off + first) * H, (g.n - first) * H, g.hidden);
    if (g.logits || g.hidden_normed) {
      std::copy_n(x + (off + first) * H, (g.n - first) * H, h + rows * H);
      rows += g.n - first;
    }
    off += g.n;
  }
  if (rows == 0) return;
  rms_norm_rows(h, w.final_norm.data(), rows, H, c.rms_eps, h);
  tap("norm", h, {rows, H});
  // Normed rows out; then the head's rows packed in place at the front of h (each segment with
  // logits gives all of its rows or its last one): the head runs over those rows only.
  auto logit_rows = [](const Segment& g) {
    return g.all_positions && !g.last_logits_only ? g.n : int64_t(1);
  };
  int64_t r = 0, head_rows = 0;
  for (size_t i = 0; i < n_segs; ++i) {
    const Segment& g = segs[i];
    if (!g.logits && !g.hidden_normed) continue;
    const int64_t n_rows = g.all_positions ? g.n : 1;
    if (g.hidden_normed) std::copy_n(h + r * H, n_rows * H, g.hidden_normed);
    if (g.logits) {
      const int64_t lr = logit_rows(g);
      const float* src = h + (r + n_rows - lr) * H;
      std::copy(src, src + lr * H, h + head_rows * H);  // never moves a row later
      head_rows += lr;
    }
    r += n_rows;
  }
  if (head_rows == 0) return;
  const float mup = float(c.mup_divisor);
  if (mup != 1.f)
    for (int64_t i = 0; i < head_rows * H; ++i) h[i] /= mup;
  const MatView head = w.lm_head.slice_rows(0, V);
  const bool direct = n_segs == 1 && segs[0].logits;  // write straight into its output
  if (!direct && s.logits.size() < size_t(head_rows * V)) s.logits.resize(size_t(head_rows * V));
  float* dst = direct ? segs[0].logits : s.logits.data();
  matmul(h, head_rows, H, head, dst, V, pool);
  if (c.family == Family::kInkling2) {  // Inkling 2's head softcap: cap tanh(z / cap)
    const float cap = float(c.v2.logit_cap);
    for (int64_t r = 0; r < head_rows; ++r) softcap(dst + r * V, V, cap);  // row by row: invariant
  }
  tap("logits", dst, {head_rows, V});
  if (direct) return;
  r = 0;
  for (size_t i = 0; i < n_segs; ++i) {
    const Segment& g = segs[i];
    if (!g.logits) continue;
    const int64_t lr = logit_rows(g);
    std::copy_n(dst + r * V, lr * V, g.logits);
    r += lr;
  }
}

}  // namespace inkling
