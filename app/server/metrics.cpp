// Prometheus text rendering of the server metrics.
#include "metrics.h"

#include <fmt/format.h>

namespace inkling::server {

void Metrics::count_request(const std::string& route, int status) {
  std::lock_guard<std::mutex> lk(mu_);
  ++requests_[{route, status}];
}

void Metrics::add(std::atomic<double>& a, double v) {
  double cur = a.load();
  while (!a.compare_exchange_weak(cur, cur + v)) {
  }
}

std::string Metrics::render() const {
  std::string out;
  auto metric = [&](const char* name, const char* type, const char* help, auto value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, value);
  };
  out +=
      "# HELP inkling_requests_total HTTP requests by route and status.\n"
      "# TYPE inkling_requests_total counter\n";
  uint64_t errors = 0;
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (const auto& [key, n] : requests_) {
      out += fmt::format("inkling_requests_total{{route=\"{}\",status=\"{}\"}} {}\n", key.first,
                         key.second, n);
      if (key.second >= 400 && key.second != 499) errors += n;  // 499: the client hung up
    }
  }
  metric("inkling_request_errors_total", "counter",
         "Requests answered with status >= 400 (not 499: client gone).", errors);
  metric("inkling_requests_cancelled_total", "counter",
         "Generations stopped early (client gone or stop string).", requests_cancelled.load());
  metric("inkling_prompt_tokens_total", "counter", "Prompt tokens of admitted requests.",
         prompt_tokens.load());
  metric("inkling_prompt_tokens_cached_total", "counter",
         "Prompt tokens reused from the prefix cache.", cached_tokens.load());
  metric("inkling_completion_tokens_total", "counter", "Generated tokens.",
         completion_tokens.load());
  metric("inkling_prefill_tokens_total", "counter", "Prompt tokens run through the model.",
         prefill_tokens.load());
  metric("inkling_decode_tokens_total", "counter", "Decode steps summed over sequences.",
         decode_tokens.load());
  metric("inkling_steps_total", "counter", "Batched forward steps.", steps.load());
  metric("inkling_step_seconds_total", "counter", "Time spent in batched forward steps.",
         step_seconds.load());
  metric("inkling_prefill_tokens_per_second", "gauge", "Recent prefill throughput.",
         prefill_tps.load());
  metric("inkling_decode_tokens_per_second", "gauge", "Recent decode throughput (all slots).",
         decode_tps.load());
  metric("inkling_time_to_first_token_seconds_sum", "counter", "Sum of time to first token.",
         ttft_seconds.load());
  metric("inkling_time_to_first_token_seconds_count", "counter", "Requests with a first token.",
         ttft_count.load());
  metric("inkling_queue_depth", "gauge", "Requests waiting for a slot.", queue_depth.load());
  metric("inkling_slots_active", "gauge", "Slots running a request.", slots_active.load());
  metric("inkling_slots_total", "gauge", "Slots (--parallel).", slots_total.load());
  metric("inkling_prefix_cache_hits_total", "counter", "Requests that reused a cached prefix.",
         prefix_cache_hits.load());
  metric("inkling_prefix_cache_entries", "gauge", "Snapshots held by the prefix cache.",
         prefix_cache_entries.load());
  metric("inkling_prefix_cache_bytes", "gauge", "Bytes held by the prefix cache.",
         prefix_cache_bytes.load());
  metric("inkling_speculative_rounds_total", "counter",
         "Speculative rounds (one verify pass each, --draft).", spec_rounds.load());
  metric("inkling_speculative_tokens_total", "counter",
         "Tokens produced by speculative rounds (tokens per round = this / rounds).",
         spec_tokens.load());
  const uint64_t rounds = spec_rounds.load();
  metric("inkling_speculative_tokens_per_round", "gauge", "Tokens per speculative round so far.",
         rounds ? double(spec_tokens.load()) / double(rounds) : 0.0);
  out +=
      "# HELP inkling_speculative_drafted_total Drafts proposed at each draft position.\n"
      "# TYPE inkling_speculative_drafted_total counter\n";
  std::string accepted =
      "# HELP inkling_speculative_accepted_total Drafts accepted at each draft position.\n"
      "# TYPE inkling_speculative_accepted_total counter\n";
  std::string rate =
      "# HELP inkling_speculative_acceptance Accepted / proposed at each draft position.\n"
      "# TYPE inkling_speculative_acceptance gauge\n";
  for (size_t i = 0; i < kMaxDraftPositions; ++i) {
    const uint64_t d = spec_drafted[i].load(), a = spec_accepted[i].load();
    if (d == 0) continue;
    out += fmt::format("inkling_speculative_drafted_total{{position=\"{}\"}} {}\n", i, d);
    accepted += fmt::format("inkling_speculative_accepted_total{{position=\"{}\"}} {}\n", i, a);
    rate += fmt::format("inkling_speculative_acceptance{{position=\"{}\"}} {}\n", i,
                        double(a) / double(d));
  }
  out += accepted + rate;
  return out;
}

}  // namespace inkling::server
