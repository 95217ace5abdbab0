// A loaded model: config, the mapped checkpoint files and the bound weights. Immutable after
// load and shared by every session. Also the forward pass over a chunk of tokens.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/safetensors.h"
#include "base/thread_pool.h"
#include "model/cache.h"
#include "model/config.h"
#include "model/weights.h"

namespace inkling {

struct Model {
  ModelConfig config;
  TensorStore store;  // owns the mappings the weight views point into
  Weights weights;
  SanitizeReport layout;
  int64_t n_tensors = 0;  // tensors in the checkpoint files

  static Result<std::unique_ptr<Model>> load(const std::string& model_dir);
};

// Reusable activation buffers for chunks of up to `chunk` tokens (allocated once per session).
struct Scratch {
  int64_t chunk = 0;
  std::vector<float> x, a, q, k, v, r, att, br, g, u, h, y, logits_row;
  std::vector<float> moe_in, moe_g, moe_u, moe_out;  // gathered rows of one expert's tokens
  std::vector<float> router_logits;                  // [chunk, E+S]
  std::vector<int32_t> route_idx;                    // [chunk, k]
  std::vector<float> route_w, route_gamma;           // [chunk, k], [chunk, S]
  std::vector<int32_t> expert_tokens;                // token slots grouped by expert

  static Scratch make(const ModelConfig& c, int64_t chunk);
};

// Runs tokens[0..T) (T <= scratch.chunk) through the model at state.pos, advancing the state.
// If `logits` is non-null it receives [T, unpadded_vocab] (all_positions) or the last row only.
void forward_chunk(const Model& m, const int32_t* tokens, int64_t T, SequenceState& state,
                   Scratch& s, float* logits, bool all_positions, ThreadPool* pool);

}  // namespace inkling
