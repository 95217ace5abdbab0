// Internal form of a Grammar (rules of alternatives of byte-set / rule / special-token elements)
// and the pushdown matcher over it: stacks are hash-consed linked frames, matcher states are
// interned sets of stacks, and byte / token transitions between states are memoized, so the
// constraint's trie walk costs one table lookup per trie edge once a state has been seen.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "inkling/grammar.h"

namespace inkling {

struct GElem {
  enum Kind : uint8_t { kBytes, kRule, kToken };
  Kind kind = kBytes;
  int32_t value = 0;  // kBytes: index into Grammar::Impl::sets; kRule: rule; kToken: token id
};

struct Grammar::Impl {
  std::vector<std::string> names;                      // per rule ("" parts get generated names)
  std::vector<std::vector<std::vector<GElem>>> rules;  // rule -> alternatives -> elements
  std::vector<std::bitset<256>> sets;
  int32_t root = -1;
  // Derived (finish()): the fewest tokens that complete a rule / the rest of an alternative
  // from element `pos` on (one per byte or special token: an upper bound on model tokens).
  std::vector<int32_t> rule_min;
  std::vector<std::vector<std::vector<int32_t>>> suffix_min;  // [rule][alt][pos], pos <= size
};

// Validates (undefined rules, left recursion, rules that never finish) and fills the derived
// tables. `where(rule)` names a rule in messages.
Status finish_grammar(Grammar::Impl* g);

inline constexpr int32_t kAccept = -1;  // the empty stack: the grammar is complete
inline constexpr int32_t kDead = -1;    // transition to no state
inline constexpr int32_t kUnknown = -2;

// The matcher's memo tables. One per constraint (not thread-safe).
class MatcherCore {
 public:
  explicit MatcherCore(std::shared_ptr<const Grammar::Impl> g);
  const Grammar::Impl& grammar() const { return *g_; }

  int32_t initial() const { return initial_; }
  int32_t step_byte(int32_t state, uint8_t b) {
    State& s = states_[size_t(state)];
    if (!s.bytes) {
      s.bytes = std::make_unique<std::array<int32_t, 256>>();
      s.bytes->fill(kUnknown);
    }
    int32_t& t = (*s.bytes)[b];
    if (t == kUnknown) t = compute_byte(state, b);
    return t;
  }
  int32_t step_token(int32_t state, int32_t id);
  bool accepts(int32_t state) const { return states_[size_t(state)].accepts; }
  bool has_bytes(int32_t state) const { return states_[size_t(state)].any_bytes; }
  int32_t distance(int32_t state) const { return states_[size_t(state)].dist; }
  // Special tokens that may come next in this state.
  const std::vector<int32_t>& tokens(int32_t state) const { return states_[size_t(state)].tokens; }
  // Bytes some stack of the state can take (a quick filter for the trie walk).
  const std::bitset<256>& first_bytes(int32_t state) const { return states_[size_t(state)].first; }
  // Bytes that lead from the state back to itself (inside `x*`, e.g. a JSON string's ordinary
  // characters): a token made only of them ends where it started.
  const std::bitset<256>& loop_bytes(int32_t state);
  // The cached allowed-token mask of a state, and the largest distance a token it allows leads
  // to (so a budget check can skip the walk).
  std::vector<uint64_t>* mask(int32_t state) { return states_[size_t(state)].mask.get(); }
  int32_t mask_max_distance(int32_t state) const { return states_[size_t(state)].mask_maxd; }
  std::vector<uint64_t>* set_mask(int32_t state, std::vector<uint64_t> m, int32_t max_distance);
  size_t n_states() const { return states_.size(); }
  size_t n_nodes() const { return nodes_.size(); }
  // Drops every table but `keep` (re-interned as the new state 0's equivalent); returns its id.
  int32_t compact(int32_t keep);

 private:
  struct Node {
    int32_t rule, alt, pos, parent, dist;
  };
  struct State {
    std::vector<int32_t> stacks;  // sorted node ids (kAccept first when present)
    bool accepts = false, any_bytes = false;
    int32_t dist = 0;
    std::bitset<256> first;
    std::vector<int32_t> tokens;
    std::unique_ptr<std::array<int32_t, 256>> bytes;
    std::unordered_map<int32_t, int32_t> token_next;
    std::unique_ptr<std::vector<uint64_t>> mask;
    int32_t mask_maxd = 0;
    std::unique_ptr<std::bitset<256>> loop;
  };
  int32_t node(int32_t rule, int32_t alt, int32_t pos, int32_t parent);
  void expand(int32_t rule, int32_t alt, int32_t pos, int32_t parent, std::vector<int32_t>* out,
              int depth);
  int32_t intern(std::vector<int32_t> stacks);
  int32_t compute_byte(int32_t state, uint8_t b);
  int32_t copy_node(int32_t n, const std::vector<Node>& old,
                    std::unordered_map<int32_t, int32_t>* memo);

  std::shared_ptr<const Grammar::Impl> g_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, std::vector<int32_t>> node_index_;  // hash -> candidates
  std::vector<State> states_;
  std::unordered_map<uint64_t, std::vector<int32_t>> state_index_;
  int32_t initial_ = 0;
  size_t masks_ = 0;  // states holding a cached mask
  // Frames expanded during the current closure: a frame reached twice (through rules that can
  // be empty) yields the same stacks, so it is expanded once (else `a? a? a? ...` is
  // exponential).
  struct PairHash {
    size_t operator()(const std::pair<uint64_t, uint64_t>& p) const {
      return std::hash<uint64_t>()(p.first * 0x9e3779b97f4a7c15ull ^ p.second);
    }
  };
  std::unordered_set<std::pair<uint64_t, uint64_t>, PairHash> seen_;
};

struct VocabIndex::Impl {
  struct Node {
    int32_t first_child = -1, next_sibling = -1;
    int32_t token = -1;  // the ordinary token whose bytes end here
    uint8_t byte = 0;
  };
  std::vector<Node> nodes;   // [0] = root (no byte); preorder
  std::vector<int32_t> end;  // per node: one past its subtree in `nodes` (preorder)
  // Per node: index into `below` of the bytes used in its subtree (its own byte excluded), for
  // subtrees of at least kMinSkip nodes; -1 otherwise.
  static constexpr int32_t kMinSkip = 8;
  std::vector<int32_t> below_index;
  std::vector<std::bitset<256>> below;
  size_t n_tokens = 0;
  std::vector<int32_t> specials;   // added-token ids (never in the trie)
  std::vector<std::string> bytes;  // per id: ordinary-token bytes ("" for specials)
  std::vector<uint8_t> is_special;
};

}  // namespace inkling
