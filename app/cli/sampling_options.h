// The sampling options `generate` and `chat` share: one registration, one seed rule, one parser
// for --logit-bias.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "inkling/sampler.h"
#include "inkling/status.h"

namespace inkling::cli {

// What the sampling flags fill in; seed < 0 means "pick a random one".
struct SamplingOptions {
  SamplingParams params;
  int64_t seed = -1;
  std::string logit_bias;  // --logit-bias as given: ID=BIAS[,ID=BIAS...]
  // The parameters to sample with: the given seed or a random one, and --logit-bias parsed. Fails
  // with one message naming the flag on a non-finite value or bad --logit-bias syntax; the ids
  // are checked against the vocabulary later, by check_logit_bias().
  Result<SamplingParams> resolved() const;
};

// Registers --temperature/--temp, --top-k, --top-p, --min-p, --seed, --repeat-penalty,
// --presence-penalty, --frequency-penalty and --logit-bias, with their ranges.
void add_sampling_options(CLI::App& app, SamplingOptions* s);

// "ID=BIAS[,ID=BIAS...]" (spaces around items allowed) -> (id, bias) pairs in order; ids are
// non-negative int32, biases finite floats.
Result<std::vector<std::pair<int32_t, float>>> parse_logit_bias(const std::string& text);

// Every --logit-bias id must be a token of the model (below `vocab`, the logits' width).
Status check_logit_bias(const SamplingParams& p, int64_t vocab);

}  // namespace inkling::cli
