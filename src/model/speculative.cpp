// SpeculativeDecoder (include/inkling/speculative.h): the scheduling of spec/inkling-mtp.md over
// one session's trunk and K MTP depths with their own caches.
//
// Rows and tokens: ids[0..P] is the committed sequence; the trunk has consumed rows [0, P) and
// ids[P] is the pending token it has not consumed yet (drawn from row P-1). Depth i at row p
// reads the hidden of row p (trunk after its final norm for i = 0, depth i-1's y otherwise) and
// the token at p+1+i, and predicts the token at p+2+i. With R = P-1 the last trunk row, depth i
// can run rows <= R-i from committed tokens; rows R-i+1..R read this round's drafts. Each depth
// keeps a committed prefix [0, cpos) with the conv states saved there: a round first re-winds it
// to cpos, runs the committed rows (then saves), then the draft rows (one call, conv inputs
// traced), whose last row gives the next draft. After verification the draft rows that read only
// accepted drafts join the committed prefix (conv states from the trace); the stale ones, which
// read a rejected draft, are re-run in the next round.
#include "inkling/speculative.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "model/mtp.h"
#include "model/session_impl.h"

namespace inkling {

namespace {

double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Depth {
  LayerCache cache;
  int64_t cpos = 0;                                        // committed rows
  std::vector<float> conv_k, conv_v, conv_attn, conv_mlp;  // the conv states at cpos
  std::vector<float> y;                                    // outputs of rows [y_start, ...)
  int64_t y_start = 0;
  ConvTrace trace;          // conv inputs of this round's draft rows
  int64_t draft_from = -1;  // first draft row of this round (-1: none)
  int64_t trace_from = -1;  // first row `trace` holds, kept after the round (-1: none)

  void save() {
    conv_k = cache.conv_k, conv_v = cache.conv_v, conv_attn = cache.conv_attn,
    conv_mlp = cache.conv_mlp;
  }
  void rewind() {
    cache.conv_k = conv_k, cache.conv_v = conv_v, cache.conv_attn = conv_attn;
    cache.conv_mlp = conv_mlp;
  }
};

}  // namespace

struct SpeculativeDecoder::Impl {
  Session::Impl* s = nullptr;
  const Model* m = nullptr;
  int K = 0;
  int64_t H = 0, V = 0;
  int64_t Vd = 0;            // draft vocabulary: the depths' head covers ids [0, Vd)
  std::vector<int32_t> ids;  // committed tokens; ids.back() is pending (not in the trunk)
  std::vector<float> th;     // trunk hidden (after the final norm) of rows [th_start, P)
  int64_t th_start = 0;
  std::vector<Depth> depths;
  MtpScratch ms;
  std::vector<ConvTrace> trace;         // per trunk layer: the verify pass's conv inputs
  std::vector<int32_t> drafts;          // this round's d_1..d_k (tokens at P+1..P+k)
  std::vector<float> q;                 // [K, V]: the draft distributions (temperature > 0)
  std::vector<float> dlogits;           // [V]: a depth's logits at its last row
  std::vector<float> vlogits, vhidden;  // verify pass: [K+1, V], [K+1, H]
  std::vector<float> p, r;              // target and residual distributions
  std::vector<float> qi;                // a draft's filtered distribution [Vd]
  std::vector<int32_t> tok;             // a depth call's input tokens
  std::vector<int32_t> out;
  SpeculativeStats stats;
  bool begun = false;  // ids.back() is the pending token (before: the prompt so far, no pending)
  int64_t round_from = -1;  // tokens the trunk held before the last round (-1: no round yet)
  // The round in flight (propose -> verify forward -> accept).
  int64_t k = 0;
  bool greedy = true;
  std::vector<int32_t> rows;  // the verify rows: pending token + drafts
  Segment seg;

