// The pushdown matcher (see grammar_impl.h). A stack is a chain of frames (rule, alternative,
// position of the next element) whose top always stands on a terminal (byte set or special
// token); a finished frame is popped before it is pushed (tail calls), so right recursion such
// as `x*` keeps the stack flat and a repeated byte leads back to the same interned state.
#include <algorithm>

#include "text/grammar/grammar_impl.h"

namespace inkling {

namespace {
constexpr int kMaxDepth =
    4000;  // expansion depth guard (the grammar is checked non-left-recursive)

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xbf58476d1ce4e5b9ull;
}
}  // namespace

MatcherCore::MatcherCore(std::shared_ptr<const Grammar::Impl> g) : g_(std::move(g)) {
  std::vector<int32_t> stacks;
  seen_.clear();
  for (size_t a = 0; a < g_->rules[size_t(g_->root)].size(); ++a)
    expand(g_->root, int32_t(a), 0, kAccept, &stacks, 0);
  initial_ = intern(std::move(stacks));
}

int32_t MatcherCore::node(int32_t rule, int32_t alt, int32_t pos, int32_t parent) {
  const uint64_t h = mix(mix(mix(mix(0, uint64_t(rule)), uint64_t(alt)), uint64_t(pos)),
                         uint64_t(uint32_t(parent)));
  auto& bucket = node_index_[h];
  for (int32_t id : bucket) {
    const Node& n = nodes_[size_t(id)];
    if (n.rule == rule && n.alt == alt && n.pos == pos && n.parent == parent) return id;
  }
  const int32_t dist = g_->suffix_min[size_t(rule)][size_t(alt)][size_t(pos)] +
                       (parent == kAccept ? 0 : nodes_[size_t(parent)].dist);
  nodes_.push_back(Node{rule, alt, pos, parent, dist});
  bucket.push_back(int32_t(nodes_.size() - 1));
  return int32_t(nodes_.size() - 1);
}

void MatcherCore::expand(int32_t rule, int32_t alt, int32_t pos, int32_t parent,
                         std::vector<int32_t>* out, int depth) {
  if (depth > kMaxDepth) return;  // unreachable for checked grammars; never loop
  if (!seen_
           .insert({(uint64_t(uint32_t(rule)) << 32) | uint32_t(alt),
                    (uint64_t(uint32_t(pos)) << 32) | uint32_t(parent)})
           .second)
    return;
  const auto& seq = g_->rules[size_t(rule)][size_t(alt)];
  if (size_t(pos) == seq.size()) {
    if (parent == kAccept) {
      out->push_back(kAccept);
    } else {
      const Node p = nodes_[size_t(parent)];
      expand(p.rule, p.alt, p.pos, p.parent, out, depth + 1);
    }
    return;
  }
  const GElem& e = seq[size_t(pos)];
  if (e.kind != GElem::kRule) {
    out->push_back(node(rule, alt, pos, parent));
    return;
  }
  const int32_t cont = size_t(pos) + 1 == seq.size() ? parent : node(rule, alt, pos + 1, parent);
  const auto& alts = g_->rules[size_t(e.value)];
  for (size_t a = 0; a < alts.size(); ++a) expand(e.value, int32_t(a), 0, cont, out, depth + 1);
}

int32_t MatcherCore::intern(std::vector<int32_t> stacks) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  if (stacks.empty()) return kDead;
  uint64_t h = stacks.size();
  for (int32_t s : stacks) h = mix(h, uint64_t(uint32_t(s)));
  auto& bucket = state_index_[h];
  for (int32_t id : bucket)
    if (states_[size_t(id)].stacks == stacks) return id;
  State st;
  st.dist = INT32_MAX;
  for (int32_t s : stacks) {
    if (s == kAccept) {
      st.accepts = true;
      st.dist = 0;
      continue;
    }
    const Node& n = nodes_[size_t(s)];
    st.dist = std::min(st.dist, n.dist);
    const GElem& e = g_->rules[size_t(n.rule)][size_t(n.alt)][size_t(n.pos)];
    if (e.kind == GElem::kBytes) {
      st.first |= g_->sets[size_t(e.value)];
      st.any_bytes = true;
    } else if (std::find(st.tokens.begin(), st.tokens.end(), e.value) == st.tokens.end()) {
      st.tokens.push_back(e.value);
    }
  }
  st.stacks = std::move(stacks);
  states_.push_back(std::move(st));
  bucket.push_back(int32_t(states_.size() - 1));
  return int32_t(states_.size() - 1);
}

