// A loaded model: config, the mapped checkpoint files and the bound weights. Immutable after
// load and shared by every session. Also the forward pass over a chunk of tokens.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/safetensors.h"
#include "base/thread_pool.h"
#include "inkling/observer.h"
#include "model/cache.h"
#include "model/config.h"
#include "model/layer.h"
#include "model/towers.h"
#include "model/weights.h"

namespace inkling {

struct Model {
  ModelConfig config;
  TensorStore store;                     // owns the mappings the weight views point into
  std::optional<TensorStore> mtp_store;  // mtp.safetensors when the index does not list it
  Weights weights;
  SanitizeReport layout;
  int64_t n_tensors = 0;  // tensors in the checkpoint files
  MediaConfig media;      // tower config, placeholder ids, image upscale policy
  Towers towers;          // image / audio towers (each may be absent or unusable)

  static Result<std::unique_ptr<Model>> load(const std::string& model_dir);
};

// Reusable activation buffers for chunks of up to `chunk` tokens (allocated once per session).
struct Scratch {
  int64_t chunk = 0;
  std::vector<float> x, a, q, k, v, r, att, br, gu, y;  // gu: [chunk, 2 x MLP width]
  std::vector<float> logits;  // [chunk, unpadded_vocab], batched head output; lazily sized
  std::vector<float> moe_in, moe_gu, moe_out;  // gathered rows of one expert's tokens
  std::vector<float> router_logits;            // [chunk, E+S]
  std::vector<int32_t> route_idx;              // [chunk, k]
  std::vector<float> route_w, route_gamma;     // [chunk, k], [chunk, S]
  std::vector<int32_t> expert_tokens;          // token slots grouped by expert
  std::vector<LayerSegment> layer_segs;        // per forward call: each segment's layer view
  std::vector<float> v2;  // Inkling 2's block states and layer buffers (model/inkling2/forward.cpp)

  static Scratch make(const ModelConfig& c, int64_t chunk);
  // Bytes make() would allocate, computed without allocating (for `inspect`).
  static size_t footprint(const ModelConfig& c, int64_t chunk);
};

// One sequence's share of a batched forward: `n` tokens appended to `state`. The outputs, each
// optional, receive every position (all_positions) or the last one only: `logits` [., unpadded
// vocab]; `hidden` [., H] the final hidden state before the final norm; `hidden_normed` [., H]
// after it (not divided by the muP multiplier: what a multi-token-prediction depth reads).
struct Segment {
  SequenceState* state = nullptr;
  const int32_t* tokens = nullptr;
  int64_t n = 0;
  float* logits = nullptr;
  bool all_positions = false;
  float* hidden = nullptr;
  float* hidden_normed = nullptr;
  ConvTrace* trace =
      nullptr;  // optional [n_layers]: each layer's conv inputs (speculative rollback)
  bool last_logits_only = false;  // with all_positions: `logits` gets the last position only
  // Optional [n]: a non-null entry is an image/audio tower row [H] that replaces this token's
  // row after embed_norm (tower rows carry their own final norm).
  const float* const* embeds = nullptr;
};

// Runs several sequences through the model in one pass: every matmul (and each MoE expert) sees
// the rows of all segments together; convs and attention use each segment's own state. The
// total token count must be <= scratch.chunk. Advances every segment's state.
// `observer` (optional) sees every named activation (include/inkling/observer.h).
void forward_batch(const Model& m, const Segment* segs, size_t n_segs, Scratch& s, ThreadPool* pool,
                   ActivationObserver* observer = nullptr);

}  // namespace inkling
