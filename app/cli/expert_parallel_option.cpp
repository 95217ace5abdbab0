// The expert-parallel options and start-up shared by generate, bench and serve.
#include "expert_parallel_option.h"

#include "commands.h"

namespace inkling::cli {

void add_expert_parallel_options(CLI::App& app, ExpertParallelArgs* a) {
  app.add_flag("--expert-parallel", a->on,
               "run under mpirun: the routed experts are spread over the ranks (expert e on rank "
               "e mod N); rank 0 runs everything else (docs/scale-out.md)");
  app.add_option("--ep-timeout", a->timeout_s,
                 "with --expert-parallel: seconds a rank may take to answer (and MPI's "
                 "start-up to complete) before rank 0 reports it dead and exits")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
  app.add_flag("--ep-stats", a->stats,
               "with --expert-parallel: at the end, rank 0 prints the messages, bytes and time "
               "of the exchanges per MoE layer call");
}

std::optional<int> ExpertParallel::start(const ExpertParallelArgs& a, const std::string& model_dir,
                                         int n_threads, EngineOptions* opts) {
  if (!a.on) return std::nullopt;
  auto c = dist::Cluster::init({a.timeout_s, a.stats});
  if (!c.ok()) return fail(c.status().message(), 2);
  cluster_ = std::move(c).value();
  if (cluster_->rank() != 0) return cluster_->serve_experts(model_dir, n_threads, opts->numerics);
  auto exec = cluster_->connect(model_dir, opts->numerics);
  if (!exec.ok()) return fail(exec.status().message());
  opts->expert_executor = exec.value();
  return std::nullopt;
}

}  // namespace inkling::cli
