// Progress of `inkling quantize` on stderr: a redrawn bar when stderr is a terminal, plain lines
// every few seconds otherwise (logs, pipes, tests), with bytes and tensors done, rate and ETA.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>

namespace inkling::cli {

class Progress {
 public:
  // total_bytes / total_tensors: the work of this run (shards already written excluded).
  Progress(uint64_t total_bytes, int64_t total_tensors, bool quiet);
  // Called from the writing thread only: bytes and tensors done so far.
  void set(uint64_t bytes, int64_t tensors);
  void finish();

 private:
  void draw(bool final);
  using Clock = std::chrono::steady_clock;
  uint64_t total_bytes_, done_bytes_ = 0;
  int64_t total_tensors_, done_tensors_ = 0;
  bool quiet_, tty_;
  Clock::time_point start_, last_draw_;
  std::FILE* out_ = stderr;
};

}  // namespace inkling::cli
