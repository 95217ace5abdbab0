// Expert parallelism over MPI (docs/scale-out.md). Every rank runs the same `inkling` command
// under mpirun; rank 0 runs the program (generate, bench, serve) with an ExpertExecutor that
// sends each MoE layer's rows to the ranks owning the chosen experts, and the other ranks only
// answer those requests. Built without MPI (INKLING_MPI=OFF), init() says so.
#pragma once

#include <memory>
#include <string>

#include "inkling/status.h"
#include "model/expert_executor.h"

namespace inkling::dist {

struct ClusterOptions {
  double timeout_s = 60;  // a rank that does not answer within this long is reported dead
};

class Cluster {
 public:
  // Starts MPI (once per process). Fails when built without MPI.
  static Result<std::unique_ptr<Cluster>> init(const ClusterOptions& opts);
  // True when this build has MPI support.
  static bool available();
  // Rank 0: tells the other ranks to stop (also when connect() was never reached); then ends MPI.
  virtual ~Cluster() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Ranks > 0: loads the model folder, reports its fingerprint to rank 0 and answers expert
  // requests until rank 0 stops. Returns the process exit code.
  virtual int serve_experts(const std::string& model_dir, int n_threads) = 0;
  // Rank 0: checks that every rank loaded the same model folder (same fingerprint) and returns
  // the executor for EngineOptions::expert_executor (owned by the cluster).
  virtual Result<ExpertExecutor*> connect(const std::string& model_dir) = 0;
};

}  // namespace inkling::dist