  int64_t P() const { return int64_t(ids.size()) - 1; }
  int32_t token_at(int64_t x) const {
    return x <= P() ? ids[size_t(x)] : drafts[size_t(x - P() - 1)];
  }
  const float* hidden_in(int i, int64_t p) const {
    if (i == 0) return th.data() + (p - th_start) * H;
    const Depth& d = depths[size_t(i - 1)];
    return d.y.data() + (p - d.y_start) * H;
  }
  void run_depth(int i, int64_t from, int64_t to, bool logits, ConvTrace* trace = nullptr);
  void draft(int i, bool greedy, Sampler& sampler);
  void catch_up();
  void drop_trunk_rows(int64_t P);
  Status propose(Sampler& sampler);
  void accept(Sampler& sampler);
};

// Depth i over rows [from, to] (chunked); the logits of row `to` into dlogits when asked.
// `trace` (one call only: to - from < chunk) records the conv inputs.
void SpeculativeDecoder::Impl::run_depth(int i, int64_t from, int64_t to, bool logits,
                                         ConvTrace* trace) {
  Depth& d = depths[size_t(i)];
  // Keep the y rows the next depth has still to read: from its committed rows on (usually one
  // row before depth i's, but further back while it has not yet caught up, e.g. over the prompt).
  int64_t need = from - 1;
  if (i + 1 < int(depths.size())) need = std::min(need, depths[size_t(i + 1)].cpos);
  const int64_t keep = std::max(d.y_start, need);
  d.y.erase(d.y.begin(), d.y.begin() + (keep - d.y_start) * H);
  d.y_start = keep;
  d.y.resize(size_t((from - d.y_start) * H));
  d.y.resize(size_t((to + 1 - d.y_start) * H));
  const int64_t chunk = s->scratch.chunk;
  INK_CHECK(!trace || to - from < chunk);
  for (int64_t b = from; b <= to; b += chunk) {
    const int64_t n = std::min(chunk, to + 1 - b);
    tok.resize(size_t(n));
    for (int64_t t = 0; t < n; ++t) tok[size_t(t)] = token_at(b + t + 1 + i);
    const bool last = b + n > to;
    mtp_depth_forward(*m, i, hidden_in(i, b), tok.data(), n, d.cache, b, s->scratch, ms, s->pool,
                      d.y.data() + (b - d.y_start) * H, last && logits ? dlogits.data() : nullptr,
                      n - 1, Vd, trace);
  }
}

// Depth i's round: re-wind to its committed rows, run the rows whose tokens are committed, then
// those that read drafts, and draw draft i+1 from the last row.
void SpeculativeDecoder::Impl::draft(int i, bool greedy, Sampler& sampler) {
  Depth& d = depths[size_t(i)];
  const int64_t R = P() - 1;
  d.rewind();
  if (R - i >= d.cpos) {
    run_depth(i, d.cpos, R - i, i == 0);
    d.cpos = R - i + 1;
    d.save();
  }
  d.draft_from = -1;
  if (d.cpos <= R) {
    d.draft_from = d.cpos;
    run_depth(i, d.cpos, R, true, &d.trace);
  }
  int32_t x = 0;
  if (greedy) {
    x = argmax(dlogits);
  } else {
    sampler.filtered(dlogits, &qi);  // [Vd]; q is zero beyond the draft vocabulary
    std::fill(q.begin() + i * V, q.begin() + (i + 1) * V, 0.f);
    std::copy(qi.begin(), qi.end(), q.begin() + i * V);
    double u = sampler.uniform(), acc = 0;
    x = argmax(qi);
    for (int64_t v = 0; v < int64_t(qi.size()); ++v)
      if (qi[size_t(v)] > 0 && (acc += qi[size_t(v)]) > u) {
        x = int32_t(v);
        break;
      }
  }
  drafts.push_back(x);
}

// Before the first token: every depth over the rows whose tokens the prompt so far holds (depth
// i at row p reads the token at p+1+i), committed at once; the trunk rows depth 0 has read go.
void SpeculativeDecoder::Impl::catch_up() {
  const int64_t T = int64_t(ids.size());
  for (int i = 0; i < int(depths.size()); ++i) {
    Depth& d = depths[size_t(i)];
    const int64_t last = T - 2 - i;
    if (last < d.cpos) continue;
    run_depth(i, d.cpos, last, false);
    d.cpos = last + 1;
    d.save();
  }
  drop_trunk_rows(T);
}

// The trunk hidden rows before min(P, depth 0's committed rows) are read no more.
void SpeculativeDecoder::Impl::drop_trunk_rows(int64_t P) {
  const int64_t need = std::max(th_start, depths.empty() ? P : std::min(P, depths[0].cpos));
  th.erase(th.begin(), th.begin() + (need - th_start) * H);
  th_start = need;
}

// What snapshot() keeps: the committed tokens, the trunk rows depth 0 still reads, and each
// depth's cache (rows in use), committed count and the outputs the next depth still reads.
class SpeculativeSnapshot {
 public:
  struct DepthState {
    LayerCache cache;
    int64_t cpos = 0;
    std::vector<float> y;
    int64_t y_start = 0;
  };
  int K = 0;
  int64_t Vd = 0, H = 0;
  std::vector<int32_t> ids;
  std::vector<float> th;
  int64_t th_start = 0;
  std::vector<DepthState> depths;
};

size_t snapshot_bytes(const SpeculativeSnapshot& snap) {
  size_t n = sizeof(SpeculativeSnapshot) + snap.ids.size() * 4 + snap.th.size() * 4;
  for (const auto& d : snap.depths) n += sizeof(d) + d.cache.bytes() + d.y.size() * 4;
  return n;
}

namespace {
// Rows [from, to) of two row buffers that start at rows a0 and b0 ("" = equal bitwise).
std::string rows_differ(const std::vector<float>& a, int64_t a0, const std::vector<float>& b,
                        int64_t b0, int64_t from, int64_t to, int64_t width) {
  for (int64_t r = from; r < to; ++r) {
    const auto at = [&](const std::vector<float>& v, int64_t start) {
      return v.begin() + ptrdiff_t((r - start) * width);
    };
    if ((r - a0 + 1) * width > int64_t(a.size()) || (r - b0 + 1) * width > int64_t(b.size()))
      return "row " + std::to_string(r) + " is missing";
    if (!std::equal(at(a, a0), at(a, a0) + width, at(b, b0),
                    [](float x, float y) { return std::memcmp(&x, &y, sizeof x) == 0; }))
      return "row " + std::to_string(r) + " differs";
  }
  return "";
}
}  // namespace

std::string snapshot_difference(const SpeculativeSnapshot& a, const SpeculativeSnapshot& b) {
  if (a.K != b.K || a.Vd != b.Vd || a.H != b.H) return "draft count, vocabulary or width";
  if (a.ids != b.ids) return "committed tokens";
  if (a.depths.size() != b.depths.size()) return "depth count";
  for (size_t i = 0; i < a.depths.size(); ++i) {
    const auto& x = a.depths[i];
    const auto& y = b.depths[i];
    const std::string d = "depth " + std::to_string(i) + ": ";
    if (x.cpos != y.cpos)
      return d + "committed rows " + std::to_string(x.cpos) + " vs " + std::to_string(y.cpos);
    const LayerCache& p = x.cache;
    const LayerCache& q = y.cache;
    const auto same = [](const auto& u, size_t b, size_t e, const auto& v) {
      return e <= u.size() && e <= v.size() &&
             (e == b || std::memcmp(u.data() + b, v.data() + b, (e - b) * sizeof(u[0])) == 0);
    };
    const auto equal = [&](const std::vector<float>& u, const std::vector<float>& v) {
      return u.size() == v.size() && same(u, 0, u.size(), v);
    };
    if (!equal(p.conv_k, q.conv_k) || !equal(p.conv_v, q.conv_v) ||
        !equal(p.conv_attn, q.conv_attn) || !equal(p.conv_mlp, q.conv_mlp))
      return d + "conv states";
    if (p.row != q.row || p.type != q.type || p.ring != q.ring) return d + "cache geometry";
    // The positions a later row may read: all of them, or a ring's latest (less the K + 1 a
    // round may have written past the committed rows, over the oldest).
    const int64_t first = p.ring ? std::max<int64_t>(0, x.cpos - p.ring + a.K + 1) : 0;
    for (int64_t pos = first; pos < x.cpos; ++pos) {
      const size_t b = size_t(p.slot(pos)), e = b + size_t(p.row);
      const bool kv = p.type == KvType::kF32 ? same(p.k, b, e, q.k) && same(p.v, b, e, q.v)
                                             : same(p.k16, b, e, q.k16) && same(p.v16, b, e, q.v16);
      if (!kv) return d + "KV row of position " + std::to_string(pos);
    }
  }
  // The rows the depths still read: trunk rows from depth 0's committed rows, depth i's outputs
  // from depth i+1's.
  const int64_t T = int64_t(a.ids.size());
  if (!a.depths.empty()) {
    const int64_t H = a.H;
    const std::string r = rows_differ(a.th, a.th_start, b.th, b.th_start, a.depths[0].cpos, T, H);
    if (!r.empty()) return "trunk hidden " + r;
    for (size_t i = 0; i + 1 < a.depths.size(); ++i) {
      const auto& x = a.depths[i];
      const auto& y = b.depths[i];
      const int64_t from = a.depths[i + 1].cpos, to = x.cpos;
      if (to <= from) continue;
      const std::string r = rows_differ(x.y, x.y_start, y.y, y.y_start, from, to, H);
      if (!r.empty()) return "depth " + std::to_string(i) + " output " + r;
    }
  }
  return "";
}

SpeculativeDecoder::SpeculativeDecoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SpeculativeDecoder::~SpeculativeDecoder() {
  if (impl_ && impl_->s->hidden_sink == &impl_->th) impl_->s->hidden_sink = nullptr;
}

bool SpeculativeDecoder::started() const {
  return impl_->begun;
}

Status SpeculativeDecoder::prefilled(std::span<const int32_t> tokens) {
  Impl& d = *impl_;
  if (d.begun) return Status::error("[speculative] prefilled: the decoder has already begun");
  const int64_t T = int64_t(d.ids.size() + tokens.size());
  const int64_t rows = d.th_start + int64_t(d.th.size()) / d.H;
  if (d.s->state.pos != T || rows != T)
    return Status::error("[speculative] prefilled: the session holds " +
                         std::to_string(d.s->state.pos) + " tokens and the decoder has " +
                         std::to_string(rows) + " hidden rows for " + std::to_string(T) +
                         " (run the prompt through Engine::step while the decoder exists)");
  d.ids.insert(d.ids.end(), tokens.begin(), tokens.end());
  d.catch_up();
  return Status::success();
}

Status SpeculativeDecoder::begin(int32_t first) {
  Impl& d = *impl_;
  if (d.begun) return Status::error("[speculative] begin: the decoder has already begun");
  if (d.ids.empty() || d.s->state.pos != int64_t(d.ids.size()))
    return Status::error("[speculative] begin: the session holds " +
                         std::to_string(d.s->state.pos) + " tokens, the decoder " +
                         std::to_string(d.ids.size()) + " (prefilled() every prompt token first)");
  if (first < 0 || first >= d.V)
    return Status::error("[speculative] begin: token " + std::to_string(first) +
                         " is outside the vocabulary");
  d.ids.push_back(first);
  d.begun = true;
  if (d.s->hidden_sink == &d.th) d.s->hidden_sink = nullptr;
  return Status::success();
}

std::shared_ptr<const SpeculativeSnapshot> SpeculativeDecoder::snapshot() const {
  const Impl& d = *impl_;
  if (d.begun) return nullptr;
  auto snap = std::make_shared<SpeculativeSnapshot>();
  snap->K = d.K;
  snap->Vd = d.Vd;
  snap->H = d.H;
  snap->ids = d.ids;
  snap->th = d.th;
  snap->th_start = d.th_start;
  for (const Depth& x : d.depths)
    snap->depths.push_back({x.cache.compact_copy(x.cpos), x.cpos, x.y, x.y_start});
  return snap;
}

Status SpeculativeDecoder::restore(const SpeculativeSnapshot& snap) {
  Impl& d = *impl_;
  if (d.begun || !d.ids.empty())
    return Status::error("[speculative] restore: the decoder has already run tokens");
  if (snap.K != d.K || snap.Vd != d.Vd)
    return Status::error("[speculative] restore: the snapshot has " + std::to_string(snap.K) +
                         " drafts over " + std::to_string(snap.Vd) + " ids, the decoder " +
                         std::to_string(d.K) + " over " + std::to_string(d.Vd));
  if (d.s->state.pos != int64_t(snap.ids.size()))
    return Status::error("[speculative] restore: the session holds " +
                         std::to_string(d.s->state.pos) + " tokens, the snapshot " +
                         std::to_string(snap.ids.size()) + " (restore the session first)");
  d.ids = snap.ids;
  d.th = snap.th;
  d.th_start = snap.th_start;
  for (size_t i = 0; i < d.depths.size(); ++i) {
    Depth& x = d.depths[i];
    const SpeculativeSnapshot::DepthState& y = snap.depths[i];
    x.cache = y.cache;
    x.cpos = y.cpos;
    x.y = y.y;
    x.y_start = y.y_start;
    x.draft_from = -1;
    x.save();
  }
  return Status::success();
}

Status SpeculativeDecoder::end_turn(int64_t tokens) {
  Impl& d = *impl_;
  Session::Impl& s = *d.s;
  if (!d.begun) {
    if (tokens == int64_t(d.ids.size()) && s.state.pos == tokens) return Status::success();
    return Status::error("[speculative] end_turn: " + std::to_string(tokens) +
                         " tokens, but the decoder has not begun and holds " +
                         std::to_string(d.ids.size()));
  }
  const int64_t P = d.P(), lo = d.round_from >= 0 ? d.round_from + 1 : P;
  if (tokens < lo || tokens > P)
    return Status::error("[speculative] end_turn: " + std::to_string(tokens) +
                         " tokens is outside [" + std::to_string(lo) + ", " + std::to_string(P) +
                         "] (the last round's tokens)");
  const int64_t taps = d.m->config.conv_k;
  if (tokens < P) {  // the trunk: as a rejected draft, from the last verify pass's trace
    s.state.pos = tokens;
    for (size_t l = 0; l < s.state.layers.size(); ++l)
      s.state.layers[l].rewind_convs(d.trace[l], tokens - d.round_from, taps);
  }
  // Depth i keeps the rows whose tokens (row p reads the token at p+1+i) are among `tokens`;
  // rows past that were draft rows of the last round, re-wound from their trace. The depths
  // that lag then run up to where a prompt of these tokens leaves them (catch_up).
  for (int64_t i = 0; i < int64_t(d.depths.size()); ++i) {
    Depth& dp = d.depths[size_t(i)];
    const int64_t want = std::max<int64_t>(0, tokens - 1 - i);
    dp.rewind();  // the live conv states may be past cpos (rejected draft rows)
    if (dp.cpos > want) {
      INK_CHECK(dp.trace_from >= 0 && want >= dp.trace_from);
      dp.cache.rewind_convs(dp.trace, want - dp.trace_from, taps);
      dp.cpos = want;
      dp.save();
    }
    dp.trace_from = -1;
  }
  INK_CHECK(d.th_start <= tokens);
  d.th.resize(size_t((tokens - d.th_start) * d.H));
  d.ids.resize(size_t(tokens));
  d.round_from = -1;
  d.begun = false;
  d.catch_up();
  s.hidden_sink = &d.th;  // Engine::step keeps the trunk rows again, as before begin()
  return Status::success();
}

int SpeculativeDecoder::n_draft() const {
  return impl_->K;
}

const SpeculativeStats& SpeculativeDecoder::stats() const {
  return impl_->stats;
}

Result<std::unique_ptr<SpeculativeDecoder>> SpeculativeDecoder::create(Session& session,
                                                                       int n_draft,
                                                                       int64_t draft_vocab) {
  Session::Impl* s = session.impl_.get();
  const Model& m = *s->model;
  const int have = int(m.weights.mtp.size());
  if (have == 0)
    return Status::error(
        m.config.mtp.depths.empty()
            ? std::string("[speculative] the model has no MTP depths (no mtp_config)")
            : "[speculative] the config declares " + std::to_string(m.config.mtp.depths.size()) +
                  " MTP depths but the checkpoint has no model.mtp.layers.0.input_proj.weight");
  if (n_draft < 1 || n_draft > have)
    return Status::error("[speculative] draft count " + std::to_string(n_draft) +
                         " is outside [1, " + std::to_string(have) + "] (the model's MTP depths)");
  if (n_draft + 1 > s->scratch.chunk)
    return Status::error("[speculative] draft count " + std::to_string(n_draft) +
                         " needs a prefill chunk of at least " + std::to_string(n_draft + 1));
  if (draft_vocab < 0 || draft_vocab > m.config.unpadded_vocab)
    return Status::error("[speculative] draft vocabulary " + std::to_string(draft_vocab) +
                         " is outside [0, " + std::to_string(m.config.unpadded_vocab) +
                         "] (0 = the whole vocabulary)");
  if (s->state.pos != 0)
    return Status::error("[speculative] the session must be empty (it holds " +
                         std::to_string(s->state.pos) + " tokens)");
  if (s->hidden_sink)
    return Status::error("[speculative] the session already has a decoder that has not begun");
  auto impl = std::make_unique<Impl>();
  impl->s = s;
  impl->m = &m;
  impl->K = n_draft;
  impl->H = m.config.hidden;
  impl->V = m.config.unpadded_vocab;
  impl->Vd = draft_vocab > 0 ? draft_vocab : impl->V;
  for (int i = 0; i < n_draft; ++i) {
    Depth d;
    d.cache = LayerCache::fresh(m.config, m.config.mtp.depths[size_t(i)], s->scratch.chunk, s->kv);
    d.save();
    impl->depths.push_back(std::move(d));
  }
  impl->trace.resize(size_t(m.config.n_layers));
  impl->q.resize(size_t(n_draft * impl->V));
  impl->dlogits.resize(size_t(impl->Vd));
  impl->vlogits.resize(size_t((n_draft + 1) * impl->V));
  impl->vhidden.resize(size_t((n_draft + 1) * impl->H));
  impl->stats.drafted.assign(size_t(n_draft), 0);
  impl->stats.accepted.assign(size_t(n_draft), 0);
  s->hidden_sink = &impl->th;  // until begin(): Engine::step keeps the trunk rows here
  return std::unique_ptr<SpeculativeDecoder>(new SpeculativeDecoder(std::move(impl)));
}

Result<int32_t> SpeculativeDecoder::start(std::span<const int32_t> prompt, Sampler& sampler) {
  Impl& d = *impl_;
  Session::Impl& s = *d.s;
  const ModelConfig& c = d.m->config;
  if (d.begun || !d.ids.empty() || s.state.pos != 0)
    return Status::error("[speculative] start: the decoder has already started");
  INK_RETURN_IF_ERROR(check_tokens(c, prompt, 0, s.max_context));
  if (s.max_context > 0 && int64_t(prompt.size()) + 1 > s.max_context)
    return Status::error("[session] context length exceeded: " + std::to_string(prompt.size()) +
                         " prompt tokens leave no room below " + std::to_string(s.max_context));
  const int64_t T = int64_t(prompt.size()), chunk = s.scratch.chunk;
  d.th.resize(size_t(T * d.H));
  d.th_start = 0;
  for (int64_t b = 0; b < T; b += chunk) {
    Segment seg{&s.state, prompt.data() + b, std::min(chunk, T - b)};
    seg.all_positions = true;
    seg.hidden_normed = d.th.data() + b * d.H;
    if (b + seg.n == T) {  // the head runs on the prompt's last row only
      seg.logits = s.logits.data();
      seg.last_logits_only = true;
    }
    forward_batch(*d.m, &seg, 1, s.scratch, s.pool, s.observer);
  }
  d.ids.assign(prompt.begin(), prompt.end());
  d.catch_up();
  const int32_t first = sampler.next(s.logits).id;
  INK_RETURN_IF_ERROR(begin(first));
  return first;
}

// A round's first phase: the context check, the drafts and the verify segment.
Status SpeculativeDecoder::Impl::propose(Sampler& sampler) {
  Impl& d = *this;
  Session::Impl& s = *d.s;
  if (!d.begun) return Status::error("[speculative] step before start");
  const int64_t P = d.P();
  int64_t k = d.K;
  if (s.max_context > 0) {
    if (P + 1 > s.max_context)
      return Status::error("[session] context length exceeded: " + std::to_string(P) +
                           " cached + 1 new tokens > " + std::to_string(s.max_context));
    k = std::min<int64_t>(k, s.max_context - P - 1);
  }
  const SamplingParams& sp = sampler.params();
  d.greedy = sp.temperature <= 0.f || sp.top_k == 1;
  d.k = k;

  // Drafts: depth i after depth i-1.
  const double t0 = seconds();
  d.drafts.clear();
  for (int i = 0; i < k; ++i) d.draft(i, d.greedy, sampler);
  d.stats.draft_seconds += seconds() - t0;

  // Verify: the pending token and the k drafts in one trunk pass, every row's logits and hidden.
  d.rows.assign(size_t(k + 1), 0);
  d.rows[0] = d.ids.back();
  std::copy(d.drafts.begin(), d.drafts.end(), d.rows.begin() + 1);
  d.seg = Segment{&s.state, d.rows.data(), k + 1};
  d.seg.all_positions = true;
  d.seg.logits = d.vlogits.data();
  d.seg.hidden_normed = d.vhidden.data();
  d.seg.trace = d.trace.data();
  return Status::success();
}

// The last phase, after the verify segment ran: acceptance row by row, rollback, bookkeeping.
void SpeculativeDecoder::Impl::accept(Sampler& sampler) {
  Impl& d = *this;
  Session::Impl& s = *d.s;
  const int64_t P = d.P(), k = d.k;
  const bool greedy = d.greedy;
  const double t2 = seconds();

  // Acceptance, row by row; every token produced goes through the sampler's history.
  d.out.clear();
  const int64_t V = d.V;
  int64_t a = 0;  // drafts accepted
  for (int64_t j = 0; j <= k; ++j) {
    const std::span<const float> row(d.vlogits.data() + j * V, size_t(V));
    int32_t tok = 0;
    if (greedy || j == k) {
      tok = sampler.next(row).id;
    } else {
      const int32_t x = d.drafts[size_t(j)];
      if (std::optional<int32_t> forced = sampler.distribution(row, &d.p)) {
        tok = *forced;
      } else {
        const float* q = d.q.data() + j * V;
        const double px = d.p[size_t(x)], qx = q[x];
        if (qx > 0 && sampler.uniform() * qx < px) {
          tok = x;
        } else {
          // The residual max(0, p - q), normalised (p itself if it vanishes).
          d.r.resize(size_t(V));
          double sum = 0;
          for (int64_t v = 0; v < V; ++v)
            sum += d.r[size_t(v)] = std::max(0.f, d.p[size_t(v)] - q[v]);
          const std::vector<float>& dist = sum > 0 ? d.r : d.p;
          if (sum <= 0) sum = 1;
          double u = sampler.uniform() * sum, acc = 0;
          tok = argmax(dist);
          for (int64_t v = 0; v < V; ++v)
            if (dist[size_t(v)] > 0 && (acc += dist[size_t(v)]) > u) {
              tok = int32_t(v);
              break;
            }
        }
      }
      sampler.accept(tok);
    }
    d.out.push_back(tok);
    if (j == k || tok != d.drafts[size_t(j)]) break;
    ++a;
  }

  // Keep rows [0, a] of the verify pass: the KV positions after them are simply overwritten
  // later; the conv states come from the trace.
  const int64_t keep = a + 1;
  if (keep < k + 1) {
    s.state.pos = P + keep;
    for (size_t l = 0; l < s.state.layers.size(); ++l)
      s.state.layers[l].rewind_convs(d.trace[l], keep, d.m->config.conv_k);
  }
  // Draft rows of depth i at rows p <= R + a - i read accepted drafts only: they become
  // committed (conv states after them from the draft call's trace; their KV rows and y stand).
  const int64_t R = P - 1;
  for (int64_t i = 0; i < k; ++i) {
    Depth& dp = d.depths[size_t(i)];
    if (dp.draft_from < 0) continue;
    const int64_t valid = std::min(R, R + a - i) - dp.draft_from + 1;
    if (valid > 0) {
      dp.cache.rewind_convs(dp.trace, valid, d.m->config.conv_k);
      dp.cpos = dp.draft_from + valid;
      dp.save();
    }
    dp.trace_from = dp.draft_from;
    dp.draft_from = -1;
  }
  d.round_from = P;

  // Trunk hidden rows for depth 0: drop the ones it has run, append the kept ones.
  d.drop_trunk_rows(P);
  d.th.insert(d.th.end(), d.vhidden.begin(), d.vhidden.begin() + keep * d.H);
  for (int64_t j = 0; j < a; ++j) d.ids.push_back(d.drafts[size_t(j)]);
  d.ids.push_back(d.out.back());
  std::copy_n(d.vlogits.data() + a * V, V, s.logits.data());

  d.stats.accept_seconds += seconds() - t2;
  d.stats.rounds += 1;
  d.stats.tokens += int64_t(d.out.size());
  for (int64_t i = 0; i < k; ++i) {
    d.stats.drafted[size_t(i)] += 1;
    d.stats.accepted[size_t(i)] += i < a;
  }
}

Result<std::span<const int32_t>> SpeculativeDecoder::step(Sampler& sampler) {
  Impl& d = *impl_;
  INK_RETURN_IF_ERROR(d.propose(sampler));
  const double t0 = seconds();
  forward_batch(*d.m, &d.seg, 1, d.s->scratch, d.s->pool, d.s->observer);
  d.stats.verify_seconds += seconds() - t0;
  d.accept(sampler);
  return std::span<const int32_t>(d.out);
}

Status SpeculativeDecoder::step_batch(std::span<SpeculativeDecoder* const> decoders,
                                      std::span<Sampler* const> samplers) {
  if (decoders.size() != samplers.size())
    return Status::error("[speculative] step_batch: " + std::to_string(decoders.size()) +
                         " decoders but " + std::to_string(samplers.size()) + " samplers");
  if (decoders.empty()) return Status::success();
  const Model* m = decoders[0]->impl_->m;
  for (size_t i = 0; i < decoders.size(); ++i) {
    if (!decoders[i] || decoders[i]->impl_->m != m)
      return Status::error("[speculative] step_batch: decoder " + std::to_string(i) +
                           " belongs to another engine");
    for (size_t j = 0; j < i; ++j)
      if (decoders[j] == decoders[i] || decoders[j]->impl_->s == decoders[i]->impl_->s)
        return Status::error("[speculative] step_batch: a session appears twice");
  }
  for (size_t i = 0; i < decoders.size(); ++i)
    INK_RETURN_IF_ERROR(decoders[i]->impl_->propose(*samplers[i]));
  // One trunk pass over every decoder's verify rows (as many as the scratch holds at a time),
  // in the first decoder's session scratch: every session of an engine has the same chunk.
  Session::Impl& s0 = *decoders[0]->impl_->s;
  std::vector<Segment> segs;
  for (size_t b = 0; b < decoders.size();) {
    segs.clear();
    int64_t rows = 0;
    size_t e = b;
    for (; e < decoders.size(); ++e) {
      const Segment& g = decoders[e]->impl_->seg;
      if (rows + g.n > s0.scratch.chunk) break;
      segs.push_back(g);
      rows += g.n;
    }
    const double t0 = seconds();
    forward_batch(*m, segs.data(), segs.size(), s0.scratch, s0.pool);
    const double dt = (seconds() - t0) / double(e - b);
    for (size_t i = b; i < e; ++i) decoders[i]->impl_->stats.verify_seconds += dt;
    b = e;
  }
  for (size_t i = 0; i < decoders.size(); ++i) decoders[i]->impl_->accept(*samplers[i]);
  return Status::success();
}

std::span<const int32_t> SpeculativeDecoder::last_tokens() const {
  return impl_->out;
}

}  // namespace inkling
