// Cache allocation. Buffers grow geometrically (global) or up to the ring size (sliding), so
// decode steps allocate only when a power-of-two boundary is crossed.
#include "model/cache.h"

#include <algorithm>

namespace inkling {

int64_t LayerCache::rows_allocated() const {
  const size_t n = type == KvType::kF32 ? k.size() : k16.size();
  return row > 0 ? int64_t(n) / row : 0;
}

KvView LayerCache::reserve(int64_t end) {
  int64_t rows = ring ? std::min(end, ring) : end;
  const int64_t have = rows_allocated();
  if (have < rows) {
    int64_t cap = std::max<int64_t>(have * 2, 64);
    cap = std::max(cap, rows);
    if (ring) cap = std::min(cap, ring);
    if (type == KvType::kF32) {
      k.resize(size_t(cap * row));
      v.resize(size_t(cap * row));
    } else {
      k16.resize(size_t(cap * row));
      v16.resize(size_t(cap * row));
    }
  }
  KvView kv;
  kv.k = type == KvType::kF32 ? static_cast<const void*>(k.data()) : k16.data();
  kv.v = type == KvType::kF32 ? static_cast<const void*>(v.data()) : v16.data();
  kv.capacity = ring ? ring : 0;
  kv.stride = row;
  kv.ring = ring > 0;
  kv.type = type;
  return kv;
}

void LayerCache::put(int64_t pos, const float* key, const float* value) {
  const int64_t at = slot(pos);
  if (type == KvType::kF32) {
    std::copy_n(key, row, k.data() + at);
    std::copy_n(value, row, v.data() + at);
    return;
  }
  for (int64_t i = 0; i < row; ++i) {
    k16[size_t(at + i)] = f32_to_bf16(key[i]);
    v16[size_t(at + i)] = f32_to_bf16(value[i]);
  }
}

LayerCache LayerCache::fresh(const ModelConfig& c, const LayerSpec& l, int64_t chunk, KvType kv) {
  LayerCache lc;
  lc.type = kv;
  lc.row = int64_t(l.n_kv_heads) * l.head_dim;
  lc.ring = l.sliding ? int64_t(l.rel_extent) - 1 + chunk : 0;  // sliding: R == W
  const size_t hist = size_t(c.conv_k - 1);
  lc.conv_k.assign(hist * size_t(lc.row), 0.f);
  lc.conv_v.assign(hist * size_t(lc.row), 0.f);
  lc.conv_attn.assign(hist * size_t(c.hidden), 0.f);
  lc.conv_mlp.assign(hist * size_t(c.hidden), 0.f);
  return lc;
}

void LayerCache::rewind_convs(const ConvTrace& t, int64_t keep, int64_t taps) {
  auto one = [&](const std::vector<float>& rows, std::vector<float>& state) {
    const size_t C = state.size() / size_t(taps - 1);
    std::copy_n(rows.begin() + ptrdiff_t(size_t(keep) * C), state.size(), state.begin());
  };
  if (taps <= 1) return;
  one(t.k, conv_k), one(t.v, conv_v), one(t.attn, conv_attn), one(t.mlp, conv_mlp);
}

SequenceState SequenceState::fresh(const ModelConfig& c, int64_t chunk, KvType kv) {
  SequenceState s;
  for (const LayerSpec& l : c.cache_slots()) s.layers.push_back(LayerCache::fresh(c, l, chunk, kv));
  return s;
}

LayerCache LayerCache::compact_copy(int64_t pos) const {
  LayerCache c;
  c.type = type;
  c.row = row;
  c.ring = ring;
  // Rows [0, used) are the ones written: positions 0..pos-1, or the whole ring once it wrapped.
  const int64_t used = ring ? std::min(pos, ring) : pos;
  const size_t n = std::min(k.size(), size_t(used * row));
  c.k.assign(k.begin(), k.begin() + ptrdiff_t(n));
  c.v.assign(v.begin(), v.begin() + ptrdiff_t(n));
  const size_t n16 = std::min(k16.size(), size_t(used * row));
  c.k16.assign(k16.begin(), k16.begin() + ptrdiff_t(n16));
  c.v16.assign(v16.begin(), v16.begin() + ptrdiff_t(n16));
  c.conv_k = conv_k;
  c.conv_v = conv_v;
  c.conv_attn = conv_attn;
  c.conv_mlp = conv_mlp;
  return c;
}

size_t LayerCache::bytes() const {
  return (k.size() + v.size() + conv_k.size() + conv_v.size() + conv_attn.size() +
          conv_mlp.size()) *
             4 +
         (k16.size() + v16.size()) * 2;
}

SequenceState SequenceState::compact_copy() const {
  SequenceState s;
  s.pos = pos;
  s.layers.reserve(layers.size());
  for (const LayerCache& l : layers) s.layers.push_back(l.compact_copy(pos));
  return s;
}

size_t SequenceState::bytes() const {
  size_t n = 0;
  for (const auto& l : layers) n += l.bytes();
  return n;
}

}  // namespace inkling
