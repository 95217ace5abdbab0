// MoE branch. Routed experts visit their tokens in ascending expert id, so every token receives
// its contributions in the order transformers' index_add_ applies them.
#include "model/moe.h"

#include "model/expert_executor.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "ops/activations.h"
#include "ops/matmul.h"
#include "ops/moe.h"

namespace inkling {

namespace {

// The gate and up products of x [T, H] into gu [T, 2W] as matmul jobs at jobs (one over the
// joined halves, interleaved g0 u0 g1 u1 ... or as halves, else one each). Returns the number of
// jobs; *interleaved says the layout.
int gate_up_jobs(const SwiGluWeights& w, const float* x, int64_t T, int64_t H, int64_t W, float* gu,
                 MatView* whole, MatmulJob* jobs, bool* interleaved) {
  *interleaved = false;
  // Joined halves whose load-time tiles are not one run would regroup per call: keep the halves.
  if (join_halves(w.gate, w.up, whole, interleaved) && (whole->tiles || !w.gate.tiles)) {
    jobs[0] = {x, T, H, whole, gu, 2 * W};
    return 1;
  }
  *interleaved = false;  // join_halves may have said the halves interleave: gu holds them apart
  jobs[0] = {x, T, H, &w.gate, gu, 2 * W};
  jobs[1] = {x, T, H, &w.up, gu + W, 2 * W};
  return 2;
}

// h[t, i] = silu(g) * u (Inkling 2: the softcapped form), times row_scale[t * scale_stride] when
// given, written over gu in place as [T, W]: position t * W + i never passes the unread pairs at
// t * 2W + 2i or t * 2W + W + i.
void activate(const SwiGluWeights& w, float* gu, int64_t T, int64_t W, bool interleaved,
              const float* row_scale, int64_t scale_stride) {
  const int64_t gs = interleaved ? 2 : 1, uoff = interleaved ? 1 : W;
  for (int64_t t = 0; t < T; ++t) {
    const float* row = gu + t * 2 * W;
    float* h = gu + t * W;
    const float sc = row_scale ? row_scale[t * scale_stride] : 1.f;
    if (w.gate_cap > 0) {  // Inkling 2: the softcaps bound the linear gate factor and up
      softcapped_swiglu(row, W, interleaved, w.gate_cap, w.up_cap, sc, h);
      continue;
    }
    for (int64_t i = 0; i < W; ++i) {
      const float g = row[i * gs], u = row[i * gs + uoff];
      const float v = g / (1.f + std::exp(-g)) * u;
      h[i] = row_scale ? v * sc : v;
    }
  }
}

}  // namespace

void swiglu(const SwiGluWeights& w, const float* x, int64_t T, int64_t H, int64_t W, float* gu,
            const float* row_scale, int64_t scale_stride, float* out, ThreadPool* pool) {
  MatView whole;
  MatmulJob jobs[2];
  bool interleaved = false;
  const int n = gate_up_jobs(w, x, T, H, W, gu, &whole, jobs, &interleaved);
  matmul_each(jobs, size_t(n), pool);
  activate(w, gu, T, W, interleaved, row_scale, scale_stride);
  matmul(gu, T, W, w.down, out, H, pool);
}

namespace {

// Step 1: router logits and the per-token choice of experts and weights.
void route_tokens(const ModelConfig& c, const MoeWeights& w, const float* m, int64_t T, Scratch& s,
                  ThreadPool* pool, const Tap& tap) {
  const int64_t E = c.n_routed, S = c.n_shared, k = c.top_k;
  matmul(m, T, c.hidden, w.router, s.router_logits.data(), E + S, pool);
  RouteParams p{c.n_routed,           c.n_shared,     c.top_k,
                float(c.route_scale), w.router_scale, c.family == Family::kInkling2};
  for (int64_t t = 0; t < T; ++t)
    route(s.router_logits.data() + t * (E + S), w.router_bias.data(), p, s.route_idx.data() + t * k,
          s.route_w.data() + t * k, s.route_gamma.data() + t * S);
  if (!tap) return;
  if (tap.wants("router_logits")) {  // the routed columns only, as transformers returns them
    std::vector<float> routed(size_t(T * E));
    for (int64_t t = 0; t < T; ++t)
      std::memcpy(routed.data() + t * E, s.router_logits.data() + t * (E + S),
                  size_t(E) * sizeof(float));
    tap("router_logits", routed.data(), {T, E});
  }
  tap.ids("router_topk_ids", s.route_idx.data(), {T, k});  // ascending per token, as dumped
  tap("router_topk_weights", s.route_w.data(), {T, k});
  tap("router_shared_gammas", s.route_gamma.data(), {T, S});
}

// Expert e's token slots (t * k + j where route_idx chose e) into expert_tokens from `first`,
// and their input rows into moe_in at the same rows. Returns how many.
int64_t gather_expert(const ModelConfig& c, int64_t e, const float* m, int64_t T, int64_t first,
                      Scratch& s) {
  const int64_t H = c.hidden, k = c.top_k;
  int64_t n = first;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k; ++j)
      if (s.route_idx[size_t(t * k + j)] == e) s.expert_tokens[size_t(n++)] = int32_t(t * k + j);
  for (int64_t i = first; i < n; ++i)
    std::memcpy(s.moe_in.data() + i * H, m + (s.expert_tokens[size_t(i)] / k) * H,
                size_t(H) * sizeof(float));
  return n - first;
}

// out[token] += route weight x moe_out row, for the n slots of expert_tokens from `first`.
void add_expert(const ModelConfig& c, int64_t first, int64_t n, const Scratch& s, float* out) {
  const int64_t H = c.hidden, k = c.top_k;
  for (int64_t i = first; i < first + n; ++i) {
    const int32_t slot = s.expert_tokens[size_t(i)];
    const float wt = s.route_w[size_t(slot)];
    float* o = out + (slot / k) * H;
    const float* y = s.moe_out.data() + i * H;
    for (int64_t h = 0; h < H; ++h) o[h] += y[h] * wt;
  }
}

// Step 2 when the scratch holds every token slot: every chosen expert's gate/up products in one
// matmul_many, the activations, every down product in another, then the same weighted sums in
// ascending expert id as below: the same bits as one expert after another, with two waits for
// the slower thread per MoE layer instead of two per expert.
void experts_grouped(const ModelConfig& c, const MoeWeights& w, const float* m, int64_t T,
                     Scratch& s, float* out, ThreadPool* pool) {
  const int64_t H = c.hidden, I = c.moe_width, k = c.top_k;
  struct Group {
    int64_t e, first, n;  // expert, its first slot in expert_tokens, its token count
    bool interleaved;
  };
  thread_local std::vector<Group> groups;
  thread_local std::vector<MatView> wholes;
  thread_local std::vector<MatmulJob> jobs;
  groups.clear(), jobs.clear();
  wholes.assign(size_t(std::min<int64_t>(T * k, c.n_routed)), MatView{});
  int64_t first = 0;
  for (int64_t e = 0; e < c.n_routed; ++e) {
    const int64_t n = gather_expert(c, e, m, T, first, s);
    if (n == 0) continue;
    MatmulJob two[2];
    bool il = false;
    const int nj = gate_up_jobs(w.routed[size_t(e)], s.moe_in.data() + first * H, n, H, I,
                                s.moe_gu.data() + first * 2 * I, &wholes[groups.size()], two, &il);
    jobs.insert(jobs.end(), two, two + nj);
    groups.push_back({e, first, n, il});
    first += n;
  }
  matmul_many(jobs.data(), jobs.size(), pool);
  jobs.clear();
  for (const Group& g : groups) {
    float* gu = s.moe_gu.data() + g.first * 2 * I;
    activate(w.routed[size_t(g.e)], gu, g.n, I, g.interleaved, nullptr, 0);
    jobs.push_back({gu, g.n, I, &w.routed[size_t(g.e)].down, s.moe_out.data() + g.first * H, H});
  }
  matmul_many(jobs.data(), jobs.size(), pool);
  for (const Group& g : groups) add_expert(c, g.first, g.n, s, out);
}

// Step 2: each chosen expert runs once over all of its tokens; weighted results are added into
// out [T, H] (zeroed here). With an executor attached (expert parallelism) it does the same
// elsewhere and combines in the same order.
void experts(const ModelConfig& c, const MoeWeights& w, const float* m, int64_t T, Scratch& s,
             float* out, ThreadPool* pool) {
  const int64_t H = c.hidden, I = c.moe_width, k = c.top_k;
  if (w.executor) {
    w.executor->run(w, m, T, H, s.route_idx.data(), s.route_w.data(), c.top_k, out, pool);
    return;
  }
  std::memset(out, 0, size_t(T * H) * sizeof(float));
  const size_t slots = size_t(T * k);  // few tokens (decode, batched decode, short chunks)
  if (slots <= s.expert_tokens.size() && slots * size_t(H) <= s.moe_in.size() &&
      slots * size_t(H) <= s.moe_out.size() && slots * size_t(2 * I) <= s.moe_gu.size()) {
    experts_grouped(c, w, m, T, s, out, pool);
    return;
  }
  for (int64_t e = 0; e < c.n_routed; ++e) {
    const int64_t n = gather_expert(c, e, m, T, 0, s);
    if (n == 0) continue;
    swiglu(w.routed[size_t(e)], s.moe_in.data(), n, H, I, s.moe_gu.data(), nullptr, 0,
           s.moe_out.data(), pool);
    add_expert(c, 0, n, s, out);
  }
}

// Step 3: shared experts (gamma before the down projection, summed in f32) added to the routed sum.
void combine(const ModelConfig& c, const MoeWeights& w, const float* m, int64_t T, Scratch& s,
             float* out, ThreadPool* pool, const Tap& tap) {
  const int64_t H = c.hidden, I = c.moe_width, S = c.n_shared;
  if (S == 0) return;
  float* shared = s.y.data();
  for (int64_t e = 0; e < S; ++e) {
    float* dst = e == 0 ? shared : s.moe_out.data();
    swiglu(w.shared[size_t(e)], m, T, H, I, s.gu.data(), s.route_gamma.data() + e, S, dst, pool);
    if (e > 0)
      for (int64_t i = 0; i < T * H; ++i) shared[i] += dst[i];
  }
  tap("mlp.shared_experts", shared, {T, H});
  for (int64_t i = 0; i < T * H; ++i) out[i] += shared[i];
}

}  // namespace

