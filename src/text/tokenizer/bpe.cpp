// tiktoken's _byte_pair_merge, two ways: a flat scan (short pieces, cache-friendly, what
// tiktoken does) and a heap over a linked list for long pieces (O(n log n) instead of O(n^2)).
// Both merge the lowest-rank pair, leftmost on ties, so they give identical ids.
#include "text/tokenizer/bpe.h"

#include <algorithm>
#include <functional>
#include <limits>

namespace inkling::tok {
namespace {

constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
constexpr size_t kLongPiece = 256;  // bytes; above this the heap variant wins

inline int32_t rank_of(const RankMap& ranks, const char* p, size_t n) {
  const int32_t r = ranks.find(p, n);
  return r == RankMap::kNone ? kMax : r;
}

void merge_short(std::string_view piece, const RankMap& ranks, BpeScratch* s,
                 std::vector<int32_t>* out) {
  const size_t n = piece.size();
  const char* p = piece.data();
  // parts[i] = (start offset, rank of merging part i with part i+1); sentinel at the end.
  auto& start = s->start;
  auto& rank = s->rank;
  start.resize(n + 1);
  rank.resize(n + 1);
  for (size_t i = 0; i <= n; ++i) start[i] = static_cast<uint32_t>(i);
  for (size_t i = 0; i + 1 < n; ++i) rank[i] = rank_of(ranks, p + i, 2);
  rank[n - 1] = kMax;
  rank[n] = kMax;
  size_t len = n + 1;  // number of boundaries
  // rank of merging parts i, i+1 once i+1 has been absorbed: bytes start[i] .. start[i+3].
  auto pair_rank = [&](size_t i) {
    if (i + 3 >= len) return kMax;
    return rank_of(ranks, p + start[i], start[i + 3] - start[i]);
  };
  while (len > 2) {
    int32_t best = kMax;
    size_t bi = 0;
    for (size_t i = 0; i + 1 < len; ++i) {
      if (rank[i] < best) {
        best = rank[i];
        bi = i;
      }
    }
    if (best == kMax) break;
    rank[bi] = pair_rank(bi);
    if (bi > 0) rank[bi - 1] = pair_rank(bi - 1);
    // Remove boundary bi+1.
    std::copy(start.begin() + bi + 2, start.begin() + len, start.begin() + bi + 1);
    std::copy(rank.begin() + bi + 2, rank.begin() + len, rank.begin() + bi + 1);
    --len;
  }
  for (size_t i = 0; i + 1 < len; ++i) {
    out->push_back(ranks.find(p + start[i], start[i + 1] - start[i]));
  }
}

// Heap entries pack (rank << 32 | left part index); stale entries are skipped on pop.
void merge_long(std::string_view piece, const RankMap& ranks, BpeScratch* s,
                std::vector<int32_t>* out) {
  const size_t n = piece.size();
  const char* p = piece.data();
  auto& start = s->start;  // start offset of part i (parts are indexed by their first byte)
  auto& next = s->next;
  auto& prev = s->prev;
  auto& rank = s->rank;  // current merge rank of part i with its successor
  auto& heap = s->heap;
  start.resize(n + 1);
  next.resize(n + 1);
  prev.resize(n + 1);
  rank.resize(n + 1);
  heap.clear();
  for (size_t i = 0; i <= n; ++i) {
    start[i] = static_cast<uint32_t>(i);
    next[i] = static_cast<uint32_t>(i + 1);
    prev[i] = static_cast<uint32_t>(i == 0 ? 0 : i - 1);
  }
  auto key = [](int32_t r, uint32_t i) { return (uint64_t(uint32_t(r)) << 32) | i; };
  for (size_t i = 0; i + 1 < n; ++i) {
    rank[i] = rank_of(ranks, p + i, 2);
    if (rank[i] != kMax) heap.push_back(key(rank[i], static_cast<uint32_t>(i)));
  }
  rank[n - 1] = kMax;
  rank[n] = kMax;
  std::make_heap(heap.begin(), heap.end(), std::greater<>());
  // Part i spans [i, next[i]); part n is the end sentinel.
  auto recompute = [&](uint32_t i) {
    const uint32_t j = next[i];
    if (j >= n) return kMax;
    const uint32_t k = next[j];
    return rank_of(ranks, p + i, k - i);
  };
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const uint64_t top = heap.back();
    heap.pop_back();
    const auto r = static_cast<int32_t>(top >> 32);
    const auto i = static_cast<uint32_t>(top);
    if (rank[i] != r || next[i] >= n + 1) continue;  // stale
    // Merge part i with its successor j.
    const uint32_t j = next[i];
    next[i] = next[j];
    if (next[j] <= n) prev[next[j]] = i;
    rank[j] = kMax;
    next[j] = static_cast<uint32_t>(n + 1);  // mark j dead
    rank[i] = recompute(i);
    if (rank[i] != kMax) {
      heap.push_back(key(rank[i], i));
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
    }
    if (i > 0) {
      const uint32_t h = prev[i];
      rank[h] = recompute(h);
      if (rank[h] != kMax) {
        heap.push_back(key(rank[h], h));
        std::push_heap(heap.begin(), heap.end(), std::greater<>());
      }
    }
  }
  for (uint32_t i = 0; i < n; i = next[i]) out->push_back(ranks.find(p + i, next[i] - i));
}

}  // namespace

void bpe_encode(std::string_view piece, const RankMap& ranks, BpeScratch* scratch,
                std::vector<int32_t>* out) {
  if (piece.empty()) return;
  const int32_t whole = ranks.find(piece);
  if (whole != RankMap::kNone) {
    out->push_back(whole);
    return;
  }
  if (piece.size() <= kLongPiece) {
    merge_short(piece, ranks, scratch, out);
  } else {
    merge_long(piece, ranks, scratch, out);
  }
}

}  // namespace inkling::tok
