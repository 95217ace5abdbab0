// Prefix cache: immutable session snapshots keyed by the exact token prefix they hold, so a
// request whose prompt starts with a cached prefix restores KV + conv state there and prefills
// only the rest. Snapshots are taken at exact positions (turn boundaries, ends of requests), so
// the short-conv state matches the boundary. LRU under a byte budget; scheduler thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "inkling/engine.h"
#include "inkling/speculative.h"

namespace inkling::server {

class PrefixCache {
 public:
  struct Entry {
    std::vector<int32_t> tokens;
    std::shared_ptr<const SessionSnapshot> snap;
    // The speculative decoder's state at the same position (null: taken without --draft), which
    // a speculative request needs besides the trunk's; any request can use `snap` alone.
    std::shared_ptr<const SpeculativeSnapshot> spec;
    size_t bytes = 0;
    uint64_t last_used = 0;
  };

  explicit PrefixCache(size_t budget_bytes) : budget_(budget_bytes) {}

  // The longest entry whose tokens are a prefix of `prompt` and at most `max_len` long (with
  // `need_spec`: among those holding a decoder state).
  const Entry* lookup(std::span<const int32_t> prompt, size_t max_len, uint64_t now,
                      bool need_spec = false);
  bool contains(std::span<const int32_t> tokens, bool need_spec = false) const;
  // Adds (or refreshes) an entry; an entry of the same tokens without a decoder state is
  // replaced by one with it. Evicts least recently used ones beyond the budget.
  void insert(std::vector<int32_t> tokens, std::shared_ptr<const SessionSnapshot> snap,
              size_t bytes, uint64_t now, std::shared_ptr<const SpeculativeSnapshot> spec = {});
  size_t bytes() const { return used_; }
  size_t size() const { return entries_.size(); }
  size_t budget() const { return budget_; }

 private:
  size_t budget_, used_ = 0;
  std::vector<Entry> entries_;
};

// Length of the common prefix of a and b.
size_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b);

}  // namespace inkling::server
