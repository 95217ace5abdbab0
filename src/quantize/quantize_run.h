// Writing a quantized folder: the plan's tensors in shards of bounded size, each streamed chunk
// by chunk (rows quantized by a thread pool, written in place, source pages released), into
// DST.partial; config.json is written last and the folder renamed to DST at the very end, so an
// interrupted run never leaves a folder that loads. Re-running the same command resumes from the
// shards already finished.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "base/dtype.h"
#include "inkling/status.h"
#include "quantize/imatrix.h"
#include "quantize/quantize_plan.h"
#include "quantize/quantize_sources.h"

namespace inkling::quant {

// Bytes and tensors written so far of this run's total (shards already written excluded).
struct RunProgress {
  uint64_t bytes = 0, total_bytes = 0;
  int64_t tensors = 0, total_tensors = 0;
};

struct RunOptions {
  std::string dst;
  bool force = false;  // replace DST (and a stale DST.partial)
  int threads = 0;     // 0: every hardware thread
  uint64_t max_shard_bytes = 5'000'000'000;
  // Called on the writing thread: first with nothing done, then after each chunk.
  std::function<void(const RunProgress&)> progress;
  // One line for the user: resuming an interrupted run, or where an interrupted one stopped.
  std::function<void(const std::string&)> notice;
  const std::atomic<bool>* cancel = nullptr;  // set (from any thread): stop between chunks
  bool keep_mtp = true;        // copy the MTP tensors the plan does not write, as stored
  std::optional<DType> dtype;  // floats, scales and biases of matrices (default: the source's)
  // Weighted scale search for every quantized matrix (attach_importance), weighed by `imatrix`
  // where it covers the matrix; false: mx.quantize's own rule, bit for bit.
  bool search = false;
  const Imatrix* imatrix = nullptr;
  std::string imatrix_id;  // enters the resume signature (the file's name and size)
};

enum class RunOutcome : uint8_t { kDone, kInterrupted };

// Binds every planned module to its source (setting the plan's dtypes), then writes. Errors are
// runtime errors; the cancel flag stops it between chunks (kInterrupted, DST.partial resumable).
Result<RunOutcome> run_quantize(const Source& src, Plan& plan, const RunOptions& o);

// DST.partial for DST (trailing slashes dropped).
std::string partial_dir(const std::string& dst);

}  // namespace inkling::quant
