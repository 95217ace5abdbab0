// --expert-parallel and --ep-timeout for generate, bench and serve (docs/scale-out.md): under
// mpirun, rank 0 runs the command with the routed experts spread over every rank; the other
// ranks only answer expert requests.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

#include "dist/cluster.h"
#include "inkling/engine.h"

namespace inkling::cli {

struct ExpertParallelArgs {
  bool on = false;
  double timeout_s = 60;
  bool stats = false;
};

void add_expert_parallel_options(CLI::App& app, ExpertParallelArgs* a);

// Holds MPI for one command. start(): without --expert-parallel nothing (nullopt); with it,
// on ranks > 0 serves experts until rank 0 ends and returns that exit code; on rank 0 checks
// every rank's model and sets opts->expert_executor (nullopt: go on), or returns an exit code
// after printing the error. Every rank binds its kernels for opts->numerics (set it first).
// The destructor stops the other ranks and ends MPI.
class ExpertParallel {
 public:
  std::optional<int> start(const ExpertParallelArgs& a, const std::string& model_dir, int n_threads,
                           EngineOptions* opts);
  // The cluster on rank 0 after start() with --expert-parallel, else null.
  dist::Cluster* cluster() const { return cluster_.get(); }

 private:
  std::unique_ptr<dist::Cluster> cluster_;
};

}  // namespace inkling::cli