int64_t run_routed_expert(const SwiGluWeights& w, int32_t e, const float* m, int64_t T, int64_t H,
                          const int32_t* idx, int k, ExpertBuffers& b, float* y,
                          const int32_t* place, ThreadPool* pool) {
  const int64_t I = w.gate.rows;
  b.slots.clear();
  for (int64_t t = 0; t < T; ++t)
    for (int j = 0; j < k; ++j)
      if (idx[t * k + j] == e) b.slots.push_back(int32_t(t * k + j));
  const int64_t n = int64_t(b.slots.size());
  if (n == 0) return 0;
  if (b.in.size() < size_t(n * H)) b.in.resize(size_t(n * H)), b.out.resize(size_t(n * H));
  if (b.gu.size() < size_t(n * 2 * I)) b.gu.resize(size_t(n * 2 * I));
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(b.in.data() + i * H, m + (b.slots[size_t(i)] / k) * H, size_t(H) * sizeof(float));
  swiglu(w, b.in.data(), n, H, I, b.gu.data(), nullptr, 0, b.out.data(), pool);
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(y + int64_t(place[b.slots[size_t(i)]]) * H, b.out.data() + i * H,
                size_t(H) * sizeof(float));
  return n;
}

void add_in_gate_order(const float* y, const float* weight, int64_t T, int64_t H, int k,
                       float* out) {
  std::memset(out, 0, size_t(T * H) * sizeof(float));
  for (int64_t t = 0; t < T; ++t)
    for (int j = 0; j < k; ++j) {
      const float wt = weight[t * k + j];
      float* o = out + t * H;
      const float* yr = y + (t * k + j) * H;
      for (int64_t h = 0; h < H; ++h) o[h] += yr[h] * wt;  // as experts() adds
    }
}

void moe_block(const ModelConfig& c, const MoeWeights& w, const float* m, int64_t T, Scratch& s,
               float* out, ThreadPool* pool, const Tap& tap) {
  route_tokens(c, w, m, T, s, pool, tap);
  experts(c, w, m, T, s, out, pool);
  tap("mlp.experts", out, {T, c.hidden});
  combine(c, w, m, T, s, out, pool, tap);
}

}  // namespace inkling
