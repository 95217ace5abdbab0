// Expert parallelism over MPI (docs/scale-out.md). Every rank runs the same `inkling` command
// under mpirun; rank 0 runs the program (generate, bench, serve) with an ExpertExecutor that
// sends each MoE layer's rows to the ranks owning the chosen experts, and the other ranks only
// answer those requests. Built without MPI (INKLING_MPI=OFF), init() says so.
#pragma once

#include <memory>
#include <string>

#include "inkling/numerics.h"
#include "inkling/status.h"
#include "model/expert_executor.h"

namespace inkling::dist {

struct ClusterOptions {
  double timeout_s = 60;  // a rank that does not answer within this long is reported dead
  bool stats = false;     // rank 0 prints what the exchanges cost when it ends
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
  // Ranks > 0: loads the model folder with its kernels bound for `numerics` (the mode rank 0's
  // engine runs: an expert's output must not depend on the rank that owns it), reports its
  // fingerprint and mode to rank 0 and answers expert requests until rank 0 stops. Returns the
  // process exit code.
  virtual int serve_experts(const std::string& model_dir, int n_threads, Numerics numerics) = 0;
  // Rank 0: checks that every rank loaded the same model folder (same fingerprint) in the same
  // numerics mode and returns the executor for EngineOptions::expert_executor (owned by the
  // cluster).
  virtual Result<ExpertExecutor*> connect(const std::string& model_dir, Numerics numerics) = 0;
  // Rank 0 after connect(): median seconds of one MoE layer's exchange of T rows (hidden H, k of E
  // experts each, random routing) that the other ranks answer at once, nothing computed: what
  // the transport adds per MoE layer.
  virtual Result<double> time_exchange(int64_t T, int64_t H, int E, int k, int iters) = 0;
};

}  // namespace inkling::dist
