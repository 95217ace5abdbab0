// VocabIndex (a preorder byte trie over the ordinary tokens) and GrammarConstraint: the allowed
// tokens of a matcher state are found by one walk of the trie that follows only bytes the state
// can take (each edge one memoized transition), cached per state; special tokens and EOS are
// checked by id. Near the end of the token budget only tokens that shorten the way to the end
// of the grammar are allowed.
#include <algorithm>
#include <bit>
#include <chrono>
#include <limits>

#include "text/grammar/grammar_impl.h"

namespace inkling {

std::shared_ptr<const VocabIndex> VocabIndex::build(const Tokenizer& tok) {
  auto impl = std::make_shared<Impl>();
  impl->n_tokens = tok.vocab_size();
  impl->bytes.resize(impl->n_tokens);
  impl->is_special.assign(impl->n_tokens, 0);
  std::vector<std::pair<std::string_view, int32_t>> sorted;
  for (size_t id = 0; id < impl->n_tokens; ++id) {
    if (tok.is_added(int32_t(id))) {
      impl->is_special[id] = 1;
      impl->specials.push_back(int32_t(id));
      continue;
    }
    impl->bytes[id] = tok.token_bytes(int32_t(id));
  }
  for (size_t id = 0; id < impl->n_tokens; ++id)
    if (!impl->is_special[id] && !impl->bytes[id].empty())
      sorted.emplace_back(impl->bytes[id], int32_t(id));
  std::sort(sorted.begin(), sorted.end());  // char_traits<char> compares bytes as unsigned
  auto& nodes = impl->nodes;
  nodes.emplace_back();
  std::vector<int32_t> last_child(1, -1);
  std::vector<int32_t> path = {0};
  std::string_view prev;
  for (const auto& [b, id] : sorted) {
    size_t lcp = 0;
    while (lcp < prev.size() && lcp < b.size() && prev[lcp] == b[lcp]) ++lcp;
    lcp = std::min(lcp, path.size() - 1);
    path.resize(lcp + 1);
    for (size_t k = lcp; k < b.size(); ++k) {
      const int32_t parent = path.back();
      const int32_t n = int32_t(nodes.size());
      nodes.emplace_back();
      nodes.back().byte = uint8_t(b[k]);
      last_child.push_back(-1);
      if (last_child[size_t(parent)] < 0)
        nodes[size_t(parent)].first_child = n;
      else
        nodes[size_t(last_child[size_t(parent)])].next_sibling = n;
      last_child[size_t(parent)] = n;
      path.push_back(n);
    }
    // Two ids with the same bytes (not in a BPE vocabulary): the first keeps the node.
    if (nodes[size_t(path.back())].token < 0) nodes[size_t(path.back())].token = id;
    prev = b;
  }
  // Subtree extents and, for the larger subtrees, the bytes below each node (bottom-up over the
  // preorder).
  const size_t n = nodes.size();
  impl->end.assign(n, 0);
  impl->below_index.assign(n, -1);
  std::vector<std::bitset<256>> below(n);
  for (size_t k = n; k-- > 0;) {
    int32_t e = int32_t(k) + 1;
    for (int32_t c = nodes[k].first_child; c >= 0; c = nodes[size_t(c)].next_sibling) {
      below[k].set(nodes[size_t(c)].byte);
      below[k] |= below[size_t(c)];
      e = impl->end[size_t(c)];
    }
    impl->end[k] = e;
  }
  for (size_t k = 0; k < n; ++k)
    if (impl->end[k] - int32_t(k) >= Impl::kMinSkip) {
      impl->below_index[k] = int32_t(impl->below.size());
      impl->below.push_back(below[k]);
    }
  auto out = std::shared_ptr<VocabIndex>(new VocabIndex());
  out->impl_ = std::move(impl);
  return out;
}

size_t VocabIndex::n_tokens() const {
  return impl_->n_tokens;
}
size_t VocabIndex::n_nodes() const {
  return impl_->nodes.size();
}

struct GrammarConstraint::Impl {
  Impl(const Grammar& g, std::shared_ptr<const VocabIndex> v, GrammarConstraintOptions o)
      : core(g.impl()), vocab(std::move(v)), opts(std::move(o)), state(core.initial()) {}

