// Inkling 2 checkpoint layouts -> one canonical tensor set: transformers' Inkling2 names under
// "model." (the original Thinking Machines layout model.llm.*, which save_pretrained writes, and
// transformers' own in-memory names, under model. or model.language_model.). Routed experts'
// fused w13 / gate_up_proj become mlp.experts.gate_proj / up_proj views, conv weights [C, K]
// views; nothing is copied. The original message queries keep their two tensors
// (model.message_input.og_queries / og_kv_queries, merged at binding).
#pragma once

#include "model/layouts.h"

namespace inkling {

Result<TensorMap> sanitize_inkling2(const TensorMap& in, SanitizeReport* report);

}  // namespace inkling
