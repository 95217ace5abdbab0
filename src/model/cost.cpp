// Roofline bookkeeping from ModelConfig: what a decode token must read and what a prefill token
// must compute. Counts follow the forward pass in forward.cpp / moe.cpp term by term.
#include "model/cost.h"

#include <algorithm>
#include <cstdio>

namespace inkling {

namespace {

struct LayerDims {
  double attn_mac = 0;  // q/k/v/r/o weight elements (= MACs per token)
  double kvw = 0;       // n_kv * head_dim
  double nh = 0, hd = 0;
};

LayerDims dims(const ModelConfig& c, const LayerSpec& l) {
  LayerDims d;
  const double H = c.hidden;
  d.nh = l.n_heads;
  d.hd = l.head_dim;
  d.kvw = double(l.n_kv_heads) * l.head_dim;
  const double qw = d.nh * d.hd, rw = d.nh * c.d_rel;
  d.attn_mac = H * (qw + 2 * d.kvw + rw) + qw * H;
  if (c.family == Family::kInkling2)  // sink logits, the output gate, full layers' dynamic taps
    d.attn_mac += H * (d.nh + qw) + (l.sliding ? 0.0 : 2.0 * l.n_kv_heads * c.conv_k * H);
  return d;
}

double expert_mac(const ModelConfig& c) {
  return 3.0 * double(c.moe_width) * c.hidden;
}

// Keys attended by the query at 0-based position t.
double keys_at(const ModelConfig& c, const LayerSpec& l, int64_t t) {
  return l.sliding ? double(std::min<int64_t>(t + 1, c.window)) : double(t + 1);
}

// Bytes of the small f32 tensors of one layer (norms, convs, rel table).
double small_layer_bytes(const ModelConfig& c, const LayerSpec& l, const LayerDims& d) {
  const double H = c.hidden, K = c.conv_k;
  return 4.0 * (2 * H + 2 * H * K + 2 * d.kvw * K + 2 * d.hd + double(c.d_rel) * l.rel_extent);
}

}  // namespace

TokenCost decode_cost(const ModelConfig& c, const WeightBytes& wb, int64_t context) {
  TokenCost t;
  const double H = c.hidden;
  for (const LayerSpec& l : c.cache_slots()) {  // every layer visit (Inkling 2 Mini: 48)
    const LayerDims d = dims(c, l);
    t.attn_weight_bytes += d.attn_mac * wb.attention;
    if (l.dense) {
      t.mlp_weight_bytes += 3.0 * double(c.dense_width) * H * wb.dense_mlp;
    } else {
      t.mlp_weight_bytes += double(c.n_routed + c.n_shared) * H * wb.router;
      t.mlp_weight_bytes += double(c.top_k) * expert_mac(c) * wb.expert;
      t.mlp_weight_bytes += double(c.n_shared) * expert_mac(c) * wb.shared;
    }
    t.small_bytes += small_layer_bytes(c, l, d);
    t.kv_bytes += 2.0 * d.kvw * wb.kv * keys_at(c, l, context);
    t.state_bytes += 2.0 * 4.0 * double(c.conv_k - 1) * (2 * d.kvw + 2 * H);
  }
  // Inkling 2's looped core: each visit of pass 2 or later runs four message gates (q, k, v,
  // MoE input), each reading down [rank, 2H], forget [H, rank] and gain [H, rank] (Mini in bf16:
  // 96 gates, 113 MB a token).
  if (c.family == Family::kInkling2 && c.v2.loop_passes > 1)
    for (const ModelConfig::Visit& v : c.schedule())
      if (v.pass >= 2) t.attn_weight_bytes += 4.0 * double(c.v2.loop_rank) * 4 * H * wb.gates;
  t.head_bytes = double(c.unpadded_vocab) * H * wb.head + H * wb.embed;
  t.small_bytes += 4.0 * 2 * H;
  return t;
}

TokenCost prefill_cost(const ModelConfig& c, int64_t prompt) {
  TokenCost t;
  const double H = c.hidden, L = double(std::max<int64_t>(prompt, 1));
  for (const LayerSpec& l : c.cache_slots()) {
    const LayerDims d = dims(c, l);
    double mac = d.attn_mac;
    if (l.dense)
      mac += 3.0 * double(c.dense_width) * H;
    else
      mac += double(c.n_routed + c.n_shared) * H + double(c.top_k + c.n_shared) * expert_mac(c);
    t.matmul_flops += 2.0 * mac;
    double keys = 0;
    for (int64_t p = 0; p < prompt; ++p) keys += keys_at(c, l, p);
    // per attended key and head: q.k and p.v (2*hd MACs) and the bias dot (d_rel MACs)
    t.attention_flops += 2.0 * keys / L * d.nh * (2.0 * d.hd + c.d_rel);
  }
  t.matmul_flops += 2.0 * double(c.unpadded_vocab) * H / L;
  return t;
}

std::string TokenCost::describe() const {
  char buf[640];
  std::snprintf(buf, sizeof buf,
                "  attention weights %10.1f MB\n  mlp/moe weights   %10.1f MB\n"
                "  lm_head + embed   %10.1f MB\n  small tensors     %10.1f MB\n"
                "  kv cache reads    %10.1f MB\n  conv states       %10.1f MB\n"
                "  total bytes/token %10.1f MB\n  matmul FLOPs      %10.2f GFLOP\n"
                "  attention FLOPs   %10.2f GFLOP\n",
                attn_weight_bytes / 1e6, mlp_weight_bytes / 1e6, head_bytes / 1e6,
                small_bytes / 1e6, kv_bytes / 1e6, state_bytes / 1e6, bytes_per_token() / 1e6,
                matmul_flops / 1e9, attention_flops / 1e9);
  return buf;
}

}  // namespace inkling
