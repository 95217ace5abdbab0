// Binds Inkling 2's canonical tensors (model/inkling2/layouts.h) into Weights: the shared
// embedding, head and final norm, and Weights::v2 per physical layer, every shape checked
// against the config with one error naming the checkpoint tensor.
#pragma once

#include "model/layouts.h"
#include "model/quant_config.h"
#include "model/weights.h"

namespace inkling {

Result<Weights> bind_inkling2(const ModelConfig& c, const TensorMap& tensors,
                              const QuantConfig& quant);

}  // namespace inkling
