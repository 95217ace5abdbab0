// `inkling bench --draft K`: speculative decoding measured against plain decoding on the same
// engine in one run (bench_draft.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "inkling/engine.h"
#include "inkling/status.h"

namespace inkling::cli {

// Greedy generation of `gen` tokens after `prompt`, plainly (one decode per token) and with
// SpeculativeDecoder at K = 1..max_k, each from a fresh session; plus the cost of one verify
// pass of K+1 rows relative to one decode step (a forward of K+1 tokens at the same context,
// state restored after each). K beyond the model's MTP depths (or a model without any) gets the
// verify cost only. Returns {"plain_decode_tok_s", "runs": [{"draft", "decode_tok_s",
// "speedup", "verify_cost_vs_decode", "same_ids", and the speculative stats}]}.
Result<nlohmann::json> bench_draft(Engine& engine, const std::vector<int32_t>& prompt, int64_t gen,
                                   int max_k, int64_t draft_vocab = 0);

}  // namespace inkling::cli
