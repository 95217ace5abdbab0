// Per-sequence state: for every layer a KV cache (f32 or bf16) and four f32 short-conv states
// (k, v, attn, mlp).
// Global layers keep every key; sliding layers keep a ring of W-1+chunk keys, enough for true
// distances inside the window for any chunk of up to `chunk` new tokens. Copyable: a copy is a
// snapshot of the whole sequence.
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.h"
#include "ops/attention.h"

namespace inkling {

// The inputs of one layer's four short convs over one call, each prefixed by the conv state
// before the call: [K-1 + n, C] per conv. The state after the call's first `keep` rows is rows
// [keep, keep + K-1) of it, which is how a speculative verify pass is rolled back without a
// replay. Grown on demand; filled only when a LayerSegment asks for it.
struct ConvTrace {
  std::vector<float> k, v, attn, mlp;
};

struct LayerCache {
  KvType type = KvType::kF32;
  std::vector<float> k, v;         // kF32: rows of n_kv*hd floats; grown on demand
  std::vector<uint16_t> k16, v16;  // kBF16: the same rows as bf16 bits
  int64_t row = 0;                 // elements per row
  int64_t ring = 0;                // sliding: ring capacity in rows; 0 for global layers
  std::vector<float> conv_k, conv_v, conv_attn, conv_mlp;  // [K-1, C] each, always f32

  // Makes room for positions [0, end) and returns the view the attention kernel reads.
  KvView reserve(int64_t end);
  // Writes position pos's key and value rows (row floats each), rounded to bf16 when the cache
  // is bf16 (round to nearest even). reserve() must have made room.
  void put(int64_t pos, const float* key, const float* value);
  int64_t rows_allocated() const;
  int64_t slot(int64_t pos) const { return (ring ? pos % ring : pos) * row; }

  // An empty cache for one layer of geometry `l` (sliding: a ring of R-1+chunk rows).
  static LayerCache fresh(const ModelConfig& c, const LayerSpec& l, int64_t chunk, KvType kv);
  // A copy holding only the rows positions [0, pos) wrote (or the whole ring once it wrapped).
  LayerCache compact_copy(int64_t pos) const;
  size_t bytes() const;  // of the buffers' current sizes
  // Sets the four conv states to those after the first `keep` rows of the traced call.
  void rewind_convs(const ConvTrace& t, int64_t keep, int64_t taps);
};

struct SequenceState {
  int64_t pos = 0;  // tokens consumed so far
  std::vector<LayerCache> layers;

  static SequenceState fresh(const ModelConfig& c, int64_t chunk, KvType kv = KvType::kF32);
  // A copy holding only the cache rows in use (the buffers grow by doubling, so up to half of
  // a live cache is spare room): what a snapshot keeps.
  SequenceState compact_copy() const;
  size_t bytes() const;  // of the buffers' current sizes
};

}  // namespace inkling
