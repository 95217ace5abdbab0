// The speculative-decoding figures of `generate --draft` and `bench --draft` as JSON.
#pragma once

#include <nlohmann/json.hpp>

#include "inkling/speculative.h"

namespace inkling::cli {

// {"draft", "rounds", "tokens", "tokens_per_round", "acceptance": [per position],
//  "drafted": [...], "accepted": [...], "seconds": {"draft", "verify", "accept"}}
nlohmann::json speculative_json(const SpeculativeStats& st);

}  // namespace inkling::cli
