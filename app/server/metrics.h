// Server counters and gauges, updated lock-free by HTTP threads and the scheduler, rendered as
// Prometheus text exposition (GET /metrics).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace inkling::server {

class Metrics {
 public:
  // HTTP side.
  void count_request(const std::string& route, int status);
  std::atomic<uint64_t> prompt_tokens{0}, completion_tokens{0}, cached_tokens{0};
  std::atomic<uint64_t> ttft_count{0};
  std::atomic<double> ttft_seconds{0};

  // Scheduler side.
  std::atomic<uint64_t> prefill_tokens{0}, decode_tokens{0}, steps{0};
  std::atomic<double> step_seconds{0};
  std::atomic<double> prefill_tps{0}, decode_tps{0};  // exponential moving averages
  std::atomic<int64_t> queue_depth{0}, slots_active{0}, slots_total{0};
  std::atomic<uint64_t> prefix_cache_hits{0}, prefix_cache_entries{0}, prefix_cache_bytes{0};
  std::atomic<uint64_t> requests_cancelled{0};
  // Speculative decoding (--draft): rounds, tokens they produced, drafts proposed and accepted
  // per draft position (the first kMaxDraftPositions positions).
  static constexpr size_t kMaxDraftPositions = 16;
  std::atomic<uint64_t> spec_rounds{0}, spec_tokens{0};
  std::array<std::atomic<uint64_t>, kMaxDraftPositions> spec_drafted{}, spec_accepted{};

  static void add(std::atomic<double>& a, double v);
  std::string render() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;  // (route, status) -> count
};

}  // namespace inkling::server