int32_t MatcherCore::compute_byte(int32_t state, uint8_t b) {
  if (!states_[size_t(state)].first.test(b)) return kDead;
  std::vector<int32_t> next;
  seen_.clear();
  const std::vector<int32_t> stacks = states_[size_t(state)].stacks;  // expand() may grow states_
  for (int32_t s : stacks) {
    if (s == kAccept) continue;
    const Node n = nodes_[size_t(s)];
    const GElem& e = g_->rules[size_t(n.rule)][size_t(n.alt)][size_t(n.pos)];
    if (e.kind == GElem::kBytes && g_->sets[size_t(e.value)].test(b))
      expand(n.rule, n.alt, n.pos + 1, n.parent, &next, 0);
  }
  return intern(std::move(next));
}

const std::bitset<256>& MatcherCore::loop_bytes(int32_t state) {
  if (!states_[size_t(state)].loop) {
    std::bitset<256> loop;
    const std::bitset<256> first = states_[size_t(state)].first;
    for (int b = 0; b < 256; ++b)
      if (first.test(size_t(b)) && step_byte(state, uint8_t(b)) == state) loop.set(size_t(b));
    states_[size_t(state)].loop = std::make_unique<std::bitset<256>>(loop);
  }
  return *states_[size_t(state)].loop;
}

int32_t MatcherCore::step_token(int32_t state, int32_t id) {
  if (state < 0) return kDead;
  {
    auto& m = states_[size_t(state)].token_next;
    if (auto it = m.find(id); it != m.end()) return it->second;
  }
  std::vector<int32_t> next;
  seen_.clear();
  const std::vector<int32_t> stacks = states_[size_t(state)].stacks;
  for (int32_t s : stacks) {
    if (s == kAccept) continue;
    const Node n = nodes_[size_t(s)];
    const GElem& e = g_->rules[size_t(n.rule)][size_t(n.alt)][size_t(n.pos)];
    if (e.kind == GElem::kToken && e.value == id)
      expand(n.rule, n.alt, n.pos + 1, n.parent, &next, 0);
  }
  const int32_t t = intern(std::move(next));
  states_[size_t(state)].token_next[id] = t;
  return t;
}

std::vector<uint64_t>* MatcherCore::set_mask(int32_t state, std::vector<uint64_t> m,
                                             int32_t max_distance) {
  constexpr size_t kMaxMasks = 512;  // ~25 KB each for a 200k vocabulary
  if (masks_ >= kMaxMasks) {
    for (auto& s : states_) s.mask.reset();
    masks_ = 0;
  }
  ++masks_;
  states_[size_t(state)].mask = std::make_unique<std::vector<uint64_t>>(std::move(m));
  states_[size_t(state)].mask_maxd = max_distance;
  return states_[size_t(state)].mask.get();
}

int32_t MatcherCore::copy_node(int32_t n, const std::vector<Node>& old,
                               std::unordered_map<int32_t, int32_t>* memo) {
  if (n == kAccept) return kAccept;
  if (auto it = memo->find(n); it != memo->end()) return it->second;
  const Node& o = old[size_t(n)];
  const int32_t parent = copy_node(o.parent, old, memo);
  const int32_t id = node(o.rule, o.alt, o.pos, parent);
  (*memo)[n] = id;
  return id;
}

int32_t MatcherCore::compact(int32_t keep) {
  const std::vector<int32_t> stacks = states_[size_t(keep)].stacks;
  std::vector<Node> old = std::move(nodes_);
  nodes_.clear();
  node_index_.clear();
  states_.clear();
  state_index_.clear();
  masks_ = 0;
  std::unordered_map<int32_t, int32_t> memo;
  std::vector<int32_t> fresh;
  for (int32_t s : stacks) fresh.push_back(copy_node(s, old, &memo));
  initial_ = kDead;  // the start state is gone; only `keep` lives on
  return intern(std::move(fresh));
}

// ---- GrammarMatcher --------------------------------------------------------------------------

struct GrammarMatcher::Impl {
  explicit Impl(const Grammar& g) : core(g.impl()), state(core.initial()) {}
  MatcherCore core;
  int32_t state;
};

GrammarMatcher::GrammarMatcher(const Grammar& g) : impl_(std::make_unique<Impl>(g)) {}
GrammarMatcher::~GrammarMatcher() = default;
GrammarMatcher::GrammarMatcher(GrammarMatcher&&) noexcept = default;

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  int32_t s = impl_->state;
  for (char c : bytes) {
    if (s < 0) return false;
    s = impl_->core.step_byte(s, uint8_t(c));
  }
  if (s < 0) return false;
  impl_->state = s;
  return true;
}

bool GrammarMatcher::accept_token(int32_t id) {
  const int32_t s = impl_->core.step_token(impl_->state, id);
  if (s < 0) return false;
  impl_->state = s;
  return true;
}

bool GrammarMatcher::complete() const {
  return impl_->core.accepts(impl_->state);
}

bool GrammarMatcher::can_continue() const {
  return impl_->core.has_bytes(impl_->state) || !impl_->core.tokens(impl_->state).empty();
}

int64_t GrammarMatcher::distance() const {
  return impl_->core.distance(impl_->state);
}

}  // namespace inkling
