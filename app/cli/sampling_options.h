// The sampling options `generate` and `chat` share: one registration, one seed rule.
#pragma once

#include <cstdint>

#include <CLI/CLI.hpp>

#include "inkling/sampler.h"

namespace inkling::cli {

// What the sampling flags fill in; seed < 0 means "pick a random one".
struct SamplingOptions {
  SamplingParams params;
  int64_t seed = -1;
  // The parameters to sample with: the given seed, or a random one.
  SamplingParams resolved() const;
};

// Registers --temperature/--temp, --top-k, --top-p, --min-p and --seed, with their ranges.
void add_sampling_options(CLI::App& app, SamplingOptions* s);

}  // namespace inkling::cli
