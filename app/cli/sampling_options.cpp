// The sampling options `generate` and `chat` share (see sampling_options.h).
#include "sampling_options.h"

#include <random>

namespace inkling::cli {

SamplingParams SamplingOptions::resolved() const {
  SamplingParams p = params;
  p.seed = seed >= 0 ? uint64_t(seed) : std::random_device{}();
  return p;
}

void add_sampling_options(CLI::App& app, SamplingOptions* s) {
  app.add_option("--temperature,--temp", s->params.temperature, "sampling temperature (0 = greedy)")
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--top-k", s->params.top_k, "keep the k most likely tokens (0 = off)")
      ->check(CLI::Range(0, 1 << 30));
  app.add_option("--top-p", s->params.top_p, "nucleus sampling mass (1 = off)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--min-p", s->params.min_p, "drop tokens below min_p x the top probability")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--seed", s->seed, "random seed (default: random)");
}

}  // namespace inkling::cli