  void walk(int32_t node, int32_t st, int32_t limit, std::vector<uint64_t>* m) {
    const auto& nodes = vocab->impl().nodes;
    for (int32_t c = nodes[size_t(node)].first_child; c >= 0; c = nodes[size_t(c)].next_sibling) {
      const VocabIndex::Impl::Node& n = nodes[size_t(c)];
      if (!core.first_bytes(st).test(n.byte)) continue;
      const int32_t s2 = core.step_byte(st, n.byte);
      ++stats.nodes;
      if (s2 < 0) continue;
      const int32_t d = core.distance(s2);
      const bool fits = limit < 0 || d < limit;
      if (n.token >= 0 && fits) {
        (*m)[size_t(n.token) >> 6] |= uint64_t(1) << (n.token & 63);
        max_dist = std::max(max_dist, d);
      }
      // Every byte below this node loops back to s2 (a run of ordinary string characters): all
      // the tokens below end in s2 too; take them without walking.
      const int32_t bi = vocab->impl().below_index[size_t(c)];
      if (bi >= 0 && (vocab->impl().below[size_t(bi)] & ~core.loop_bytes(s2)).none()) {
        if (!fits) continue;
        const int32_t end = vocab->impl().end[size_t(c)];
        for (int32_t k = c + 1; k < end; ++k)
          if (const int32_t t = nodes[size_t(k)].token; t >= 0)
            (*m)[size_t(t) >> 6] |= uint64_t(1) << (t & 63);
        max_dist = std::max(max_dist, d);
        stats.skipped += end - c - 1;
        continue;
      }
      walk(c, s2, limit, m);
    }
  }

  // The allowed set of this step into `allowed`. limit >= 0 (a token budget): only tokens
  // after which the grammar can finish in fewer than `limit` tokens.
  void compute(int32_t limit) {
    const size_t words = (vocab->n_tokens() + 63) / 64;
    std::vector<uint64_t>* m = core.mask(state);
    if (!m) {
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<uint64_t> fresh(words, 0);
      ++stats.walks;
      max_dist = 0;
      walk(0, state, -1, &fresh);
      m = core.set_mask(state, std::move(fresh), max_dist);
      stats.walk_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } else {
      ++stats.cached;
    }
    // Special tokens (core.tokens) are not in the cached mask: they are checked against the
    // budget on their own below, whatever the mask's distances allow.
    const int32_t token_limit = limit;
    if (limit >= 0 && core.mask_max_distance(state) >= limit) {
      const auto t0 = std::chrono::steady_clock::now();
      allowed.assign(words, 0);
      ++stats.walks;
      walk(0, state, limit, &allowed);
      stats.walk_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } else {
      allowed = *m;
      limit = -1;  // every token of the cached mask fits the budget
    }
    auto allow = [&](int32_t id) {
      if (id >= 0 && size_t(id) < vocab->n_tokens())
        allowed[size_t(id) >> 6] |= uint64_t(1) << (id & 63);
    };
    const std::vector<int32_t> toks = core.tokens(state);  // step_token may grow the tables
    for (int32_t id : toks)
      if (token_limit < 0 || core.distance(core.step_token(state, id)) < token_limit) allow(id);
    if (core.accepts(state))
      for (int32_t id : opts.eos_ids) allow(id);
  }

