// Terminal-aware output for the CLI: whether a stream is a terminal, a load indicator and a
// prefill progress bar on stderr (drawn only on a terminal, nothing elsewhere), peak memory, and
// the llama.cpp-like timing summary of `generate` and `chat`.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

namespace inkling::cli {

bool is_tty(int fd);

// "label... 1.2 s" redrawn on stderr ten times a second while alive, when stderr is a terminal
// and the work takes longer than a quarter second; erased when done. Nothing on a non-terminal.
class BusyIndicator {
 public:
  explicit BusyIndicator(std::string label);
  ~BusyIndicator();
  void done();  // stops and erases the line (also done by the destructor)

 private:
  std::string label_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A bar on stderr for work counted in units (prompt tokens): "[#####-----] 512/1500 tokens
// 180 tok/s ETA 0:05", drawn at most ten times a second and only when stderr is a terminal and
// the work has run for half a second; erased by finish().
class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total, std::string unit);
  void update(int64_t done);
  void finish();
  ~ProgressBar() { finish(); }

 private:
  using Clock = std::chrono::steady_clock;
  std::string label_, unit_;
  int64_t total_;
  bool tty_, drawn_ = false, finished_ = false;
  Clock::time_point start_, last_;
};

// The most resident memory this process has used, in bytes (getrusage).
uint64_t peak_rss_bytes();

// Times of one run (generate) or of a chat's turns added up.
struct Timings {
  double load_ms = 0;
  int64_t prompt_tokens = 0;  // tokens prefilled (a chat turn's new tokens only)
  double prompt_ms = 0;
  int64_t gen_tokens = 0;  // tokens generated
  double gen_ms = 0;
  double total_ms = 0;
  uint64_t seed = 0;

  // The summary, llama.cpp style: one "name = value" line each, prefixed by `prefix`.
  std::string text(const std::string& prefix) const;
  // {"load_ms", "prompt_tokens", "prompt_ms", "prompt_tok_s", "gen_tokens", "gen_ms",
  //  "gen_tok_s", "total_ms", "peak_rss_bytes", "seed"}
  nlohmann::json json() const;
};

double ms_since(std::chrono::steady_clock::time_point t0);

}  // namespace inkling::cli
