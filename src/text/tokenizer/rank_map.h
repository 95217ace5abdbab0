// RankMap: byte string -> BPE rank. One- and two-byte keys use direct tables; longer keys an
// open-addressing hash table whose slots hold keys of up to 8 bytes inline (no second memory
// access) and longer keys as views into one arena (the vocabulary's bytes). Built once at
// load, then read-only (safe to share between threads).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

namespace inkling::tok {

class RankMap {
 public:
  static constexpr int32_t kNone = -1;

  // `arena` must outlive the map; keys are (offset, length) into it, non-empty. Returns the
  // number of distinct keys (fewer than keys.size() when some repeat; the first rank wins).
  size_t build(const char* arena, const std::vector<std::pair<uint32_t, uint32_t>>& keys,
               const std::vector<int32_t>& ranks);

  int32_t find(const char* p, size_t n) const {
    if (n <= 2) {
      if (n == 2) return pair_[(uint8_t(p[0]) << 8) | uint8_t(p[1])];
      return n == 1 ? byte_[uint8_t(p[0])] : kNone;
    }
    if (slots_.empty()) return kNone;
    if (n <= 8) {
      const uint64_t w = load_small(p, n);
      size_t i = hash_small(w, n) & mask_;
      for (;;) {
        const Slot& s = slots_[i];
        if (s.len == n && s.word == w) return s.rank;
        if (s.len == 0) return kNone;
        i = (i + 1) & mask_;
      }
    }
    const uint64_t h = hash_long(p, n);
    const auto tag = static_cast<uint32_t>(h >> 32);
    size_t i = h & mask_;
    for (;;) {
      const Slot& s = slots_[i];
      if (s.len == n && static_cast<uint32_t>(s.word >> 32) == tag &&
          std::memcmp(arena_ + static_cast<uint32_t>(s.word), p, n) == 0) {
        return s.rank;
      }
      if (s.len == 0) return kNone;
      i = (i + 1) & mask_;
    }
  }
  int32_t find(std::string_view s) const { return find(s.data(), s.size()); }
  size_t size() const { return size_; }

 private:
  // The n (1..8) bytes at p, zero-padded, without reading past p + n.
  static uint64_t load_small(const char* p, size_t n) {
    if (n >= 4) {
      uint32_t lo, hi;
      std::memcpy(&lo, p, 4);
      std::memcpy(&hi, p + n - 4, 4);
      return lo | (static_cast<uint64_t>(hi) << (8 * (n - 4)));  // overlap ORs equal bytes
    }
    return uint64_t(uint8_t(p[0])) | (uint64_t(uint8_t(p[n >> 1])) << (8 * (n >> 1))) |
           (uint64_t(uint8_t(p[n - 1])) << (8 * (n - 1)));
  }
  static uint64_t mix(uint64_t x) {
    const __uint128_t m = static_cast<__uint128_t>(x) * 0xD6E8FEB86659FD93ull;
    return static_cast<uint64_t>(m) ^ static_cast<uint64_t>(m >> 64);
  }
  static uint64_t hash_small(uint64_t w, size_t n) { return mix(w ^ (n * 0x9E3779B97F4A7C15ull)); }
  static uint64_t hash_long(const char* p, size_t n) {
    uint64_t h = n * 0x9E3779B97F4A7C15ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      h = mix(h ^ w);
    }
    if (i < n) h = mix(h ^ load_small(p + i, n - i));
    return mix(h ^ (h >> 29));
  }

  struct Slot {
    uint64_t word = 0;  // len <= 8: the key bytes, zero-padded; else arena offset | tag << 32
    uint32_t len = 0;   // 0 = empty slot
    int32_t rank = kNone;
  };
  const char* arena_ = nullptr;
  std::vector<int32_t> byte_ = std::vector<int32_t>(256, kNone);
  std::vector<int32_t> pair_ = std::vector<int32_t>(65536, kNone);
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace inkling::tok
