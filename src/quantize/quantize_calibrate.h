// `inkling quantize --calibrate TEXT [--imatrix FILE]`: the source model itself (the engine, fast
// numerics) runs over windows of the calibration text while an ImportanceCollector sees every
// product's input; the statistics become an importance matrix per planned matrix (routed experts:
// over the tokens routed to each), saved for reuse with --imatrix. A reused file must match the
// plan's matrices by name and shape.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "quantize/imatrix.h"
#include "quantize/importance.h"
#include "quantize/quantize_plan.h"
#include "quantize/quantize_sources.h"

namespace inkling::quant {

struct ImatrixCalibration {
  std::string text;            // the calibration text file (UTF-8)
  int64_t window = 512;        // tokens per window (each window is a fresh sequence)
  int64_t max_tokens = 65536;  // windows stop here
  int threads = 0;
  std::function<void(int64_t windows, int64_t tokens)> progress;  // after each window
  const std::atomic<bool>* cancel = nullptr;                      // checked after each window
};

struct CalibrationRun {
  ImportanceCollector stats;
  int64_t windows = 0, tokens = 0;
  double seconds = 0;
};

// The calibration text as token ids of the model folder's tokenizer. Errors: the file missing,
// empty, not UTF-8 (naming the byte offset) or shorter than one window.
Result<std::vector<int32_t>> calibration_ids(const std::string& model_dir, const std::string& path,
                                             int64_t window);

// Errors: the text file missing, empty, not UTF-8 (naming the byte offset) or shorter than one
// window; the model failing to load (its own message).
Result<std::unique_ptr<CalibrationRun>> calibrate_importance(const std::string& model_dir,
                                                             const ImatrixCalibration& o);

// The importance matrix of the plan's matrices from a calibration run (matrices no product read,
// such as the embedding, get none).
Imatrix imatrix_for_plan(const Source& src, const Plan& plan, const CalibrationRun& run);

// A loaded importance matrix must describe this plan: every entry a planned matrix with the same
// experts and columns, and at least one planned matrix covered. One error naming the first
// mismatch otherwise (another model's file).
Status check_imatrix(const Imatrix& m, const Plan& plan, const std::string& path);

// The coverage in one line: matrices covered, tokens per routed expert (min / median / max) and
// experts that saw none.
std::string coverage_line(const Imatrix& m, const Plan& plan);

}  // namespace inkling::quant
