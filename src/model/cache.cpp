// Cache allocation. Buffers grow geometrically (global) or up to the ring size (sliding), so
// decode steps allocate only when a power-of-two boundary is crossed.
#include "model/cache.h"

#include <algorithm>

namespace inkling {

KvView LayerCache::reserve(int64_t end) {
  int64_t rows = ring ? std::min(end, ring) : end;
  if (int64_t(k.size()) < rows * row) {
    int64_t cap = std::max<int64_t>(int64_t(k.size()) / std::max<int64_t>(row, 1) * 2, 64);
    cap = std::max(cap, rows);
    if (ring) cap = std::min(cap, ring);
    k.resize(size_t(cap * row));
    v.resize(size_t(cap * row));
  }
  return KvView{k.data(), v.data(), ring ? ring : 0, row, ring > 0};
}

SequenceState SequenceState::fresh(const ModelConfig& c, int64_t chunk) {
  SequenceState s;
  for (const LayerSpec& l : c.layers) {
    LayerCache lc;
    lc.row = int64_t(l.n_kv_heads) * l.head_dim;
    lc.ring = l.sliding ? int64_t(c.window) - 1 + chunk : 0;
    const size_t hist = size_t(c.conv_k - 1);
    lc.conv_k.assign(hist * size_t(lc.row), 0.f);
    lc.conv_v.assign(hist * size_t(lc.row), 0.f);
    lc.conv_attn.assign(hist * size_t(c.hidden), 0.f);
    lc.conv_mlp.assign(hist * size_t(c.hidden), 0.f);
    s.layers.push_back(std::move(lc));
  }
  return s;
}

SequenceState SequenceState::compact_copy() const {
  SequenceState s;
  s.pos = pos;
  s.layers.reserve(layers.size());
  for (const LayerCache& l : layers) {
    LayerCache c;
    c.row = l.row;
    c.ring = l.ring;
    // Rows [0, used) are the ones written: positions 0..pos-1, or the whole ring once it wrapped.
    const int64_t used = l.ring ? std::min(pos, l.ring) : pos;
    const size_t n = std::min(l.k.size(), size_t(used * l.row));
    c.k.assign(l.k.begin(), l.k.begin() + ptrdiff_t(n));
    c.v.assign(l.v.begin(), l.v.begin() + ptrdiff_t(n));
    c.conv_k = l.conv_k;
    c.conv_v = l.conv_v;
    c.conv_attn = l.conv_attn;
    c.conv_mlp = l.conv_mlp;
    s.layers.push_back(std::move(c));
  }
  return s;
}

size_t SequenceState::bytes() const {
  size_t n = 0;
  for (const auto& l : layers)
    n += (l.k.size() + l.v.size() + l.conv_k.size() + l.conv_v.size() + l.conv_attn.size() +
          l.conv_mlp.size()) *
         4;
  return n;
}

}  // namespace inkling
