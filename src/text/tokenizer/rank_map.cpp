// RankMap construction (see rank_map.h). Duplicate keys keep the first rank inserted; the
// caller compares the distinct count with the key count to report duplicates.
#include "text/tokenizer/rank_map.h"

namespace inkling::tok {

size_t RankMap::build(const char* arena, const std::vector<std::pair<uint32_t, uint32_t>>& keys,
                      const std::vector<int32_t>& ranks) {
  arena_ = arena;
  size_t long_keys = 0;
  for (const auto& k : keys) long_keys += k.second > 2;
  size_t cap = 16;
  while (cap < long_keys * 2 + 16) cap <<= 1;  // load factor <= 0.5
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  size_ = 0;
  for (size_t k = 0; k < keys.size(); ++k) {
    const auto [off, len] = keys[k];
    const char* p = arena + off;
    if (len == 0) continue;
    if (find(p, len) != kNone) continue;  // duplicate: keep the first
    ++size_;
    if (len == 1) {
      byte_[uint8_t(p[0])] = ranks[k];
      continue;
    }
    if (len == 2) {
      pair_[(uint8_t(p[0]) << 8) | uint8_t(p[1])] = ranks[k];
      continue;
    }
    Slot s;
    s.len = len;
    s.rank = ranks[k];
    size_t i;
    if (len <= 8) {
      s.word = load_small(p, len);
      i = hash_small(s.word, len) & mask_;
    } else {
      const uint64_t h = hash_long(p, len);
      s.word = off | (h >> 32 << 32);
      i = h & mask_;
    }
    while (slots_[i].len != 0) i = (i + 1) & mask_;
    slots_[i] = s;
  }
  return size_;
}

}  // namespace inkling::tok