  MatcherCore core;
  std::shared_ptr<const VocabIndex> vocab;
  GrammarConstraintOptions opts;
  int32_t state;
  bool failed = false;
  int64_t generated = 0;
  std::vector<uint64_t> allowed;
  int32_t max_dist = 0;  // walk() output: the largest distance of an allowed token
  GrammarStats stats;
};

GrammarConstraint::GrammarConstraint(const Grammar& g, std::shared_ptr<const VocabIndex> vocab,
                                     GrammarConstraintOptions opts)
    : impl_(std::make_unique<Impl>(g, std::move(vocab), std::move(opts))) {}
GrammarConstraint::~GrammarConstraint() = default;

int64_t GrammarConstraint::distance() const {
  return impl_->failed ? 0 : impl_->core.distance(impl_->state);
}
bool GrammarConstraint::complete() const {
  return !impl_->failed && impl_->core.accepts(impl_->state);
}
bool GrammarConstraint::failed() const {
  return impl_->failed;
}
const GrammarStats& GrammarConstraint::stats() const {
  return impl_->stats;
}

const std::vector<uint64_t>& GrammarConstraint::allowed() {
  Impl& m = *impl_;
  if (m.failed) {
    m.allowed.assign((m.vocab->n_tokens() + 63) / 64, ~uint64_t(0));
    return m.allowed;
  }
  int32_t limit = -1;
  int64_t tight = -1, d = 0;
  if (m.opts.max_tokens >= 0) {
    // After this token, left - 1 remain, and the end token needs one of them.
    const int64_t left = m.opts.max_tokens - m.generated;
    const int64_t after = left - (m.opts.eos_ids.empty() ? 0 : 1);
    d = m.core.distance(m.state);
    if (after >= d)
      limit = int32_t(std::min<int64_t>(after, INT32_MAX / 2));
    else if (after > 0)
      tight = after;
  }
  if (tight < 0) {
    m.compute(limit);
    return m.allowed;
  }
  // The shortest way to the end counted in bytes (an upper bound of its tokens) is longer than the
  // budget: most tokens hold several bytes, so it may still fit. Allow only the tokens that bring
  // the end nearest, the smallest limit (from the budget up to the current distance, where every
  // token that makes progress qualifies) that leaves any: the output shortens as fast as the
  // vocabulary allows.
  auto any = [&] {
    for (uint64_t w : m.allowed)
      if (w) return true;
    return false;
  };
  int32_t lo = int32_t(tight), hi = int32_t(std::min<int64_t>(d, INT32_MAX / 2));
  m.compute(lo);
  if (any()) return m.allowed;
  bool at_hi = false;    // m.allowed holds compute(hi)
  while (lo + 1 < hi) {  // invariant: lo leaves nothing, hi leaves something
    const int32_t mid = lo + (hi - lo) / 2;
    m.compute(mid);
    at_hi = any();
    (at_hi ? hi : lo) = mid;
  }
  if (!at_hi) m.compute(hi);
  if (!any()) m.compute(-1);  // no token makes progress: the grammar's own mask
  return m.allowed;
}

std::optional<int32_t> GrammarConstraint::apply(std::span<float> logits) {
  Impl& m = *impl_;
  if (m.failed) return std::nullopt;
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<uint64_t>& a = allowed();
  ++m.stats.masks;
  std::optional<int32_t> forced;
  // Complete with nothing else possible: the end token, without a draw.
  if (m.core.accepts(m.state) && !m.core.has_bytes(m.state) && m.core.tokens(m.state).empty() &&
      !m.opts.eos_ids.empty())
    forced = m.opts.eos_ids[0];
  if (!forced) {
    constexpr float kBan = -std::numeric_limits<float>::infinity();
    const size_t n = logits.size(), vocab = std::min(n, m.vocab->n_tokens());
    // Whole banned words are filled; otherwise only the banned bits are visited.
    const size_t full = vocab / 64;
    for (size_t w = 0; w < full; ++w) {
      const uint64_t bits = a[w];
      if (bits == ~uint64_t(0)) continue;
      float* row = logits.data() + w * 64;
      if (bits == 0) {
        std::fill(row, row + 64, kBan);
        continue;
      }
      for (uint64_t banned = ~bits; banned; banned &= banned - 1)
        row[std::countr_zero(banned)] = kBan;
    }
    for (size_t i = full * 64; i < vocab; ++i)
      if (!((a[i >> 6] >> (i & 63)) & 1)) logits[i] = kBan;
    for (size_t i = vocab; i < n; ++i) logits[i] = kBan;
  }
  m.stats.mask_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return forced;
}

void GrammarConstraint::accept(int32_t id) {
  Impl& m = *impl_;
  ++m.generated;
  if (m.failed) return;
  const VocabIndex::Impl& v = m.vocab->impl();
  int32_t s = m.state;
  if (id < 0 || size_t(id) >= v.n_tokens) {
    s = kDead;
  } else if (v.is_special[size_t(id)]) {
    s = m.core.step_token(s, id);
    // EOS that the grammar allowed (complete): the state stays as it is.
    if (s < 0 && m.core.accepts(m.state) &&
        std::find(m.opts.eos_ids.begin(), m.opts.eos_ids.end(), id) != m.opts.eos_ids.end())
      return;
  } else {
    for (char c : v.bytes[size_t(id)]) {
      s = m.core.step_byte(s, uint8_t(c));
      if (s < 0) break;
    }
    if (v.bytes[size_t(id)].empty()) s = kDead;
  }
  if (s < 0) {
    m.failed = true;
    return;
  }
  m.state = s;
  // Long outputs of grammars with counters keep creating states: start over from this one.
  if (m.core.n_nodes() > (size_t(1) << 20) || m.core.n_states() > (size_t(1) << 16))
    m.state = m.core.compact(m.state);
}

}  // namespace inkling
