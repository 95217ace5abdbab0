// Prefix cache: linear scan over a small number of snapshots (tens), LRU eviction by bytes.
#include "prefix_cache.h"

#include <algorithm>

namespace inkling::server {

size_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

const PrefixCache::Entry* PrefixCache::lookup(std::span<const int32_t> prompt, size_t max_len,
                                              uint64_t now, bool need_spec) {
  Entry* best = nullptr;
  for (auto& e : entries_) {
    if (e.tokens.size() > max_len || (best && e.tokens.size() <= best->tokens.size())) continue;
    if (need_spec && !e.spec) continue;
    if (common_prefix(e.tokens, prompt) == e.tokens.size()) best = &e;
  }
  if (best) best->last_used = now;
  return best;
}

bool PrefixCache::contains(std::span<const int32_t> tokens, bool need_spec) const {
  for (const auto& e : entries_)
    if (std::equal(e.tokens.begin(), e.tokens.end(), tokens.begin(), tokens.end()))
      return !need_spec || e.spec;
  return false;
}

void PrefixCache::insert(std::vector<int32_t> tokens, std::shared_ptr<const SessionSnapshot> snap,
                         size_t bytes, uint64_t now,
                         std::shared_ptr<const SpeculativeSnapshot> spec) {
  if (bytes > budget_ || tokens.empty()) return;
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->tokens == tokens) {
      it->last_used = now;
      if (it->spec || !spec) return;
      used_ -= it->bytes;  // replaced below by the entry that also holds the decoder state
      entries_.erase(it);
      break;
    }
  // A cached strict prefix of the new entry is kept: other prompts may share only that part.
  while (used_ + bytes > budget_ && !entries_.empty()) {
    auto lru =
        std::min_element(entries_.begin(), entries_.end(),
                         [](const Entry& a, const Entry& b) { return a.last_used < b.last_used; });
    used_ -= lru->bytes;
    entries_.erase(lru);
  }
  entries_.push_back(Entry{std::move(tokens), std::move(snap), std::move(spec), bytes, now});
  used_ += bytes;
}

}  // namespace inkling::server
