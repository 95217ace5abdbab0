// Named activations of the forward pass: an observer the engine calls with each intermediate
// tensor, under the names tools/dump_activations.py gives the transformers reference
// ("embed_norm", "layers.3.self_attn.q_proj", "layers.3.router_topk_ids", "norm", "logits", ...).
// Comparing the two dumps layer by layer finds where a new bug starts.
//
// Each call covers the rows of one forward pass (one prefill chunk or decode step): the first
// dimension of `shape` counts those rows, so a prompt run in several chunks arrives in several
// calls that concatenate along it. Not produced: "layers.N.self_attn.attn_weights" (the
// attention kernel never materialises the probabilities). With no observer set, the forward
// pass pays one pointer test per name.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace inkling {

class ActivationObserver {
 public:
  virtual ~ActivationObserver() = default;
  // Asked once per name per forward pass before any copy is made; false skips the tensor.
  virtual bool wants(std::string_view name) const {
    (void)name;
    return true;
  }
  // A float tensor, row-major with the given shape, valid only during the call.
  virtual void on_tensor(std::string_view name, std::span<const int64_t> shape,
                         const float* data) = 0;
  // An int32 tensor (router_topk_ids).
  virtual void on_ids(std::string_view name, std::span<const int64_t> shape,
                      const int32_t* data) = 0;
};

}  // namespace inkling
